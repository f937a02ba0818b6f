"""Cost of self-collision per step on cloth-64 and cloth-128.

Scenes (the benchmark scene list's cloth-N, with N = 64 and N = 128: N x N nodes of 1 kg,
0.625 m apart, structural, shear and bend springs with k = 2500 N/m, c = 1 N s/m, rest length
= initial length; gravity on; symplectic Euler, h = 1e-3 s), in two set-ups:

* ``hanging``: exactly cloth-N (corners (0, 0) and (0, N-1) pinned).  Nodes stay about a
  spacing apart, so self-collision finds no close pairs: this row is the cost of building and
  searching the spatial hash grid alone.
* ``folded``: cloth-N without pins, folded in half over a ground plane: rows 0..N/2-1 lie on
  the ground, rows N/2..N-1 lie one spacing above them, mirrored, so every top node is right
  above a bottom node (rest lengths are those of the folded sheet: a creased fold).  The
  untimed settling run lets the top half sag onto the bottom half; from then on most of the
  top half's nodes are pushed off the bottom half every step, so self-collision has work.

Self-collision distance d = 0.3 x spacing (0.1875 m).  For each scene the settled state is
copied and stepped with self-collision off and on, the two taking turns, and the median time
per step of several runs is reported.  Both variants run single-threaded (``threads = 1``
when the build has the setting) so that the difference is the cost of self-collision alone.

Usage, from the repository root::

    python benchmarks/bench_self_collision.py            # full run (about a minute)
    python benchmarks/bench_self_collision.py --quick    # short smoke run; numbers are rough

Prints a Markdown report; the exit status is 0, or 1 if self-collision let a folded top node
through the bottom layer (which would mean it did not work).  The project's target: the cost
per step at N = 128 is at most about 5x that at N = 64 (4x the nodes), i.e. linear.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from .common import cloth_geometry, import_msprings, parse_quick_repeats
except ImportError:  # as a script: python benchmarks/bench_self_collision.py
    from common import cloth_geometry, import_msprings, parse_quick_repeats

SIZES = (64, 128)
SPACING = 0.625
MASS = 1.0
STIFFNESS = 2500.0
DAMPING = 1.0
TIME_STEP = 1e-3
GRAVITY = (0.0, -9.81, 0.0)
#: Self-collision distance as a fraction of the spacing.
DISTANCE_FRACTION = 0.3
#: Untimed steps before timing: long enough for the folded top half to land (about 0.3 s).
SETTLE_STEPS = 500
#: The cost target: cost at N = 128 divided by cost at N = 64.
TARGET_RATIO = 5.0


def _single_threaded(system: Any) -> None:
    """Asks for one thread when the build has a thread setting."""
    if hasattr(type(system), "threads"):
        system.threads = 1


def hanging_cloth(msprings: ModuleType, n: int) -> Any:
    """cloth-N exactly as in the scene list."""
    system = msprings.System(*cloth_geometry(n, SPACING)[:2], mass=MASS, k=STIFFNESS, c=DAMPING,
                             pinned=[0, n - 1], gravity=GRAVITY)
    _single_threaded(system)
    return system


def folded_cloth(msprings: ModuleType, n: int) -> Any:
    """cloth-N unpinned and folded in half over a ground plane (see the module docstring)."""
    positions, springs, _ = cloth_geometry(n, SPACING)
    rows = np.arange(n * n) // n
    top = rows >= n // 2
    positions[top, 2] = (n - 1 - rows[top]) * SPACING
    positions[top, 1] = SPACING
    # Rest lengths are the folded lengths: the structural and shear springs across the fold
    # are a spacing long either way, and the bend springs across it keep the crease.
    system = msprings.System(positions, springs, mass=MASS, k=STIFFNESS, c=DAMPING, gravity=GRAVITY)
    system.add_plane(friction=0.5)
    _single_threaded(system)
    return system


@dataclass
class Row:
    """Timings (s per step) of one scene with self-collision off and on."""

    scene: str
    n: int
    off: float
    on: float
    pushed: int
    steps: int

    @property
    def cost(self) -> float:
        """Self-collision's cost per step (s)."""
        return self.on - self.off


def nodes_pushed(base: Any, distance: float) -> int:
    """Nodes whose position after one step differs with self-collision on and off: the
    nodes self-collision actually moved (a measure of its work in that state)."""
    without, with_ = base.copy(), base.copy()
    without.self_collision = 0.0
    with_.self_collision = distance
    without.step(TIME_STEP)
    with_.step(TIME_STEP)
    return int(np.count_nonzero(np.any(np.asarray(without.x) != np.asarray(with_.x), axis=1)))


def calibrate(base: Any, distance: float, seconds: float) -> int:
    """Steps per timed run so that a run with self-collision takes about ``seconds``."""
    probe = base.copy()
    probe.self_collision = distance
    steps = 5
    while True:
        start = time.perf_counter()
        probe.step(TIME_STEP, steps)
        elapsed = time.perf_counter() - start
        if elapsed >= 0.05 or steps >= 100_000:
            return max(5, int(steps * seconds / max(elapsed, 1e-9)))
        steps *= 4


