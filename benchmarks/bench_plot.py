"""Animation benchmark: msprings.plot beside its previous version, in one run.

Two scenes are recorded once and animated by both versions of ``msprings.plot``, as
``python -m msprings`` does it (``plot.animate(trajectory, fps=fps)``, then
``plot.save_animation(animation, "x.gif")``, with every default):

* tablecloth-demo: the scene of ``python -m msprings demo``: ``scenes.tablecloth(20)``
  (400 nodes, 2,202 springs, 722 faces, a round table and the ground), 1,500 steps of
  2 ms, every 30th state kept: 51 frames at 15 frames per second;
* cloth-40: ``scenes.cloth(40)`` (1,600 nodes, 9,202 springs, 3,042 faces) hanging from
  two corners, 5,000 steps of 1 ms (the ``run cloth`` defaults), every 83rd state kept:
  61 frames at 20 frames per second.

The previous version is ``msprings/plot.py`` at commit 6364947, read with ``git show`` and
loaded as the module ``msprings._plot_previous`` (inside the package, so its relative
imports find the same msprings).  For each scene and version: wall time of building the
animation and writing the GIF, divided by the number of frames (median of several runs, the
versions taking turns), the GIF's size in bytes, pixels and frame count.  Both GIFs must
hold every frame.

Usage, from the repository root (a git checkout: the previous version comes from git)::

    python benchmarks/bench_plot.py            # 3 runs per row, about two minutes
    python benchmarks/bench_plot.py --quick    # 12 frames per scene, 1 run per row

The report is Markdown on stdout.  The exit status is 1 when a GIF does not hold every
frame or the previous version cannot be loaded, else 0.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

PREVIOUS_COMMIT = "6364947"
PREVIOUS_MODULE = "msprings._plot_previous"
QUICK_FRAMES = 12
SPEED_TARGET = 5.0  # the new version takes at most 1/5 of the previous seconds per frame
SIZE_TARGET = 0.5  # and writes at most half the previous bytes


@dataclass
class Scene:
    name: str
    build: Callable[[ModuleType], Any]
    dt: float
    steps: int
    frames: int
    fps: float


SCENES = (
    Scene("tablecloth-demo", lambda msprings: msprings.scenes.tablecloth(20), 2e-3, 1500, 50, 15.0),
    Scene("cloth-40", lambda msprings: msprings.scenes.cloth(40), 1e-3, 5000, 60, 20.0),
)


@dataclass
class Result:
    seconds_per_frame: float
    size: int
    pixels: tuple[int, int]
    frames_written: int


def load_previous(msprings: ModuleType) -> ModuleType:
    """The previous ``msprings/plot.py`` from git, as the module msprings._plot_previous."""
    root = Path(msprings.__file__).resolve().parent.parent
    source = subprocess.run(["git", "-C", str(root), "show", f"{PREVIOUS_COMMIT}:msprings/plot.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(PREVIOUS_MODULE, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "msprings"
    module.__file__ = f"<git show {PREVIOUS_COMMIT}:msprings/plot.py>"
    sys.modules[PREVIOUS_MODULE] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def record(msprings: ModuleType, scene: Scene, frames: int) -> Any:
    """The scene's trajectory with ``frames`` + 1 records (the first state and every
    steps // frames-th after it)."""
    system = scene.build(msprings)
    every = max(1, scene.steps // frames)
    return system.run(scene.dt, every * frames, every, progress=False)


def animate_once(plot: ModuleType, trajectory: Any, fps: float, path: Path) -> float:
    """Seconds to build the animation and write it as a GIF, as the command line does."""
    import matplotlib.pyplot as plt

    start = time.perf_counter()
    animation = plot.animate(trajectory, fps=fps)
    plot.save_animation(animation, path)
    elapsed = time.perf_counter() - start
    plt.close(animation.axes.get_figure())
    return elapsed


def gif_facts(path: Path) -> tuple[int, tuple[int, int], int]:
    from PIL import Image

    with Image.open(path) as image:
        return path.stat().st_size, image.size, image.n_frames


def measure(plots: dict[str, ModuleType], trajectory: Any, fps: float, repeats: int,
            folder: Path) -> dict[str, Result]:
    """Median seconds per frame of each version (taking turns) and the facts of its GIF."""
    times: dict[str, list[float]] = {name: [] for name in plots}
    for _ in range(repeats):
        for name, plot in plots.items():
            times[name].append(animate_once(plot, trajectory, fps, folder / f"{name}.gif"))
    results = {}
    for name in plots:
        size, pixels, written = gif_facts(folder / f"{name}.gif")
        results[name] = Result(statistics.median(times[name]) / len(trajectory), size, pixels, written)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark and prints a Markdown report; returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv, repeats=(3, 1))
    repeats = args.repeats

    import matplotlib

    matplotlib.use("Agg")
    msprings = harness.import_msprings()
    new_plot = importlib.import_module("msprings.plot")

    try:
        previous = load_previous(msprings)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"cannot load the previous plot.py from git ({error}): run this from a git checkout", file=sys.stderr)
        return 1
    plots = {"previous": previous, "new": new_plot}
    started = time.perf_counter()

    rows = []
    status = 0
    with tempfile.TemporaryDirectory() as folder:
        for scene in SCENES:
            frames = QUICK_FRAMES if args.quick else scene.frames
            trajectory = record(msprings, scene, frames)
            results = measure(plots, trajectory, scene.fps, repeats, Path(folder))
            if any(result.frames_written != len(trajectory) for result in results.values()):
                status = 1
            rows.append((scene, trajectory, results))

    out = harness.header("msprings animation benchmark: msprings.plot beside its previous version", msprings, args.quick, [
        f"matplotlib {matplotlib.__version__}; the run took {time.perf_counter() - started:.0f} s",
        f"previous: `msprings/plot.py` at {PREVIOUS_COMMIT} (loaded as `{PREVIOUS_MODULE}`); new: this "
        "checkout's `msprings.plot`",
        f"Each row: `animate(trajectory, fps=fps)` + `save_animation(animation, 'x.gif')` with every default, "
        f"wall time / frames, median of {repeats} run(s), the versions taking turns"])
    out += [
        "",
        "| scene | nodes | springs | faces | frames | s/frame previous | s/frame new | previous / new "
        "| GIF bytes previous | GIF bytes new | new / previous | GIF pixels previous, new |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for scene, trajectory, results in rows:
        old, new = results["previous"], results["new"]
        out.append(
            f"| {scene.name} | {trajectory.positions.shape[1]:,} | {len(trajectory.springs):,} | "
            f"{len(trajectory.faces):,} | {len(trajectory)} | {old.seconds_per_frame:.4f} | "
            f"{new.seconds_per_frame:.4f} | {old.seconds_per_frame / new.seconds_per_frame:.1f} | {old.size:,} | "
            f"{new.size:,} | {new.size / old.size:.2f} | {old.pixels[0]}x{old.pixels[1]}, "
            f"{new.pixels[0]}x{new.pixels[1]} |")
    out += ["", "## Targets", ""]
    for scene, _, results in rows:
        old, new = results["previous"], results["new"]
        speed = old.seconds_per_frame / new.seconds_per_frame
        size = new.size / old.size
        out.append(f"- {scene.name}: {speed:.1f}x fewer seconds per frame (target >= {SPEED_TARGET:g}x): "
                   f"{'met' if speed >= SPEED_TARGET else 'not met'}; GIF {size:.2f} of the previous bytes "
                   f"(target <= {SIZE_TARGET:g}): {'met' if size <= SIZE_TARGET else 'not met'}")
    for scene, trajectory, results in rows:
        for name, result in results.items():
            if result.frames_written != len(trajectory):
                out.append(f"- {scene.name}: the {name} GIF holds {result.frames_written} frames, not "
                           f"{len(trajectory)}")
    print("\n".join(out))
    return status


if __name__ == "__main__":
    sys.exit(main())
