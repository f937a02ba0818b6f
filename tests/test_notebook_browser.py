"""The live controls in a real browser: a notebook served by Voila, rendered by headless
Chromium and driven with selenium.

The page must show the model (not a blank canvas), pressing Play must change the picture,
and dragging the mass with the mouse must move it: that needs the whole chain to work (the
ES module loads offline from the package, the kernel's frames reach the canvas, the
canvas's ticks and drags reach the kernel).  Only loopback
addresses are used; every wait is bounded.  Without Chromium the test is skipped, except
under CI (the CI environment variable set), where it fails.
"""
from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from package_path import python_path

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FALLING_CHAIN = """\
import msprings
from msprings import scenes

live = msprings.interact(scenes.chain(6), fps=30)
live.run(5)
assert live.system.t > 0
live
"""
RESTING_SPRING = """\
import msprings
from msprings import scenes

live = msprings.interact(scenes.single_spring(gravity=(0.0, 0.0, 0.0)))
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
def served_notebook(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The address of a Voila page of a one-cell notebook (the source is the test's
    parameter), and the server's log."""
    _requirements()
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(request.param)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "live.ipynb")
    port = _free_port()
    environment = dict(os.environ, PYTHONPATH=python_path(),
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


def _masses(picture: np.ndarray) -> np.ndarray:
    """(row, column) of the dark grey pixels of the masses and pins in the scene."""
    scene = picture[50:290, 10:400]
    red, green, blue = scene[..., 0], scene[..., 1], scene[..., 2]
    rows, columns = np.nonzero((red < 120) & (green < 130) & (blue < 140))
    return np.column_stack([rows + 50, columns + 10])


@contextlib.contextmanager
def _browser(served: tuple[str, Path]) -> Iterator[tuple[Any, Any]]:
    """Headless Chromium on the served page: (driver, the live controls' canvas).  An
    assertion that fails inside is reported with the server's last errors."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    address, log = served
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
        yield driver, canvas
    except AssertionError as failure:
        errors = [line for line in log.read_text(errors="replace").splitlines() if "Error" in line]
        raise AssertionError(f"{failure}; the server's errors: {errors[-3:]}") from failure
    finally:
        driver.quit()


@pytest.mark.parametrize("served_notebook", [FALLING_CHAIN], indirect=True)
def test_live_controls_render_and_play_in_chromium(served_notebook: tuple[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    with _browser(served_notebook) as (driver, canvas):
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


@pytest.mark.parametrize("served_notebook", [RESTING_SPRING], indirect=True)
def test_dragging_the_mass_with_the_mouse_moves_it(served_notebook: tuple[str, Path]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    with _browser(served_notebook) as (driver, canvas):
        # Face-on view: the pin (a square) on the left, the mass (a ball) on the right, on
        # one horizontal line, and nothing moves (no gravity, no stretch, paused).
        _wait(lambda: len(_masses(_picture(canvas))) > 300, 30, "the spring to be drawn")
        before = _masses(_picture(canvas))
        middle = 0.5 * (before[:, 1].min() + before[:, 1].max())
        ball = before[before[:, 1] > middle].mean(axis=0)
        pin = before[before[:, 1] < middle].mean(axis=0)
        assert abs(ball[0] - pin[0]) < 3
        # Press on the ball and pull it 90 px up.  Dragging empty space up would only tilt
        # the view about the horizontal spring, which leaves the ball where it is.
        width, height = canvas.size["width"], canvas.size["height"]
        chain = ActionChains(driver).move_to_element_with_offset(canvas, int(ball[1] - width / 2),
                                                                  int(ball[0] - height / 2))
        chain.click_and_hold().move_by_offset(0, -30).move_by_offset(0, -30).move_by_offset(0, -30)
        chain.pause(0.3).release().perform()

        def lifted() -> bool:
            after = _masses(_picture(canvas))
            right = after[after[:, 1] > middle - 40]
            return len(right) > 100 and right[:, 0].mean() < ball[0] - 30

        _wait(lambda: lifted(), 20, "the ball to follow the mouse up")
