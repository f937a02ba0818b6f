"""Ground contact against free fall: solids filled with tetrahedra resting on the ground, every integrator.

Scenes (the benchmark list's mesh-solid, with a box for the closed mesh): a box of 0.3 m x 0.15 m x
0.3 m filled with a body-centred cubic lattice cut into tetrahedra (for each pair of face-adjacent
cube centres the four tetrahedra around their shared face; a boundary face's pyramid split in two),
at about 1k, 10k and 50k nodes; rho = 1100 kg/m^3, E = 2 MPa, zeta = 0.1 (masses rho V / 4 per
corner, k = sum E V_tet / L^2 over the edge's tetrahedra, c = 2 zeta sqrt(k mu)); and the cow
(``/work/models/cow.obj``, or ``$MSPRINGS_COW``: ``mesh.from_mesh(v, f, stabilise="center", density=1100,
youngs_modulus=2e6, damping_ratio=0.1)``), skipped when the file is missing.

Each body starts 0.1 mm above a plane with friction 0.5 and settles on it for 0.15 s (symplectic Euler
at 0.9 x its critical step, one thread).  From that resting state each integrator runs twice: on the
ground, and in free fall (the same state with the plane removed).  Time steps: half the
integrator's critical step for the explicit ones (at 0.9 x, symplectic Euler's resting 1k solid
diverges after some 15 s), 1 ms for xpbd, projective and implicit Euler.
``s.step(h, n)`` with n calibrated to about 0.05 s a call (--quick: 0.02 s), the best of 3 runs taking
turns (the best: the least disturbed by other work on the machine), timed by the clock and by the
process's processor time; on one thread and on the default threads (all cores), the latter only
where it runs on more than one worker (a network of at least 10,000 springs; projective dynamics
always runs on one), and not for implicit Euler (one thread only: its steps on the large solids
take seconds).

``--against PATH`` (repeatable) also measures the checkout at PATH (built in place); each checkout
runs in a process of its own, and the processes take turns row by row, so that the checkouts' rows
are measured at about the same time; the report puts them side by side.  Checks: no node of a
resting body ends below the plane by more than 1e-9 m.  Exit status 1 when a check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
COW = Path(os.environ.get("MSPRINGS_COW", "/work/models/cow.obj"))
SIZES = {"solid-1k": 10, "solid-10k": 22, "solid-50k": 36}  # cells along x and z (half along y)
QUICK_SIZES = {"solid-1k": 10, "solid-10k": 22}
RHO, YOUNGS, ZETA, FRICTION = 1100.0, 2e6, 0.1, 0.5
EXPLICIT = ("symplectic_euler", "explicit_euler", "velocity_verlet", "rk4")
LARGE_STEP = ("xpbd", "projective", "implicit_euler")
LARGE_STEP_H = 1e-3  # s
SETTLE_TIME = 0.15  # s
SINK_TOLERANCE = 1e-9  # m


def bcc_solid(cells: int, size: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and tetrahedra of a box of cells x cells/2 x cells cubes, size (m) along x."""
    dims = (cells, max(1, cells // 2), cells)
    a = size / cells
    corner_grid = np.stack(np.meshgrid(*(np.arange(d + 1) for d in dims), indexing="ij"), -1).reshape(-1, 3)
    centre_grid = np.stack(np.meshgrid(*(np.arange(d) for d in dims), indexing="ij"), -1).reshape(-1, 3) + 0.5
    ncorner = len(corner_grid)

    def corner(p: Sequence[int]) -> int:
        return (p[0] * (dims[1] + 1) + p[1]) * (dims[2] + 1) + p[2]

    def centre(p: Sequence[int]) -> int:
        return ncorner + (p[0] * dims[1] + p[1]) * dims[2] + p[2]

    tets = []
    for axis in range(3):
        u, w = (q for q in range(3) if q != axis)
        for face in np.ndindex(*(dims[q] + (q == axis) for q in range(3))):
            ring = []
            for du, dw in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = list(face)
                p[u] += du
                p[w] += dw
                ring.append(corner(p))
            below = list(face)
            below[axis] -= 1
            cubes = ([centre(below)] if face[axis] > 0 else []) + ([centre(face)] if face[axis] < dims[axis] else [])
            if len(cubes) == 2:
                tets += [(cubes[0], cubes[1], ring[k], ring[(k + 1) % 4]) for k in range(4)]
            else:
                tets += [(cubes[0], ring[0], ring[1], ring[2]), (cubes[0], ring[0], ring[2], ring[3])]
    return np.concatenate([corner_grid, centre_grid]) * a, np.array(tets, dtype=np.int64)


def tet_network(x: np.ndarray, tets: np.ndarray) -> dict[str, np.ndarray]:
    """Springs on the tetrahedra's edges with lumped masses, k = sum E V / L^2, c = 2 zeta sqrt(k mu)."""
    p = x[tets]
    volume = np.abs(np.einsum("ij,ij->i", p[:, 1] - p[:, 0],
                              np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]))) / 6.0
    mass = np.bincount(tets.ravel(), weights=np.repeat(RHO * volume / 4.0, 4), minlength=len(x))
    pairs = np.sort(np.concatenate([tets[:, [i, j]] for i in range(4) for j in range(i + 1, 4)]), axis=1)
    keys, inverse = np.unique(pairs[:, 0] * len(x) + pairs[:, 1], return_inverse=True)
    springs = np.stack([keys // len(x), keys % len(x)], 1)
    edge_volume = np.bincount(inverse.ravel(), weights=np.tile(volume, 6))
    length = np.linalg.norm(x[springs[:, 1]] - x[springs[:, 0]], axis=1)
    k = YOUNGS * edge_volume / length**2
    mu = mass[springs[:, 0]] * mass[springs[:, 1]] / (mass[springs[:, 0]] + mass[springs[:, 1]])
    return {"positions": x, "springs": springs, "mass": mass, "k": k, "c": 2.0 * ZETA * np.sqrt(k * mu)}


def build(msprings: Any, scene: str, cells: int | None) -> Any:
    if scene == "cow":
        from msprings import mesh

        cow = mesh.load_obj(COW, repair=True)
        return mesh.from_mesh(np.asarray(cow.vertices), np.asarray(cow.faces), stabilise="center", density=RHO,
                              youngs_modulus=YOUNGS, damping_ratio=ZETA)
    net = tet_network(*bcc_solid(cells))
    return msprings.System(net["positions"], net["springs"], mass=net["mass"], k=net["k"], c=net["c"])


def resting(msprings: Any, scene: str, cells: int | None) -> Any:
    """The body settled on the ground (one thread)."""
    system = build(msprings, scene, cells)
    system.threads = 1
    x = system.x
    x[:, 1] -= x[:, 1].min() - 1e-4
    del x
    system.add_plane(friction=FRICTION)
    h = 0.9 * system.critical_dt("symplectic_euler")
    system.step(h, int(SETTLE_TIME / h))
    return system


def variant(base: Any, integrator: str, threads: int, ground: bool, h: float) -> Any:
    system = base.copy()
    system.integrator = integrator
    system.threads = threads
    system._checked_step = (h, integrator)  # the stability pre-check was done once, on base
    if not ground:
        for collider in system.colliders:
            system.remove_collider(collider)
    return system


def rates(systems: Sequence[Any], h: float, seconds: float, repeats: int) -> list[tuple[float, float]]:
    """Steps per second of each system, by the clock and by the process's processor time (the
    best of repeats interleaved calls of a calibrated n)."""
    counts = []
    for system in systems:
        system.step(h, 1)  # first-use storage (factorisations, colourings): not part of the calibration
        n = 1
        while True:
            start = time.perf_counter()
            system.step(h, n)
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / 4 or n >= 1 << 20:
                break
            n *= 2
        counts.append(max(1, int(n * seconds / max(elapsed, 1e-9))))
    clock: list[list[float]] = [[] for _ in systems]
    processor: list[list[float]] = [[] for _ in systems]
    for _ in range(repeats if counts[0] > 1 else 2):
        for q, system in enumerate(systems):
            start, used = time.perf_counter(), time.process_time()
            system.step(h, counts[q])
            clock[q].append(counts[q] / (time.perf_counter() - start))
            processor[q].append(counts[q] / max(time.process_time() - used, 1e-9))
    return [(max(c), max(p)) for c, p in zip(clock, processor)]


def rows_of(quick: bool) -> list[tuple[str, int | None, str, int]]:
    """(scene, cells, integrator, threads) of every row, in order."""
    scenes: list[tuple[str, int | None]] = list((QUICK_SIZES if quick else SIZES).items())
    if COW.exists():
        scenes.append(("cow", None))
    integrators = [i for i in EXPLICIT + LARGE_STEP if not (quick and i in ("explicit_euler", "rk4"))]
    return [(scene, cells, integrator, threads) for scene, cells in scenes for integrator in integrators
            for threads in (1, 0)]


def serve(root: str, quick: bool) -> None:
    """Measures the rows the parent asks for, one JSON line each, with msprings from root."""
    sys.path.insert(0, root)
    import msprings

    seconds = 0.02 if quick else 0.05
    bases: dict[str, Any] = {}
    steps: dict[tuple[str, str], float] = {}
    sunk = 0.0
    for line in sys.stdin:
        request = json.loads(line)
        if request is None:
            break
        scene, cells, integrator, threads = request
        if scene not in bases:
            bases.clear()  # one scene's systems at a time
            bases[scene] = resting(msprings, scene, cells)
        base = bases[scene]
        if (scene, integrator) not in steps:
            steps[scene, integrator] = (LARGE_STEP_H if integrator in LARGE_STEP
                                        else 0.5 * base.critical_dt(integrator))
        h = steps[scene, integrator]
        row = {"nodes": base.n_nodes, "springs": base.n_springs, "h": h, "skipped": True}
        if threads == 1 or (base.n_springs >= 10_000 and integrator not in ("projective", "implicit_euler")):
            # threads = 0 is a row of its own only where it runs on more than one worker (and
            # not for implicit Euler, whose Newton steps on the large solids take seconds)
            free, ground = (variant(base, integrator, threads, on, h) for on in (False, True))
            (row["free"], row["free_cpu"]), (row["ground"], row["ground_cpu"]) = rates([free, ground], h, seconds, 3)
            row.update(skipped=False, workers=ground.workers)
            sunk = max(sunk, -float(np.asarray(ground.x)[:, 1].min()))
        row["sunk"] = sunk
        print(json.dumps(row), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller scenes, shorter runs, fewer integrators")
    parser.add_argument("--against", action="append", default=[], metavar="PATH",
                        help="another checkout (built in place) to measure beside this one")
    parser.add_argument("--serve", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, args.quick)
        return 0
    roots = [*(str(Path(p).resolve()) for p in args.against), str(ROOT)]
    # one process per checkout, each asked for the same row in turn, so that a row of every
    # checkout is measured at about the same time (the machine's other work changes)
    command = [sys.executable, __file__, "--serve"]
    workers = [subprocess.Popen(command + [root] + (["--quick"] if args.quick else []), cwd=root,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for root in roots]
    names = [Path(root).name for root in roots]
    table = []
    for request in rows_of(args.quick):
        answers = []
        for worker in workers:
            worker.stdin.write(json.dumps(request) + "\n")
            worker.stdin.flush()
            answers.append(json.loads(worker.stdout.readline()))
        if not answers[0]["skipped"]:
            table.append((request, answers))
    for worker in workers:
        worker.stdin.write("null\n")
        worker.stdin.close()
        worker.wait()
    sunk = [max(answers[q]["sunk"] for _, answers in table) for q in range(len(roots))]
    print(f"# Ground contact against free fall (steps/s), {os.cpu_count()} cores")
    print()
    print("free, ground: steps per second by the clock; ratio: free-fall steps/s over resting steps/s (the cost "
          "of contact; 1 = free); cpu ratio: the same by the process's processor time, steadier when the machine "
          "is busy with other work; threads: the setting and, in brackets, the workers the step ran on.")
    for name, root, depth in zip(names, roots, sunk):
        print(f"- {name}: {root}; deepest node below the plane {depth:.1e} m")
    print()
    head = ["scene", "nodes", "integrator", "threads"]
    for name in names:
        head += [f"{name} free", f"{name} ground", f"{name} ratio", f"{name} cpu ratio"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if q < 3 else "---:" for q in range(len(head))) + "|")
    for (scene, _, integrator, threads), answers in table:
        cells = [scene, f"{answers[0]['nodes']:,}", integrator, f"{threads or 'default'} ({answers[-1]['workers']})"]
        for r in answers:
            cells += [f"{r['free']:,.1f}", f"{r['ground']:,.1f}", f"{r['free'] / r['ground']:.2f}",
                      f"{r['free_cpu'] / r['ground_cpu']:.2f}"]
        print("| " + " | ".join(cells) + " |")
    return 0 if all(depth <= SINK_TOLERANCE for depth in sunk) else 1


if __name__ == "__main__":
    sys.exit(main())
