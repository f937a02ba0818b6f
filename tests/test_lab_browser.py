"""The JupyterLab browser harness itself (tests/lab_browser.py): a notebook opens in
JupyterLab in headless Chromium, its cells run, the live controls appear and the kernel
answers code sent from the page."""
from __future__ import annotations

import numpy as np

from lab_browser import Lab, lab  # noqa: F401  (the fixture)

CHAIN = ["import msprings\nfrom msprings import scenes", "live = msprings.interact(scenes.chain(6))\nlive"]


def test_a_notebook_opens_runs_and_shows_the_live_controls_in_jupyterlab(lab: Lab) -> None:
    with lab.open(CHAIN) as page:
        canvas = page.canvas
        assert canvas.size == {"width": 642, "height": 482}  # 640 x 480 and its 1 px border
        pixels = page.picture()
        # Not blank: the scene's pale background, the white panels and dark drawing.
        assert np.count_nonzero(pixels.sum(axis=-1) < 300) > 200
        assert page.python("print(live.system.n_nodes)").strip() == "6"
        assert page.buttons("Play") and page.buttons("Step") and page.buttons("Reset")
