"""Sphinx configuration of msprings' documentation.

Build with ``make -C docs html`` (warnings are errors) or
``python -m sphinx -W --keep-going -b html docs docs/_build/html``.  Needs the ``docs`` extra.
The gallery scripts in ``examples/`` and the notebooks in ``notebooks/`` are run while building.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the gallery draws off screen in this process
# The notebooks' kernels inherit this environment: without MPLBACKEND (a CI or test setting of
# Agg would make plt.show() draw nothing) they use Jupyter's inline backend, so their figures are
# on the pages.
os.environ.pop("MPLBACKEND", None)

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import msprings  # noqa: E402  (after the path: the checkout's build)

# The notebooks live in notebooks/ (the test suite runs them there); Sphinx reads sources from
# docs/ only, so they are copied beside the pages at every build (docs/tutorials/ is not kept in git).
TUTORIALS = DOCS / "tutorials"
TUTORIALS.mkdir(exist_ok=True)
for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    target = TUTORIALS / notebook.name
    if not target.exists() or target.read_bytes() != notebook.read_bytes():
        shutil.copyfile(notebook, target)

project = "msprings"
author = "the msprings authors"
copyright = "2026, the msprings authors"
release = msprings.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "sphinx_gallery.gen_gallery",
    "sphinx_design",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.json"]
templates_path = ["_templates"]
highlight_language = "none"  # docstrings' literal blocks are formulas and tables, not Python

# API reference: one page per public name, members of classes listed on the class's page.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "member-order": "groupwise"}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types and units
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# MyST: headings get anchors for [text](#anchor) links; $...$ maths in the pages.
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath", "colon_fence"]

# Notebooks are executed at every build (never shown with stored outputs), each in its own kernel.
nb_execution_mode = "force"
nb_execution_timeout = 900  # s per notebook: notebook 7 fills and drops two solids (10-150 s here)
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": str(DOCS / "auto_examples"),
    "filename_pattern": r"\.py$",  # every script runs: each one's picture is made by running it
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
}

intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

html_theme = "pydata_sphinx_theme"
html_title = "msprings"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "header_links_before_dropdown": 7,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
html_copy_source = False

suppress_warnings = [
    "mystnb.unknown_mime_type",  # widget views (anywidget) in the notebooks: shown as their text form
]
nitpicky = False


_C_MEMBERS = (type(msprings._core.System.x), type(msprings._core.System.lengths), type(len))


def _escape_bars_in_c_docstrings(app, what, name, obj, options, lines) -> None:
    """The C extension's docstrings are plain text, in which |x| means a norm; reST would read
    it as a substitution, so their bars are escaped (the Python docstrings are reST already)."""
    if isinstance(obj, _C_MEMBERS):
        lines[:] = [line.replace("|", "\\|") for line in lines]


def setup(app) -> None:
    app.connect("autodoc-process-docstring", _escape_bars_in_c_docstrings)
