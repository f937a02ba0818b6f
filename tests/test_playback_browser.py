"""The live controls playing in JupyterLab in headless Chromium (tests/lab_browser.py).

Play must move the picture, with the canvas's count of drawn frames (data-frames) and its
shown simulated time (data-time) going up; the mouse must drag a node; the keys space, →
and r on the canvas must play/pause, step and reset, and the buttons must take the keyboard
focus; slow motion must slow the shown clock, not the drawing; compare() must show two views
on one clock, one blowing up while the other plays on.  Timing targets (frames per second,
real-time ratio) are measured by benchmarks/bench_playback.py, not here: these bounds only
tell playing from not playing.  Screenshots go to the test's temporary folder.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from lab_browser import Lab, LabPage, lab  # noqa: F401  (the fixture)

SETUP = "import msprings\nfrom msprings import scenes"


def _kernel(page: LabPage, expression: str) -> str:
    return page.python(f"print({expression})").strip()


def _times(page: LabPage) -> list[float]:
    """The shown simulated time of every canvas, read at one instant."""
    return [float(value) for value in page.js(
        "return Array.from(document.querySelectorAll('canvas.msprings-interact'), c => c.dataset.time);")]


def _rate(page: LabPage, seconds: float) -> tuple[float, float]:
    """(simulated seconds shown per wall second, pictures drawn per second) over ``seconds``."""
    t0, f0, w0 = page.number("time"), page.number("frames"), time.monotonic()
    time.sleep(seconds)
    t1, f1, w1 = page.number("time"), page.number("frames"), time.monotonic()
    return (t1 - t0) / (w1 - w0), (f1 - f0) / (w1 - w0)


def _masses(picture: np.ndarray) -> np.ndarray:
    """(row, column) of the dark grey pixels of the masses and pins in the scene."""
    scene = picture[50:290, 10:400]
    red, green, blue = scene[..., 0], scene[..., 1], scene[..., 2]
    rows, columns = np.nonzero((red < 120) & (green < 130) & (blue < 140))
    return np.column_stack([rows + 50, columns + 10])


def test_play_moves_the_picture_and_the_counters_on_the_canvas(lab: Lab, tmp_path: Path) -> None:
    with lab.open([SETUP, "live = msprings.interact(scenes.chain(11))\nlive"]) as page:
        page.wait(lambda: page.number("frames") >= 1, 30, "the first picture")
        before, frames = page.picture(), page.number("frames")
        assert page.number("time") == 0.0
        page.click("Play")
        page.wait(lambda: page.data().get("playing") == "true", 30, "the canvas to play")
        time.sleep(2.0)
        page.screenshot(tmp_path / "playing.png", page.canvas)
        assert page.number("frames") > frames + 20  # pictures keep coming
        assert page.number("time") > 0.5  # the shown clock runs
        assert np.count_nonzero(np.any(page.picture() != before, axis=-1)) > 2000
        page.click("Pause")
        page.wait(lambda: page.buttons("Play"), 15, "the button to return to Play")
        # Paused, the page shows the kernel's own last state.
        page.wait(lambda: abs(page.number("time") - float(_kernel(page, "live.system.t"))) < 1e-9, 15,
                  "the kernel's time on the canvas")
        assert int(_kernel(page, "live.player.stalls")) == 0


@pytest.mark.parametrize("playing", [False, True], ids=["paused", "playing"])
def test_dragging_a_node_with_the_mouse_moves_it(lab: Lab, tmp_path: Path, playing: bool) -> None:
    cell = "live = msprings.interact(scenes.single_spring(gravity=(0.0, 0.0, 0.0)))\nlive"
    with lab.open([SETUP, cell]) as page:
        page.wait(lambda: len(_masses(page.picture())) > 300, 30, "the spring to be drawn")
        if playing:  # at rest without gravity: nothing moves until the hand pulls
            page.click("Play")
            page.wait(lambda: page.number("time") > 0.2, 30, "the clock to run")
        before = _masses(page.picture())
        middle = 0.5 * (before[:, 1].min() + before[:, 1].max())
        ball = before[before[:, 1] > middle].mean(axis=0)
        y0 = float(_kernel(page, "live.system.x[1, 1]"))
        page.drag((ball[1], ball[0]), [(0, -30), (0, -30), (0, -30)])

        def lifted() -> bool:
            after = _masses(page.picture())
            right = after[after[:, 1] > middle - 40]
            return len(right) > 100 and right[:, 0].mean() < ball[0] - 30

        page.wait(lifted, 20, "the ball to follow the mouse up")
        page.screenshot(tmp_path / "dragged.png", page.canvas)
        assert float(_kernel(page, "live.system.x[1, 1]")) > y0 + 0.1  # the kernel's node moved up
        if playing:  # let go: the stretched spring pulls the freed ball toward the pin
            page.wait(lambda: _kernel(page, "bool(live.system.pinned[1])") == "False", 20, "the ball to be let go")
            first = _kernel(page, "live.system.x[1].tolist()")
            page.wait(lambda: _kernel(page, "live.system.x[1].tolist()") != first, 20, "the freed ball to move")
            assert _kernel(page, "live.play.value") == "True"


def test_keys_on_the_canvas_play_step_and_reset_and_the_buttons_take_focus(lab: Lab) -> None:
    from selenium.webdriver.common.keys import Keys

    with lab.open([SETUP, "live = msprings.interact(scenes.chain(6))\nlive"]) as page:
        page.wait(lambda: page.number("frames") >= 1, 30, "the first picture")
        page.press(Keys.SPACE)
        page.wait(lambda: _kernel(page, "live.play.value") == "True", 15, "space to play")
        page.wait(lambda: page.number("time") > 0.3, 15, "the clock to run")
        page.press(Keys.SPACE)
        page.wait(lambda: _kernel(page, "live.play.value") == "False", 15, "space to pause")
        steps = int(_kernel(page, "live.system.steps"))
        page.press(Keys.ARROW_RIGHT)
        page.wait(lambda: int(_kernel(page, "live.system.steps")) == steps + int(
            _kernel(page, "live.steps_per_frame.value")), 15, "→ to step one frame")
        page.press("r")
        page.wait(lambda: _kernel(page, "live.system.t, live.system.steps") == "0.0 0", 15, "r to reset")
        page.wait(lambda: page.number("time") == 0.0, 15, "the canvas back at t = 0")
        # JupyterLab itself stayed put: still one notebook cell selected, no cell added or cut.
        assert page.js("return window.__msprings_panel.content.widgets.length") == 2
        # The buttons are real buttons: focusable, and Enter presses them.
        step = page.button("Step")
        page.js("arguments[0].focus();", step)
        assert page.js("return document.activeElement === arguments[0];", step)
        step.send_keys(Keys.ENTER)
        page.wait(lambda: int(_kernel(page, "live.system.steps")) > 0, 15, "Enter on Step to step")


def test_slow_motion_slows_the_clock_not_the_pictures(lab: Lab) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    with lab.open([SETUP, "live = msprings.interact(scenes.chain(11))\nlive"]) as page:
        page.click("Play")
        page.wait(lambda: page.data().get("playing") == "true", 30, "the canvas to play")
        time.sleep(1.0)
        full, drawn = _rate(page, 3.0)
        speed = [select for select in page.driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea select")
                 if "1×" in select.text][0]
        Select(speed).select_by_visible_text("½×")
        page.wait(lambda: _kernel(page, "live.player.speed") == "0.5", 15, "the speed to reach the kernel")
        time.sleep(1.0)
        half, drawn_half = _rate(page, 3.0)
        assert 0.35 < half / full < 0.65, (half, full)
        assert drawn_half > 0.6 * drawn  # pictures keep coming at the same pace


def test_compare_shows_two_views_on_one_clock_and_one_blows_up_alone(lab: Lab, tmp_path: Path) -> None:
    cell = ("cloth = scenes.cloth(20)\nlimit = cloth.critical_dt()\n"
            "view = msprings.compare(cloth, cloth.copy(), dt=[0.5 * limit, 1.5 * limit],\n"
            "                        labels=['dt = 0.5 × critical', 'dt = 1.5 × critical'])\n"
            "view.speed.value = 0.1  # slow motion: the right one shakes apart 0.2 s in\nview")
    with lab.open([SETUP, cell], canvases=2, width=1900, height=1200) as page:
        left, right = page.canvases()
        assert len(page.buttons("Play")) == 1  # one Play for both
        page.click("Play")
        page.wait(lambda: min(_times(page)) > 0.05, 30, "both clocks to run")  # before the right one blows up
        a, b = _times(page)
        assert abs(a - b) < 0.1, (a, b)  # one clock
        # One clock object on the page draws both views, though each loads its own copy of the module.
        # (data-clock names the clock object that drew the canvas, data-clock-views how many views it had.)
        clocks = [page.data(canvas) for canvas in (left, right)]
        assert clocks[0].get("clock") and clocks[0]["clock"] == clocks[1].get("clock"), clocks
        assert "2" in {clock.get("clockViews") for clock in clocks}, clocks
        assert _kernel(page, "view.play.value") == "True"
        page.python("view.speed.value = 1.0")
        page.wait(lambda: "blew up" in _kernel(page, "view.lanes[1].message.value"), 60, "the right one to blow up")
        page.wait(lambda: page.data(right).get("playing") == "false", 15, "the right canvas to stop")
        stopped = page.number("time", right)
        shown = page.number("time", left)
        page.wait(lambda: page.number("time", left) > shown + 0.5, 15, "the left one to play on")
        assert page.number("time", right) == stopped
        assert _kernel(page, "view.play.value") == "True"
        page.screenshot(tmp_path / "compare.png")
        page.screenshot(tmp_path / "compare-right.png", right)


def test_a_view_shown_while_playing_plays_and_the_kernel_never_stalls_for_good(lab: Lab) -> None:
    # Played before it is shown: the frames sent meanwhile go nowhere and are never acknowledged.
    cells = [SETUP + "\nimport asyncio", "live = msprings.interact(scenes.chain(11))\nlive.play.value = True",
             "await asyncio.sleep(2.0)", "live"]
    with lab.open(cells) as page:
        page.wait(lambda: page.data().get("playing") == "true", 30, "the canvas to play")
        page.wait(lambda: page.number("time") > 3.0, 30, "the shown clock to run on")
        t = float(_kernel(page, "live.system.t"))
        page.wait(lambda: float(_kernel(page, "live.system.t")) > t + 1.0, 15, "the kernel to keep stepping")
        assert int(_kernel(page, "live.player.in_flight(live)")) < 15


def test_a_reloaded_page_plays_on(lab: Lab) -> None:
    from lab_browser import _READY, _RUN_ALL, wait

    cells = [SETUP, "if 'live' not in globals():\n    live = msprings.interact(scenes.chain(11))", "live"]
    with lab.open(cells, name="reload.ipynb") as page:
        page.click("Play")
        page.wait(lambda: page.number("time") > 1.0, 30, "the clock to run")
        page.driver.refresh()  # while playing: the frames in flight to the old page are lost
        wait(lambda: page.driver.execute_script(_READY, "reload.ipynb") == "ready", 90, "the notebook", every=0.5)
        page.driver.set_script_timeout(60)
        assert page.driver.execute_async_script(_RUN_ALL) == "ran"
        page.wait(lambda: len(page.canvases()) >= 1 and page.data().get("playing") == "true", 60,
                  "the new page's canvas to play")
        shown = page.number("time")
        page.wait(lambda: page.number("time") > shown + 1.0, 20, "the new page's clock to run")
        t = float(_kernel(page, "live.system.t"))
        page.wait(lambda: float(_kernel(page, "live.system.t")) > t + 1.0, 15, "the kernel to keep stepping")
