"""Playback benchmark: the live controls of ``msprings.interact`` playing in JupyterLab.

For each scene, ``msprings.interact(scene)`` with every default is shown in a notebook in
JupyterLab (on 127.0.0.1), rendered by headless Chromium (Debian's ``chromium`` and
``chromedriver``, driven by selenium through ``tests/lab_browser.py``).  Play is pressed,
and after a warm-up of 2 s the benchmark counts, over ``--seconds`` of wall time:

* drawn frames/s: pictures the page drew (the canvas's ``data-frames``; a version whose
  canvas has no such attribute draws one picture per frame the kernel published, so its
  count is the view's ``frame`` trait read from the kernel);
* sim/wall: simulated seconds shown per second of wall time (the canvas's ``data-time``, or
  the kernel's ``system.t`` for a version without it); 1.0 is real time;
* kernel frames/s: frames the page received from the kernel (``data-received``), where the
  canvas counts them.

``--relay-delay S`` adds rows for which every message between page and server is held S
seconds each way in the page (a slow relay: a remote JupyterHub, a busy proxy).

Scenes: ``scenes.chain(11)``, ``scenes.cloth(20)``, ``scenes.cloth(40)``.  ``--against
PATH`` measures another checkout (its msprings, built in place, serves the kernel) beside
this one, taking turns scene by scene.

Usage, from the repository root::

    python benchmarks/bench_playback.py                       # 10 s per row, about 2 minutes
    python benchmarks/bench_playback.py --against /tmp/before # a previous version beside it
    python benchmarks/bench_playback.py --quick               # 3 s per row: a smoke run

The report is Markdown on stdout.  Without Chromium the exit status is 2.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

try:  # as part of the benchmarks package
    from . import harness
except ImportError:  # as a script
    import harness

SCENES = ("chain(11)", "cloth(20)", "cloth(40)")
WARM_UP = 2.0  # s after Play before counting


def _reading(page) -> tuple[float, float, str]:
    """(drawn frames, shown simulated time, where they were read)."""
    data = page.data()
    if "frames" in data and "time" in data:
        return float(data["frames"]), float(data["time"]), "page"
    frames, t = page.python("print(live.view.frame, live.system.t)").split()
    return float(frames), float(t), "kernel"


def measure(server, scene: str, seconds: float, relay_delay: float = 0.0) -> dict[str, object]:
    from lab_browser import open_notebook

    cells = ["import msprings\nfrom msprings import scenes", f"live = msprings.interact(scenes.{scene})\nlive"]
    with open_notebook(server, cells, relay_delay=relay_delay) as page:
        page.wait(lambda: page.buttons("Play"), 30, "the Play button")
        time.sleep(0.5)
        page.click("Play")
        time.sleep(WARM_UP)
        frames0, t0, source = _reading(page)
        received0 = page.number("received")
        start = time.monotonic()
        time.sleep(seconds)
        frames1, t1, _ = _reading(page)
        wall = time.monotonic() - start
        data = page.data()
        received = (page.number("received") - received0) / wall
        return {"fps": (frames1 - frames0) / wall, "ratio": (t1 - t0) / wall, "source": source,
                "received": "–" if math.isnan(received) else f"{received:.1f}",
                "draw": data.get("drawMs", "–"), "underruns": data.get("underruns", "–")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="wall seconds counted per row (default 10)")
    parser.add_argument("--quick", action="store_true", help="3 s per row: a smoke run")
    parser.add_argument("--against", type=Path, action="append", default=[],
                        help="another checkout (msprings built in place) to measure beside this one")
    parser.add_argument("--scenes", nargs="+", default=list(SCENES))
    parser.add_argument("--relay-delay", type=float, action="append", default=[],
                        help="also measure with the page's messages held this many seconds each way")
    options = parser.parse_args(argv)
    seconds = 3.0 if options.quick else options.seconds

    import lab_browser

    reason = lab_browser.problem()
    if reason is not None:
        print(f"bench_playback {reason}", file=sys.stderr)
        return 2
    msprings = harness.import_msprings()
    versions = [("this checkout", str(ROOT))] + [(str(path), str(path.resolve())) for path in options.against]
    lines = harness.header("Playback in JupyterLab, headless Chromium", msprings, options.quick, notes=[
        f"each row: `msprings.interact(scene)` with defaults, Play, {WARM_UP:g} s warm-up, then {seconds:g} s counted",
        "drawn frames/s and sim/wall read on the page (data-frames, data-time) or, for a version without them, "
        "from the kernel (view.frame, system.t)"])
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for delay in [0.0, *options.relay_delay]:
            for scene in options.scenes:
                for index, (name, path) in enumerate(versions):
                    pythonpath = os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH")]))
                    where = Path(folder) / f"{index}-{scene}-{delay}"
                    with lab_browser.serve_lab(where, pythonpath=pythonpath) as server:
                        result = measure(server, scene, seconds, delay)
                    rows.append([scene, name, f"+{1000 * delay:.0f} ms" if delay else "as is", f"{result['fps']:.1f}",
                                 f"{result['ratio']:.3f}", result["received"], result["source"], result["draw"],
                                 result["underruns"]])
                    print(f"{scene} {name} delay {delay}: {result}", file=sys.stderr, flush=True)
    lines += ["", *harness.table(["scene", "version", "relay", ">drawn frames/s", ">sim/wall", ">kernel frames/s",
                                  "read on", ">last draw (ms)", ">underruns"], rows)]
    lines += ["", f"load average at the end: {harness.load_average()}"]
    print("\n".join(lines))
    return 0 if all(math.isfinite(float(row[3])) for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
