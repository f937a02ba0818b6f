"""The python examples of README.md and of every page of the documentation (docs/**/*.md and
.rst) run as written: each page's blocks (fenced as python, or ``.. code-block:: python``), in
order, in one namespace, in a fresh process with a non-interactive matplotlib backend, in an
empty working directory of its own, with every warning an error (an example that warns, say of
a time step above the critical one, teaches the wrong thing)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from package_path import python_path
from readme_blocks import Block, python_blocks

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RUNNER = Path(__file__).resolve().parent / "readme_blocks.py"
# What a build writes or copies into docs/ (the generated API pages, the gallery, the notebooks).
_BUILT = ("_build", "auto_examples", "jupyter_execute", "api/generated", "_templates", "sg_execution_times")


def _pages() -> list[Path]:
    pages = [README]
    for path in sorted(DOCS.rglob("*")):
        relative = path.relative_to(DOCS).as_posix()
        if path.suffix in (".md", ".rst") and not any(relative.startswith(part) for part in _BUILT):
            pages.append(path)
    return pages


PAGES = _pages()
_NAMES = [page.relative_to(ROOT).as_posix() for page in PAGES]


def _blocks(page: Path) -> list[Block]:
    return python_blocks(page.read_text(encoding="utf-8"), page.suffix)


_RUNS: dict[Path, tuple[Path, dict, str]] = {}


@pytest.fixture(scope="module")
def run_page(tmp_path_factory: pytest.TempPathFactory):
    """Runs a page's python blocks once: its working directory, the runner's report and what
    the blocks printed."""
    def run(page: Path) -> tuple[Path, dict, str]:
        if page not in _RUNS:
            folder = tmp_path_factory.mktemp(page.stem)
            environment = dict(os.environ, PYTHONPATH=python_path(), MPLBACKEND="Agg")
            result = subprocess.run(
                [sys.executable, "-W", "error", str(RUNNER), str(page), "report.json", "figures"], cwd=folder,
                env=environment, capture_output=True, text=True, timeout=600, check=False)
            assert result.returncode == 0, f"an example of {page.name} failed:\n{result.stderr[-4000:]}"
            report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
            _RUNS[page] = (folder, report, result.stdout)
        return _RUNS[page]

    return run


def test_the_pages_are_found() -> None:
    names = set(_NAMES)
    for name in ("README.md", "docs/getting_started.md", "docs/guide/meshes.md", "docs/guide/recording.md",
                 "docs/guide/live.md", "docs/guide/gradients.md", "docs/api/index.rst"):
        assert name in names, name
    # The README keeps one example; the guide holds the rest.
    assert len(_blocks(README)) == 1
    assert sum(len(_blocks(page)) for page in PAGES) >= 20


@pytest.mark.parametrize("page", PAGES, ids=_NAMES)
def test_every_python_block_is_python(page: Path) -> None:
    # Signature listings (keyword-only markers, placeholders) belong in another fence.
    for block in _blocks(page):
        compile("\n" * (block.line - 1) + block.code, str(page), "exec")


@pytest.mark.parametrize("page", [page for page in PAGES if _blocks(page)],
                         ids=[name for page, name in zip(PAGES, _NAMES) if _blocks(page)])
def test_the_python_blocks_run_in_order(page: Path, run_page) -> None:
    _, report, _ = run_page(page)
    assert [run["line"] for run in report["blocks"]] == [block.line for block in _blocks(page)]


def test_the_first_system_prints_time_and_energy(run_page) -> None:
    # The README's example: 2 s of a damped pendulum, its time and energy printed.
    _, _, printed = run_page(README)
    numbers = [float(value) for value in re.findall(r"[-+0-9.e]+", printed.splitlines()[0].replace("[", " "))]
    assert numbers[0] == pytest.approx(2.0, abs=1e-9)       # s
    # the bob swings on a stiff spring about 1 m long (k = 500 N/m stretches it by about 2 %)
    assert 0.98 < float(np.linalg.norm(numbers[1:4])) < 1.06
    assert "Energy(kinetic=" in printed


@pytest.mark.parametrize("page, names", [
    (DOCS / "guide" / "meshes.md", ("ball.obj", "out/frame.pvd", "run.xdmf", "frames/frame_0000.obj")),
    (DOCS / "guide" / "recording.md", ("run.npz", "run.gif", "run.html")),
], ids=["meshes", "recording"])
def test_the_files_the_examples_write(page: Path, names: tuple[str, ...], run_page) -> None:
    folder, _, _ = run_page(page)
    for name in names:
        assert (folder / name).is_file(), name


def test_the_printed_repair_report_is_the_one_the_page_shows(run_page) -> None:
    page = DOCS / "guide" / "meshes.md"
    _, _, printed = run_page(page)
    shown = re.search(r"print\(shape\.repair_report\)\s+# (.*?), \.\.\.; (.*)", page.read_text(encoding="utf-8"))
    assert shown is not None
    assert shown.group(1) in printed and shown.group(2) in printed


def _shown(report: dict) -> dict[int, list[str]]:
    shown: dict[int, list[str]] = {}
    for value in report["values"]:
        shown.setdefault(value["line"], []).append(value["type"])
    return shown


def _code_lines(page: Path) -> list[tuple[int, str]]:
    return [(block.line + offset, line) for block in _blocks(page) for offset, line in enumerate(block.code.splitlines())]


def test_widget_and_view_blocks_return_their_objects_in_a_plain_process(run_page) -> None:
    # In a notebook these display; in a script they are values: a live-controls widget and
    # plotly figures.
    live = DOCS / "guide" / "live.md"
    shown = _shown(run_page(live)[1])
    interact = [number for number, line in _code_lines(live) if line.lstrip().startswith("msprings.interact(")]
    assert len(interact) == 1
    assert "msprings.plot.widgets.LiveControls" in shown[interact[0]]
    recording = DOCS / "guide" / "recording.md"
    shown = _shown(run_page(recording)[1])
    views = [number for number, line in _code_lines(recording) if "plot.view(" in line]
    assert len(views) == 3
    for number in views:
        assert any(kind.startswith("plotly.") and kind.endswith(".Figure") for kind in shown[number])


def test_the_pictures_are_drawn(run_page) -> None:
    # draw (strain), draw (tension), the energy ledger and compare_integrators; each saved
    # picture has something on it, and the GIF moves.
    folder, report, _ = run_page(DOCS / "guide" / "recording.md")
    assert sum(run["figures"] for run in report["blocks"]) >= 4
    pictures = sorted((folder / "figures").glob("*.png"))
    assert len(pictures) >= 4
    for path in pictures:
        pixels = np.asarray(Image.open(path).convert("RGB"))
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, path.name
    with Image.open(folder / "run.gif") as gif:
        assert gif.n_frames > 10
        first = np.asarray(gif.convert("RGB"))
        gif.seek(gif.n_frames - 1)
        last = np.asarray(gif.convert("RGB"))
    assert np.mean(first != last) > 0.01


def test_the_rst_blocks_are_found() -> None:
    # reStructuredText pages give their code-block directives, dedented, at their lines.
    text = "Intro\n\n.. code-block:: python\n   :caption: x\n\n   import math\n   y = math.pi\n\n   z = 2\n\nText\n"
    assert python_blocks(text, ".rst") == [Block(6, "import math\ny = math.pi\n\nz = 2\n")]
    assert python_blocks("```python\nx = 1\n```\n", ".md") == [Block(2, "x = 1\n")]
