"""The gallery (examples/plot_*.py): every example runs as written with matplotlib's Agg
backend, draws at least one figure, and ends with its own check of a physical fact (an
``assert`` the reader sees, run here)."""
import ast
import importlib.util
import runpy
import warnings
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))

# Modules beyond the plot extra that an example needs (the example names its extra).
NEEDS = {
    "plot_gradient_fit.py": ["scipy"],
    "plot_sweep.py": ["dask", "distributed", "xarray", "pandas"],
}


def test_the_gallery_has_its_examples():
    assert 15 <= len(SCRIPTS) <= 25, [script.name for script in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_example_is_a_gallery_script_with_a_check(script):
    """A module docstring with an RST title and a paragraph, ``# %%`` cells, and at least
    one assert of its own, not inside a function that might not run."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    docstring = ast.get_docstring(tree, clean=False)
    assert docstring, "no module docstring"
    lines = docstring.strip().splitlines()
    assert len(lines) >= 4 and set(lines[1]) == {"="} and len(lines[1]) >= len(lines[0]), "no RST title"
    assert "# %%" in script.read_text(encoding="utf-8")
    assert any(isinstance(node, ast.Assert) for node in tree.body), "no top-level assert"


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_example_runs_and_draws(script, monkeypatch, tmp_path):
    for module in NEEDS.get(script.name, []):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{script.name} needs {module}")
    monkeypatch.chdir(tmp_path)  # anything an example writes lands here
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    plt.close("all")
    try:
        with warnings.catch_warnings():
            # An example that means to step past a limit says so itself; everything else is an error.
            warnings.simplefilter("error")
            runpy.run_path(str(script), run_name="__main__")
        figures = [plt.figure(number) for number in plt.get_fignums()]
        assert figures, f"{script.name} drew no figure"
        for figure in figures:
            assert any(ax.has_data() for ax in figure.axes), f"{script.name} drew an empty figure"
            figure.canvas.draw()  # the figure renders (no overflow, no bad limits)
    finally:
        plt.close("all")
