"""The tutorial notebooks are valid nbformat-4 documents, and their code runs top to bottom.

Every notebook asserts its own physical claims (closed forms, wave speeds, bounce heights, ...)
in plain ``assert`` statements, so executing its code is a test of msprings.  The code cells
are joined and run with ``exec`` in a fresh namespace, with matplotlib's non-interactive Agg
backend, in a temporary working directory; Jupyter itself is not needed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

NOTEBOOK_DIRECTORY = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = (
    "01_single_spring.ipynb",
    "02_integrators_and_stability.ipynb",
    "03_strings_and_chains.ipynb",
    "04_cloth_and_flag.ipynb",
    "05_jelly_collisions_tablecloth.ipynb",
    "06_mesh_to_springs.ipynb",
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


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_top_to_bottom(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    document = load(name)
    code = "\n\n".join(source_text(cell) for cell in document["cells"] if cell["cell_type"] == "code")
    monkeypatch.chdir(tmp_path)
    plt.close("all")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        exec(compile(code, str(NOTEBOOK_DIRECTORY / name), "exec"), namespace)
        # Every figure is closed once shown, so a long notebook does not pile up memory.
        assert plt.get_fignums() == []
    finally:
        plt.close("all")
    # Nothing is left behind in the working directory.
    assert list(tmp_path.iterdir()) == []
