"""The tutorial notebooks are valid nbformat-4 documents, and they run top to bottom in a
real Jupyter kernel.

Every notebook asserts its own physical claims (closed forms, wave speeds, bounce heights, ...)
in plain ``assert`` statements, so executing it is a test of msprings.  Each one is executed
by nbclient in a fresh ``python3`` kernel (ipykernel) whose working directory is a temporary
directory and whose ``PYTHONPATH`` starts with the tested package (package_path.py), exactly as a student runs it:
figures go through the inline backend and widgets are displayed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from package_path import python_path  # noqa: E402

NOTEBOOK_DIRECTORY = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = (
    "01_single_spring.ipynb",
    "02_integrators_and_stability.ipynb",
    "03_strings_and_chains.ipynb",
    "04_cloth_and_flag.ipynb",
    "05_jelly_collisions_tablecloth.ipynb",
    "06_mesh_to_springs.ipynb",
    "07_real_mesh.ipynb",
    "08_many_runs.ipynb",
    "09_gradients.ipynb",
)
NOTEBOOKS = sorted(path.name for path in NOTEBOOK_DIRECTORY.glob("*.ipynb"))
CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def load(name: str) -> dict[str, Any]:
    """The notebook's JSON document."""
    with open(NOTEBOOK_DIRECTORY / name, encoding="utf-8") as stream:
        return json.load(stream)


def source_text(cell: dict[str, Any]) -> str:
    """A cell's source, which nbformat stores as one string or a list of lines."""
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def check_nbformat4(document: dict[str, Any]) -> None:
    """Raises AssertionError unless ``document`` has the structure nbformat 4 requires."""
    assert isinstance(document, dict)
    assert document.get("nbformat") == 4
    minor = document.get("nbformat_minor")
    assert isinstance(minor, int) and minor >= 0
    assert isinstance(document.get("metadata"), dict)
    cells = document.get("cells")
    assert isinstance(cells, list) and cells
    seen_ids = set()
    for index, cell in enumerate(cells):
        where = f"cell {index}"
        assert isinstance(cell, dict), where
        assert cell.get("cell_type") in ("markdown", "code", "raw"), where
        assert isinstance(cell.get("metadata"), dict), where
        source = cell.get("source")
        assert isinstance(source, str) or (
            isinstance(source, list) and all(isinstance(line, str) for line in source)), where
        if minor >= 5:
            assert isinstance(cell.get("id"), str) and CELL_ID.match(cell["id"]), where
            assert cell["id"] not in seen_ids, f"{where}: duplicate id {cell['id']}"
            seen_ids.add(cell["id"])
        if cell["cell_type"] == "code":
            assert isinstance(cell.get("outputs"), list), where
            assert cell.get("execution_count") is None or isinstance(cell["execution_count"], int), where
        else:
            assert "outputs" not in cell and "execution_count" not in cell, where


def test_every_tutorial_is_present() -> None:
    assert set(EXPECTED) <= set(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_valid_nbformat4_without_outputs(name: str) -> None:
    document = load(name)
    check_nbformat4(document)
    code_cells = [cell for cell in document["cells"] if cell["cell_type"] == "code"]
    markdown_cells = [cell for cell in document["cells"] if cell["cell_type"] == "markdown"]
    assert code_cells and markdown_cells
    # Stored clean: no outputs and no execution counts.
    assert all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code_cells)
    # A tutorial opens with a title and asserts what it claims.
    assert source_text(document["cells"][0]).startswith("# ")
    assert any(re.search(r"^\s*assert ", source_text(cell), re.MULTILINE) for cell in code_cells)
    # Plain Python: no IPython magics or shell escapes, so the code runs outside Jupyter too.
    for cell in code_cells:
        for line in source_text(cell).splitlines():
            assert not line.lstrip().startswith(("%", "!")), line


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def outputs_of(notebook: Any, kind: str) -> list[Any]:
    """Every output of the executed code cells whose MIME bundle has ``kind``, or stream
    outputs named ``kind`` ("stdout", "stderr")."""
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("name") == kind or kind in output.get("data", {}):
                found.append(output)
    return found


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_top_to_bottom(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel imports the msprings the tests import, wherever it is started.
    monkeypatch.setenv("PYTHONPATH", python_path())
    monkeypatch.delenv("MPLBACKEND", raising=False)
    notebook = nbformat.read(NOTEBOOK_DIRECTORY / name, as_version=4)
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=600, startup_timeout=120,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, if an assert fails
    # Every figure was shown as a picture, and nothing was written to stderr (no warning, no
    # progress bar left behind).
    assert outputs_of(notebook, "image/png"), "the tutorial shows its figures"
    assert outputs_of(notebook, "stderr") == []
    uses_widgets = any("msprings.interact(" in source_text(cell) for cell in notebook.cells)
    assert bool(outputs_of(notebook, WIDGET_MIME)) == uses_widgets
    # Nothing is left behind in the working directory.
    assert list(tmp_path.iterdir()) == []
