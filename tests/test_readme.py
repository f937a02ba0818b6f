"""README.md's python examples run as written: every block fenced as python, in order, in one
namespace, in a fresh process with a non-interactive matplotlib backend, in an empty working
directory, with every warning an error (a README example that warns, say of a time step above
the critical one, teaches the wrong thing)."""
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
from readme_blocks import python_blocks

README = Path(__file__).resolve().parent.parent / "README.md"
RUNNER = Path(__file__).resolve().parent / "readme_blocks.py"


@pytest.fixture(scope="module")
def readme_text() -> str:
    return README.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """Runs the README's python blocks once: the working directory, the runner's report and
    what the blocks printed."""
    folder = tmp_path_factory.mktemp("readme")
    environment = dict(os.environ, PYTHONPATH=python_path(), MPLBACKEND="Agg")
    result = subprocess.run(
        [sys.executable, "-W", "error", str(RUNNER), str(README), "report.json", "figures"], cwd=folder,
        env=environment, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"a README example failed:\n{result.stderr[-4000:]}"
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return folder, report, result.stdout


def test_every_python_block_is_python(readme_text: str) -> None:
    # Signature listings (keyword-only markers, placeholders) belong in another fence.
    blocks = python_blocks(readme_text)
    assert len(blocks) >= 10
    for block in blocks:
        compile("\n" * (block.line - 1) + block.code, str(README), "exec")


def test_the_python_blocks_run_in_order(readme_run: tuple[Path, dict, str], readme_text: str) -> None:
    folder, report, _ = readme_run
    assert [run["line"] for run in report["blocks"]] == [block.line for block in python_blocks(readme_text)]
    # What the examples write, in the working directory.
    for name in ("ball.obj", "out/frame.pvd", "run.xdmf", "frames/frame_0000.obj", "run.npz", "run.gif", "run.html"):
        assert (folder / name).is_file(), name


def test_the_printed_repair_report_is_the_one_the_readme_shows(readme_run: tuple[Path, dict, str],
                                                                readme_text: str) -> None:
    _, _, printed = readme_run
    shown = re.search(r"print\(shape\.repair_report\)\s+# (.*?), \.\.\.; (.*)", readme_text)
    assert shown is not None
    assert shown.group(1) in printed and shown.group(2) in printed


def test_widget_and_view_blocks_return_their_objects_in_a_plain_process(
        readme_run: tuple[Path, dict, str], readme_text: str) -> None:
    # In a notebook these display; in a script they are values: a live-controls widget and
    # plotly figures.
    _, report, _ = readme_run
    shown: dict[int, list[str]] = {}
    for value in report["values"]:
        shown.setdefault(value["line"], []).append(value["type"])
    code = [(block.line + offset, line) for block in python_blocks(readme_text)
            for offset, line in enumerate(block.code.splitlines())]
    # The block that shows the controls (an expression); another assigns them to a name.
    interact = [number for number, line in code if line.lstrip().startswith("msprings.interact(")]
    views = [number for number, line in code if "plot.view(" in line]
    assert len(interact) == 1 and len(views) == 3
    assert "msprings.plot.widgets.LiveControls" in shown[interact[0]]
    for number in views:
        assert any(kind.startswith("plotly.") and kind.endswith(".Figure") for kind in shown[number])


def test_the_pictures_are_drawn(readme_run: tuple[Path, dict, str]) -> None:
    # draw (strain), draw (tension), the energy ledger and compare_integrators; each saved
    # picture has something on it, and the GIF moves.
    folder, report, _ = readme_run
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
