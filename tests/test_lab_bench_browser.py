"""The lab bench in JupyterLab (headless Chromium, tests/lab_browser.py): every control
renders and works when a student clicks it, and the canvas shows what it should.

Screenshots of each stage are written to the test's temporary folder (``lab-*.png``).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from lab_browser import Lab, lab  # noqa: F401  (the fixture)

CELLS = ["import msprings\nfrom msprings import scenes",
         "live = msprings.interact(scenes.lab_spring(), mystery_mass=0.1734)\nlive"]


def colour_pixels(picture: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 30) -> np.ndarray:
    """(row, column) of the pixels within ``tolerance`` of ``rgb`` in the scene (left 410 px)."""
    scene = picture[:330, :410]
    close = np.all(np.abs(scene - np.array(rgb)) <= tolerance, axis=-1)
    return np.argwhere(close)


def tick_box(page, label: str) -> None:
    from selenium.webdriver.common.by import By

    boxes = [element for element in page.driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea .widget-checkbox")
             if element.text.strip() == label]
    assert boxes, f"no checkbox {label!r}"
    boxes[0].find_element(By.TAG_NAME, "input").click()


def test_every_bench_control_renders_and_works_in_jupyterlab(lab: Lab, tmp_path: Path) -> None:  # noqa: F811
    with lab.open(CELLS) as page:
        page.screenshot(tmp_path / "lab-0-start.png")
        before = page.picture()
        assert len(colour_pixels(before, (255, 236, 179), 8)) == 0  # no ruler yet

        # Arrows: ticking gravity and net force draws the green and black arrows and their key.
        tick_box(page, "gravity")
        tick_box(page, "net force")
        page.wait(lambda: len(colour_pixels(page.picture(), (46, 125, 50), 20)) > 150, 20, "the gravity arrow")
        assert page.python("print(live.show['gravity'].value, live.show['net'].value)").split() == ["True", "True"]

        # The ruler appears, and dragging it moves it in the kernel.
        tick_box(page, "ruler")
        page.wait(lambda: len(colour_pixels(page.picture(), (255, 236, 179), 8)) > 500, 20, "the ruler")
        ruler = colour_pixels(page.picture(), (255, 236, 179), 8)
        start = float(page.python("print(live.view.ruler[0])"))
        middle = ruler.mean(axis=0)
        page.js("arguments[0].scrollIntoView();", page.canvas)
        page.drag((middle[1], middle[0]), [(-15, 0), (-15, 0)])
        page.wait(lambda: float(page.python("print(live.view.ruler[0])")) < start - 0.01, 20,
                  "the ruler to follow the mouse")
        page.screenshot(tmp_path / "lab-1-arrows-ruler.png")

        # Lines, stopwatch and trace; then play for a while with the stopwatch running.
        for label in ("rest length", "equilibrium", "lowest point", "stopwatch", "trace"):
            tick_box(page, label)
        page.wait(lambda: page.js("return document.querySelector('canvas.msprings-trace').style.display") == "block",
                  20, "the trace")
        page.click("Start")
        page.click("Play")
        page.wait(lambda: float(page.python("print(live.system.t)")) > 2.0, 60, "two seconds of motion")
        page.click("Pause")
        page.click("Stop")
        watch = float(page.python("print(live.lab.stopwatch)"))
        assert 1.5 < watch <= float(page.python("print(live.system.t)"))
        period = page.python("print(live.lab.measurement()[0])")
        assert abs(float(period) - 0.628) < 0.01
        page.js("arguments[0].scrollIntoView();", page.canvas)
        page.screenshot(tmp_path / "lab-2-playing.png")
        picture = page.picture()
        assert len(colour_pixels(picture, (38, 50, 56), 6)) > 1500  # the stopwatch's dark face

        # Mass swap and planets, clicked as buttons.
        page.click("250 g")
        page.wait(lambda: page.python("print(round(live.system.mass[1], 9))").strip() == "0.25", 20, "the 250 g mass")
        page.click("Moon")
        page.wait(lambda: page.python("print(round(live.system.gravity[1], 9))").strip() == "-1.62", 20,
                  "the Moon's gravity")
        page.js("arguments[0].scrollIntoView();", page.canvas)
        page.screenshot(tmp_path / "lab-3-moon.png")
        page.click("Planet X")
        page.wait(lambda: page.python("print(live.gravity.disabled)").strip() == "True", 20, "Planet X")
        page.click("Zero")
        page.wait(lambda: float(page.python("print(live.lab.stopwatch)")) == 0.0, 20, "the stopwatch at 0 s")
        # The remaining arrows: velocity and acceleration of the moving mass, in their colours.
        for label in ("velocity", "acceleration", "spring", "damper", "other forces"):
            tick_box(page, label)
        page.click("Play")
        page.wait(lambda: float(page.python("print(live.system.t)")) > 3.0, 60, "more motion")
        page.click("Pause")
        page.js("arguments[0].scrollIntoView();", page.canvas)
        picture = page.picture()
        assert len(colour_pixels(picture, (228, 87, 46), 20)) > 100  # velocity
        assert len(colour_pixels(picture, (216, 27, 96), 20)) > 100  # acceleration
        page.screenshot(tmp_path / "lab-3-all-arrows.png")
        page.click("mystery")
        page.wait(lambda: page.python("print(live.system.mass[1])").strip() == "0.1734", 20, "the mystery mass")
        outputs = page.js("return Array.from(document.querySelectorAll('.jp-OutputArea-output'))"
                          ".map((e) => e.innerText).join(' ');")
        assert "0.1734" not in outputs and "173" not in outputs and "mass (kg): ?" in outputs
        # The critical step (2 sqrt(m / k)) and the ledger would give the mass away: "?".
        critical = float(page.python("print(live.system.critical_dt())"))
        assert f"{critical:.3g}" not in outputs and "critical step for symplectic Euler: ? s" in outputs
        assert "dissipated ? J" in outputs
        page.click("Play")
        page.wait(lambda: float(page.python("print(live.system.t)")) > 4.0, 60, "the mystery mass moving")
        page.click("Pause")
        page.js("arguments[0].scrollIntoView();", page.canvas)
        page.screenshot(tmp_path / "lab-4-mystery-mass.png")

        # A quick run of swaps from Python: the slider's late answers leave the last one.
        page.python("for name in ('50 g', '250 g', '100 g'): live.masses.value = name\n"
                    "for name in ('Moon', 'Jupiter', 'Earth'): live.planet.value = name")
        time.sleep(3)  # for the browser's answers to arrive
        assert page.python("print(live.system.mass[1], live.masses.value)").split() == ["0.1", "100", "g"]
        assert page.python("print(round(live.system.gravity[1], 6), live.planet.value)").split() == ["-9.81", "Earth"]
        page.js("arguments[0].scrollIntoView();", page.canvas)
        page.screenshot(tmp_path / "lab-4-mystery-planet-x.png")
