"""The built documentation site can be browsed: its pages exist, every public name has its API
page with units and raised exceptions, the gallery and notebooks carry the pictures their runs
drew, every link between pages resolves, and headless Chromium shows the pages and finds names
with the search box.

The site is built by ``make -C docs html`` (the ``docs`` extra), which .ci/run does before it
runs this file.  These tests read ``docs/_build/html`` (or the folder named by
``MSPRINGS_DOCS_HTML``); without a built site they are skipped, except when
``MSPRINGS_DOCS_REQUIRED`` is set, where they fail.
"""
from __future__ import annotations

import html
import importlib
import os
import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ.get("MSPRINGS_DOCS_HTML", ROOT / "docs" / "_build" / "html"))
API_MODULES = ("msprings", "msprings.scenes", "msprings.mesh", "msprings.colliders", "msprings.stability",
               "msprings.trajectory", "msprings.io", "msprings.plot", "msprings.plot.view3d",
               "msprings.plot.widgets")
GUIDE = ("model", "integrators", "ledger", "scenes", "contacts", "meshes", "recording", "live", "many_runs",
         "gradients", "layout")


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        if os.environ.get("MSPRINGS_DOCS_REQUIRED"):
            pytest.fail(f"no built documentation in {SITE}: run make -C docs html")
        pytest.skip(f"no built documentation in {SITE} (make -C docs html builds it)")
    return SITE


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _visible(page: str) -> str:
    """A page's text without tags, scripts or styles, entities decoded, spaces collapsed."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.DOTALL)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_the_pages_exist(site: Path) -> None:
    pages = ["index.html", "getting_started.html", "guide/index.html", "api/index.html", "auto_examples/index.html",
             "tutorials/index.html", "benchmarks/index.html", "benchmarks/suites.html", "search.html", "genindex.html"]
    pages += [f"guide/{name}.html" for name in GUIDE]
    pages += [f"tutorials/{path.stem}.html" for path in sorted((ROOT / "notebooks").glob("*.ipynb"))]
    pages += [f"auto_examples/{path.stem}.html" for path in sorted((ROOT / "examples").glob("*.py"))]
    for page in pages:
        assert (site / page).is_file(), page
    assert "Getting started" in _visible(_text(site / "getting_started.html"))


def test_every_public_name_has_its_api_page(site: Path) -> None:
    listed = _text(site / "api" / "index.html")
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if name.startswith("__"):
                continue
            page = site / "api" / "generated" / f"{module_name}.{name}.html"
            assert page.is_file(), page.name
            assert f"{module_name}.{name}.html" in listed, name


def test_the_system_page_documents_the_c_attributes_with_units_shapes_and_errors(site: Path) -> None:
    page = _text(site / "api" / "generated" / "msprings.System.html")
    text = _visible(page)
    # The C type's views and options, and the Python methods, each with an anchor.
    for name in ("x", "v", "f", "external", "mass", "pinned", "springs", "rest", "k", "c", "t", "steps",
                 "integrator", "gravity", "drag", "threads", "step", "run", "energy", "ledger", "critical_dt",
                 "add_plane", "lengths", "tension", "reset"):
        assert f'id="msprings.System.{name}"' in page, name
    assert "Positions (m), (n, 3) float64 view of C memory" in text
    assert "Raises" in text and "DivergenceError" in text and "ValueError" in text
    convert = _visible(_text(site / "api" / "generated" / "msprings.mesh.from_mesh.html"))
    assert "Parameters" in convert and "(kg/m^3)" in convert and "Raises" in convert


def test_the_gallery_and_the_notebooks_carry_their_pictures(site: Path) -> None:
    for script in sorted((ROOT / "examples").glob("*.py")):
        pictures = sorted((site / "_images").glob(f"sphx_glr_{script.stem}_*.png"))
        pictures = [path for path in pictures if "_thumb" not in path.name]
        assert pictures, script.name
        pixels = np.asarray(Image.open(pictures[0]).convert("RGB"))
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, pictures[0].name
    # Every notebook was executed while building: its pages hold cell outputs, and the ones
    # that plot hold their figures.
    drawn = 0
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = _text(site / "tutorials" / f"{notebook.stem}.html")
        assert "cell_output" in page, notebook.name
        drawn += bool(re.search(r'<img[^>]+src="\.\./_images/[^"]+\.png"', page))
    assert drawn >= 6


def test_every_link_between_pages_resolves(site: Path) -> None:
    broken, checked = [], 0
    for page in sorted(site.rglob("*.html")):
        if page.relative_to(site).parts[0] == "_static":  # the theme's templates
            continue
        for target in re.findall(r'(?:href|src)="([^"#?]+)(?:[#?][^"]*)?"', _text(page)):
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "javascript:", "data:")):
                continue
            checked += 1
            if not (page.parent / unquote(parts.path)).exists():
                broken.append(f"{page.relative_to(site)} -> {target}")
    assert checked > 1000 and not broken, broken[:20]


def test_the_pages_in_a_browser_and_the_search_box(site: Path, tmp_path: Path) -> None:
    lab_browser = pytest.importorskip("lab_browser")
    if not (lab_browser.CHROMIUM.exists() and lab_browser.CHROMEDRIVER.exists()):
        if os.environ.get("CI"):
            pytest.fail("the documentation's browser test needs Debian's chromium and chromium-driver")
        pytest.skip("needs Debian's chromium and chromium-driver")
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By

    driver = lab_browser._driver(1280, 900)
    try:
        pages = {"index.html": "msprings", "guide/integrators.html": "Integrators and stability",
                 "api/generated/msprings.System.html": "msprings.System", "auto_examples/index.html": "Gallery"}
        for page, title in pages.items():
            driver.get((site / page).as_uri())
            lab_browser.wait(lambda: driver.execute_script("return document.readyState") == "complete", 20,
                             f"{page} to load")
            assert driver.title.startswith(title), (page, driver.title)
            # The theme's navigation bar and the page's heading are laid out and visible.
            links = [link.text for link in driver.find_elements(By.CSS_SELECTOR, "ul.navbar-nav a.nav-link")]
            assert {"Getting started", "User guide", "API reference"} <= set(links), links
            heading = driver.find_element(By.CSS_SELECTOR, "article h1")
            assert heading.is_displayed() and heading.size["height"] > 20
            shot = tmp_path / (page.replace("/", "_") + ".png")
            driver.save_screenshot(str(shot))
            pixels = np.asarray(Image.open(shot).convert("RGB"))
            assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 100, page
        # The search box's index finds a method of the C-backed System.
        driver.get((site / "search.html").as_uri() + "?q=critical_dt")
        deadline = time.monotonic() + 30
        found: list[str] = []
        while time.monotonic() < deadline and not found:
            found = [link.get_attribute("href") for link in
                     driver.find_elements(By.CSS_SELECTOR, "#search-results a")]
            time.sleep(0.2)
        assert any("msprings.System.html" in href for href in found), found
    finally:
        driver.quit()
