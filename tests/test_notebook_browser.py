"""The live controls in a real browser: a notebook served by Voila, rendered by headless
Chromium and driven with selenium.

The page must show the model (not a blank canvas), and pressing Play must change the
picture: that needs the whole chain to work (the ES module loads offline from the package,
the kernel's frames reach the canvas, the canvas's ticks reach the kernel).  Only loopback
addresses are used; every wait is bounded.  Without Chromium the test is skipped, except
under CI (the CI environment variable set), where it fails.
"""
from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = """\
import msprings
from msprings import scenes

live = msprings.interact(scenes.chain(6), fps=30)
live.run(5)
assert live.system.t > 0
live
"""


def _requirements() -> None:
    """Skips (fails under CI) when the browser or the Python packages are missing."""
    problem = None
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        problem = f"needs {CHROMIUM} and {CHROMEDRIVER} (Debian's chromium and chromium-driver)"
    for module in ("selenium", "voila", "PIL", "nbformat", "ipywidgets", "anywidget"):
        try:
            __import__(module)
        except ImportError:
            problem = problem or f"needs the Python package {module}"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test {problem}, and CI is set")
        pytest.skip(problem)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(condition: Callable[[], object], seconds: float, what: str) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.25)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


@pytest.fixture
def served_notebook(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The address of a Voila page of a notebook with the live controls of a chain, and
    the server's log."""
    _requirements()
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(NOTEBOOK)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "live.ipynb")
    port = _free_port()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                       JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "voila.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "voila", "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
         "--ServerApp.port_retries=0", "live.ipynb"],
        cwd=tmp_path, env=environment, stdout=log, stderr=subprocess.STDOUT)
    address = f"http://127.0.0.1:{port}/"

    def answering() -> bool:
        if server.poll() is not None:
            raise AssertionError(f"voila exited: {(tmp_path / 'voila.log').read_text()[-2000:]}")
        try:  # a connection, not a page: a page request would start a kernel
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            return False

    try:
        _wait(answering, 60, "voila to answer")
        yield address, tmp_path / "voila.log"
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        log.close()


def _picture(element: object) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(element.screenshot_as_png)).convert("RGB"), dtype=np.int16)


def _model_pixels(picture: np.ndarray) -> int:
    """Pixels of the drawn network in the scene (the canvas's upper-left part without the
    status lines and the strain key): stretched-spring red or the dark grey of the masses."""
    scene = picture[50:290, 10:400]
    red, green, blue = scene[..., 0], scene[..., 1], scene[..., 2]
    springs = (red - green > 60) & (red - blue > 60)
    masses = (red < 120) & (green < 130) & (blue < 140)
    return int(np.count_nonzero(springs | masses))


def test_live_controls_render_and_play_in_chromium(served_notebook: tuple[str, Path]) -> None:
    address, log = served_notebook
    try:
        _render_and_play(address)
    except AssertionError as failure:
        errors = [line for line in log.read_text(errors="replace").splitlines() if "Error" in line]
        raise AssertionError(f"{failure}; the server's errors: {errors[-3:]}") from failure


def _render_and_play(address: str) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--force-device-scale-factor=1", "--no-proxy-server"):
        options.add_argument(argument)
    # The Debian driver, named explicitly: selenium-manager then downloads nothing.
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(address)
        canvas = _wait(lambda: driver.find_elements(By.CSS_SELECTOR, "canvas.msprings-interact"), 90,
                       "the live controls' canvas")[0]
        _wait(lambda: _model_pixels(_picture(canvas)) > 300, 30, "the chain to be drawn")
        before = _picture(canvas)
        assert before.shape[:2] == (482, 642)  # 640 x 480 and its 1 px border
        # Not blank: the chain's springs and masses, and the white panels beside them.
        assert _model_pixels(before) > 300

        play = _wait(lambda: [b for b in driver.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Play"],
                     30, "the Play button")[0]
        play.click()

        def moved() -> bool:
            now = _picture(canvas)
            return int(np.count_nonzero(np.any(now != before, axis=-1))) > 2000

        _wait(moved, 30, "the picture to change while playing")
        pause = [b for b in driver.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Pause"]
        assert pause, "the Play button turns into Pause while playing"
        pause[0].click()
        _wait(lambda: [b for b in driver.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Play"], 15,
              "the button to return to Play")
        assert _model_pixels(_picture(canvas)) > 300
    finally:
        driver.quit()
