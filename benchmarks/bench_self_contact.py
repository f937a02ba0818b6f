"""Self-contact benchmark: the cost of a cloth that never passes through itself.

Scene (the piling cloth): a 1 m cloth of N x N nodes (N = 64; rho = 300 kg/m^3, t = 1 mm,
E = 0.2 MPa, zeta = 0.1, ``msprings.scenes.cloth(N, size=1, ...)``) hung vertically in the
x-y plane 5 cm above a ground plane (friction 0.5), rippled 1 cm out of its plane
(z = 0.01 sin(2 pi x / 0.4) sin(2 pi y / 0.7)) so that it buckles, released, and piled up by
implicit Euler at h = 1/60 s (at most 4 Newton iterations a step) for 36 steps (0.6 s), one
thread.  Rows, interleaved, each from a fresh cloth, medians of the repeats (processor time):

* no self-collision: ``self_collision = 0``;
* discrete: ``self_collision = 0.4 x spacing`` with ``self_contact_sweep = 0`` (the end-of-step
  proximity pass alone: node-node, node-triangle and edge-edge pushes);
* continuous: the same with the sweep (the default).

Each row also reports the frames (steps) whose state has a mesh edge crossing a triangle, by
the tests' independent counter (``tests/crossings.py``).  Run with a build that has no
``self_contact_sweep`` option (an older msprings) and the discrete row is that build's pass.

Second scene (the impact): an n x n cloth of 0.5 m (same material, self-collision distance
0.4 x spacing) thrown at 300 m/s, turned 45 degrees about the vertical, into a still n x n sheet
pinned along two sides 10 cm below it; one symplectic Euler step of h = 1/600 s, in which the
thrown cloth would travel 0.5 m, right through the sheet.  Rows: sweep on and off for n = 32,
64, 128 (processor time of the step, medians of the repeats, rows interleaved), with the
crossing pairs after the step.

    python benchmarks/bench_self_contact.py [--n 64] [--steps 36] [--repeats 3] [--scene both]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from crossings import count_crossings, mesh_edges  # noqa: E402

H = 1.0 / 60.0  # s
MODES = ("no self-collision", "discrete", "continuous")


def piling_cloth(msprings: object, n: int, mode: str) -> object:
    """The scene of the module docstring with self-contact as ``mode`` says."""
    s = msprings.scenes.cloth(n, size=1.0, density=300.0, thickness=1e-3, youngs_modulus=2e5,  # type: ignore[attr-defined]
                              damping_ratio=0.1, pin=None, integrator="implicit_euler")
    s.newton_max_iter = 4
    s.threads = 1
    flat = s.x.copy()
    s.x[:, 1] = 0.05 + flat[:, 2].max() - flat[:, 2]
    s.x[:, 2] = 0.01 * np.sin(2 * np.pi * flat[:, 0] / 0.4) * np.sin(2 * np.pi * s.x[:, 1] / 0.7)
    s.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), friction=0.5)
    if mode != MODES[0]:
        s.self_collision = 0.4 / n
    if mode == "discrete" and hasattr(s, "self_contact_sweep"):
        s.self_contact_sweep = 0
    return s


def run(msprings: object, n: int, steps: int, mode: str) -> tuple[float, int, int]:
    """(processor seconds of the steps, steps whose state crosses itself, worst count)."""
    s = piling_cloth(msprings, n, mode)
    faces = np.asarray(s.faces)
    edges = mesh_edges(faces)
    seconds, crossing, worst = 0.0, 0, 0
    for _ in range(steps):
        start = time.process_time()
        s.step(H)
        seconds += time.process_time() - start
        count = count_crossings(s.x, faces, edges)
        crossing += count > 0
        worst = max(worst, count)
    return seconds, crossing, worst


IMPACT_SPEED = 300.0  # m/s
IMPACT_H = 1.0 / 600.0  # s
IMPACT_SIZES = (32, 64, 128)


def impact(msprings: object, n: int, sweep: int) -> object:
    """The impact scene of the module docstring (two n x n cloths), sweep on (1) or off (0)."""
    sheet = msprings.scenes.cloth(n, size=0.5, density=300.0, thickness=1e-3, youngs_modulus=2e5,  # type: ignore[attr-defined]
                                  damping_ratio=0.1, pin=None)
    lower = sheet.x - np.array([0.25, -0.15, 0.25])
    turn = np.pi / 4
    upper = np.column_stack([np.cos(turn) * lower[:, 0] - np.sin(turn) * lower[:, 2], lower[:, 1] + 0.1,
                             np.sin(turn) * lower[:, 0] + np.cos(turn) * lower[:, 2]])
    count = sheet.n_nodes
    springs, faces = np.asarray(sheet.springs), np.asarray(sheet.faces)
    pinned = np.zeros(2 * count, bool)
    pinned[:count] = np.abs(np.abs(lower[:, 0]) - 0.25) < 1e-9
    s = msprings.System(np.vstack([lower, upper]), np.vstack([springs, springs + count]),  # type: ignore[attr-defined]
                        mass=np.concatenate([sheet.mass] * 2), k=np.concatenate([sheet.k] * 2),
                        c=np.concatenate([sheet.c] * 2), rest=np.concatenate([sheet.rest] * 2),
                        faces=np.vstack([faces, faces + count]), integrator="symplectic_euler", pinned=pinned)
    s.threads = 1
    s.self_collision = 0.4 * 0.5 / n
    s.self_contact_sweep = sweep
    s.v[count:, 1] = -IMPACT_SPEED
    return s


def run_impact(msprings: object, n: int, sweep: int) -> tuple[float, int]:
    """(processor seconds of the impact step, crossing pairs after it)."""
    s = impact(msprings, n, sweep)
    start = time.process_time()
    s.step(IMPACT_H)
    seconds = time.process_time() - start
    faces = np.asarray(s.faces)
    return seconds, count_crossings(s.x, faces, mesh_edges(faces))


def main_impact(msprings: object, repeats: int) -> None:
    """Prints the impact rows."""
    times: dict[tuple[int, int], list[float]] = {(n, sweep): [] for n in IMPACT_SIZES for sweep in (1, 0)}
    crossings: dict[tuple[int, int], int] = {}
    for _ in range(repeats):
        for n in IMPACT_SIZES:
            for sweep in (1, 0):
                seconds, crossings[n, sweep] = run_impact(msprings, n, sweep)
                times[n, sweep].append(seconds)
    print(f"impact: n x n cloth at {IMPACT_SPEED:g} m/s into a pinned n x n sheet, symplectic Euler "
          f"h = 1/600 s, one step, one thread")
    print("| n | sweep on, ms | sweep off, ms | on / off | crossing pairs after (on, off) |")
    print("|---:|---:|---:|---:|---:|")
    for n in IMPACT_SIZES:
        on, off = statistics.median(times[n, 1]), statistics.median(times[n, 0])
        print(f"| {n} | {1e3 * on:.1f} | {1e3 * off:.1f} | {on / off:.2f}x | {crossings[n, 1]}, {crossings[n, 0]} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--steps", type=int, default=36)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scene", choices=("piling", "impact", "both"), default="both")
    args = parser.parse_args(argv)
    import msprings
    import msprings.scenes  # noqa: F401

    if args.scene in ("impact", "both"):
        main_impact(msprings, args.repeats)
    if args.scene == "impact":
        return 0

    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    crossings: dict[str, tuple[int, int]] = {}
    for _ in range(args.repeats):
        for mode in MODES:
            seconds, crossing, worst = run(msprings, args.n, args.steps, mode)
            times[mode].append(seconds)
            crossings[mode] = (crossing, worst)
    base = statistics.median(times[MODES[0]])
    print(f"piling cloth {args.n} x {args.n}, implicit Euler h = 1/60 s, {args.steps} steps, one thread "
          f"({msprings.__file__})")
    print("| row | ms per step | vs no self-collision | steps with crossings | worst crossing pairs |")
    print("|---|---:|---:|---:|---:|")
    for mode in MODES:
        median = statistics.median(times[mode])
        crossing, worst = crossings[mode]
        print(f"| {mode} | {1e3 * median / args.steps:.1f} | {median / base:.2f}x | {crossing}/{args.steps} | {worst} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