def measure(scene: str, n: int, base: Any, distance: float, seconds: float, repeats: int) -> Row:
    """Median time per step with self-collision off and on, the two taking turns, each run on
    a fresh copy of the settled state after one untimed step."""
    steps = calibrate(base, distance, seconds)
    samples: dict[float, list[float]] = {0.0: [], distance: []}
    for _ in range(repeats):
        for setting in samples:
            system = base.copy()
            system.self_collision = setting
            system.step(TIME_STEP)
            start = time.perf_counter()
            system.step(TIME_STEP, steps)
            samples[setting].append((time.perf_counter() - start) / steps)
    return Row(scene, n, statistics.median(samples[0.0]), statistics.median(samples[distance]),
               nodes_pushed(base, distance), steps)


def layers_kept(system: Any, n: int) -> bool:
    """Whether the folded cloth's top half still lies above its bottom half (away from the fold)."""
    rows = np.arange(n * n) // n
    x = np.asarray(system.x)
    top = x[rows >= n // 2 + 2, 1]
    bottom = x[rows <= n // 2 - 3, 1]
    return bool(top.min() > bottom.max())


def _format_time(seconds: float) -> str:
    """A duration in us or ms with three significant figures."""
    if abs(seconds) < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e3:.3g} ms"


def report(rows: list[Row], distance: float, repeats: int, quick: bool, msprings: ModuleType,
           kept: dict[int, bool]) -> list[str]:
    """The Markdown report."""
    out = ["# Self-collision cost per step" + (" (--quick: smoke run, not a measurement)" if quick else ""), ""]
    out.append(f"- Python {platform.python_version()}, NumPy {np.__version__}, msprings "
               f"{getattr(msprings, '__version__', '?')} ({Path(msprings.__file__).parent}); "
               f"{platform.system()} {platform.machine()}, {os.cpu_count()} logical CPUs (one used)")
    out.append(f"- Date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}")
    out.append(f"- cloth-N (spacing {SPACING} m, k = {STIFFNESS:g} N/m, c = {DAMPING:g} N s/m), symplectic Euler, "
               f"h = {TIME_STEP:g} s, self_collision = {DISTANCE_FRACTION} x spacing = {distance:g} m; "
               f"median of {repeats} runs, off and on taking turns, after {SETTLE_STEPS} untimed settling steps")
    out.append("")
    out.append("| scene | N | nodes | steps/run | step, off | step, on | self-collision cost/step "
               "| cost/node | nodes pushed in one step |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        nodes = row.n * row.n
        out.append(f"| {row.scene} | {row.n} | {nodes:,} | {row.steps:,} | {_format_time(row.off)} | "
                   f"{_format_time(row.on)} | {_format_time(row.cost)} | {row.cost / nodes * 1e9:.1f} ns | "
                   f"{row.pushed:,} |")
    out.append("")
    node_ratio = (SIZES[1] / SIZES[0]) ** 2
    out.append(f"## Scaling: cost at N = {SIZES[1]} / cost at N = {SIZES[0]} ({node_ratio:g}x the nodes)")
    out.append("")
    for scene in dict.fromkeys(row.scene for row in rows):
        small = next(row for row in rows if row.scene == scene and row.n == SIZES[0])
        large = next(row for row in rows if row.scene == scene and row.n == SIZES[1])
        if small.cost > 0:
            ratio = large.cost / small.cost
            verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
            out.append(f"- {scene}: {ratio:.2f}x (target <= {TARGET_RATIO:g}x): {verdict}")
        else:
            out.append(f"- {scene}: cost at N = {SIZES[0]} not measurable (<= 0); rerun on a quieter machine")
    out.append("")
    for n, ok in kept.items():
        out.append(f"- folded cloth-{n}: top half {'stays on' if ok else 'FELL THROUGH'} the bottom half "
                   "with self-collision")
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    return parse_quick_repeats("Self-collision cost per step on cloth-64 and cloth-128.", "short runs, 2 repeats (a smoke test)", argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark, prints the Markdown report and returns the exit status."""
    args = parse_args(argv)
    msprings = import_msprings()
    seconds = 0.05 if args.quick else 0.5
    distance = DISTANCE_FRACTION * SPACING
    rows: list[Row] = []
    kept: dict[int, bool] = {}
    for n in SIZES:
        hanging = hanging_cloth(msprings, n)
        hanging.self_collision = distance
        hanging.step(TIME_STEP, SETTLE_STEPS)
        rows.append(measure("hanging", n, hanging, distance, seconds, args.repeats))
        folded = folded_cloth(msprings, n)
        folded.self_collision = distance
        folded.step(TIME_STEP, SETTLE_STEPS)
        kept[n] = layers_kept(folded, n)
        rows.append(measure("folded", n, folded, distance, seconds, args.repeats))
    rows.sort(key=lambda row: (row.scene != "hanging", row.n))
    print("\n".join(report(rows, distance, args.repeats, args.quick, msprings, kept)))
    return 0 if all(kept.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
