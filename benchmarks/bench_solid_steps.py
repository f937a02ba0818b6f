"""Large steps on tetrahedral solids: implicit Euler and projective dynamics beside symplectic Euler.

A solid is a box filled with a body-centred-cubic lattice (cube corners and cube centres) cut into
tetrahedra: for each pair of face-adjacent cubes the 4 tetrahedra (centre, centre, corner k, corner
k + 1) around their shared face, and on the boundary the face's pyramid to its cube's centre cut in
two.  Springs lie on the tetrahedra's edges; each node's mass is a quarter of rho V of every
tetrahedron it belongs to; an edge's stiffness is the sum over its tetrahedra of E V / L^2; each
spring's damper is c = 2 zeta sqrt(k mu) with mu its ends' reduced mass.  Density 1100 kg/m^3,
E = 2e6 Pa, zeta = 0.1, gravity on.

Scenes:
- ``ground``: the box starts 1 cm above a ground plane (restitution 0, friction 0.5), falls, lands and
  settles.
- ``cantilever``: a beam (4 : 1 : 1) with the nodes of its end face pinned, sagging under its weight
  from rest.

Each row runs a solver for a fixed number of steps of size h (after one untimed step, which makes
what the solver keeps from step to step) and reports the mean Newton iterations
and mean CG iterations per step (implicit Euler), wall seconds per simulated second, and the ratio of
that to symplectic Euler at 0.9 times its own critical step (on the same scene, same threads: below 1
the large steps pay).  Threads: "1" (one thread) and "all" (msprings' default).

Run as a script (``--quick`` for fewer sizes and steps); ``--sizes 1000,10000`` picks sizes.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

DENSITY = 1100.0  # kg/m^3
YOUNG = 2e6  # Pa
ZETA = 0.1
GROUND_GAP = 0.0  # m between the solid and the ground at the start


def bcc_box(cells: tuple[int, int, int], size: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """A box of cells[0] x cells[1] x cells[2] cubes (edge a) spanning size, cut into tetrahedra.

    Returns (points (n, 3), tets (t, 4))."""
    nx, ny, nz = cells
    a = np.asarray(size, float) / np.asarray(cells, float)
    gx, gy, gz = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), np.arange(nz + 1), indexing="ij")
    corners = np.stack([gx, gy, gz], -1).reshape(-1, 3) * a
    cx, cy, cz = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    centres = (np.stack([cx, cy, cz], -1).reshape(-1, 3) + 0.5) * a
    ncorner = corners.shape[0]
    points = np.concatenate([corners, centres])

    def corner(i, j, k):
        return (i * (ny + 1) + j) * (nz + 1) + k

    def centre(i, j, k):
        return ncorner + (i * ny + j) * nz + k

    tets = []
    idx = np.stack([cx, cy, cz], -1).reshape(-1, 3)
    i, j, k = idx[:, 0], idx[:, 1], idx[:, 2]
    c = centre(i, j, k)
    # the four corners of each face, in cyclic order, for the face at +axis (upper) and -axis (lower)
    for axis in range(3):
        for upper in (0, 1):
            offs = []
            for u, v in ((0, 0), (1, 0), (1, 1), (0, 1)):
                o = [0, 0, 0]
                o[axis] = upper
                o[(axis + 1) % 3] = u
                o[(axis + 2) % 3] = v
                offs.append(o)
            quad = np.stack([corner(i + o[0], j + o[1], k + o[2]) for o in offs], 1)
            step = np.zeros(3, int)
            step[axis] = 1 if upper else -1
            ni, nj, nk = i + step[0], j + step[1], k + step[2]
            inside = (ni >= 0) & (ni < nx) & (nj >= 0) & (nj < ny) & (nk >= 0) & (nk < nz)
            if upper:  # interior faces once each, from the lower cube: 4 tets around the face
                other = centre(np.clip(ni, 0, nx - 1), np.clip(nj, 0, ny - 1), np.clip(nk, 0, nz - 1))
                for q in range(4):
                    tets.append(np.stack([c, other, quad[:, q], quad[:, (q + 1) % 4]], 1)[inside])
            # boundary faces: the pyramid to the cube's centre, in two tets
            b = ~inside
            tets.append(np.stack([c, quad[:, 0], quad[:, 1], quad[:, 2]], 1)[b])
            tets.append(np.stack([c, quad[:, 0], quad[:, 2], quad[:, 3]], 1)[b])
    return points, np.concatenate(tets)


def solid_parameters(points: np.ndarray, tets: np.ndarray):
    """Springs on the tets' edges, lumped masses, k = sum E V / L^2, zeta-damping."""
    p = points[tets]
    volume = np.abs(np.einsum("ij,ij->i", np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), p[:, 3] - p[:, 0])) / 6.0
    mass = np.zeros(len(points))
    np.add.at(mass, tets.ravel(), np.repeat(DENSITY * volume / 4.0, 4))
    pairs = np.concatenate([tets[:, [a, b]] for a, b in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))])
    pairs.sort(axis=1)
    owner = np.tile(np.arange(len(tets)), 6)
    springs, inverse = np.unique(pairs, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    length2 = np.sum((points[springs[:, 1]] - points[springs[:, 0]]) ** 2, axis=1)
    k = np.zeros(len(springs))
    np.add.at(k, inverse, YOUNG * volume[owner] / length2[inverse])
    mu = mass[springs[:, 0]] * mass[springs[:, 1]] / (mass[springs[:, 0]] + mass[springs[:, 1]])
    c = 2.0 * ZETA * np.sqrt(k * mu)
    return springs.astype(np.int32), mass, k, c


def cells_for(nodes: int, shape: tuple[float, float, float]) -> tuple[int, int, int]:
    """Cube counts with about `nodes` nodes (2 per cube) in a box of proportions shape."""
    volume = shape[0] * shape[1] * shape[2]
    a = (volume / (nodes / 2.0)) ** (1.0 / 3.0)
    return tuple(max(1, round(s / a)) for s in shape)


def make_scene(scene: str, nodes: int, integrator: str = "symplectic_euler"):
    import msprings

    if scene == "ground":
        size = 0.2 if nodes <= 2000 else (0.8 if nodes <= 20000 else 1.7)
        shape = (size, size * 0.5, size)
    else:
        size = 0.4 if nodes <= 2000 else (0.8 if nodes <= 20000 else 1.7)
        shape = (size, size / 4.0, size / 4.0)
    points, tets = bcc_box(cells_for(nodes, shape), shape)
    springs, mass, k, c = solid_parameters(points, tets)
    pinned = None
    if scene == "ground":
        points = points + np.array([0.0, GROUND_GAP, 0.0])
    else:
        pinned = np.flatnonzero(points[:, 0] < 1e-9)
    s = msprings.System(points, springs, mass=mass, k=k, c=c, pinned=pinned, integrator=integrator)
    if scene == "ground":
        s.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), friction=0.5)
    return s


def run_row(scene, nodes, integrator, h, steps, threads, extra=None):
    s = make_scene(scene, nodes, integrator)
    s.threads = threads
    for name, value in (extra or {}).items():
        setattr(s, name, value)
    s.step(h)  # the first step makes what a solver keeps (layout, patterns, factors): not timed
    newton = cg = 0
    wall = 0.0
    if integrator == "implicit_euler":
        for _ in range(steps):
            t0 = time.perf_counter()
            s.step(h)
            wall += time.perf_counter() - t0
            st = s.solver_stats
            newton += st["newton_iterations"]
            cg += st["cg_iterations"]
    else:
        t0 = time.perf_counter()
        s.step(h, steps)
        wall = time.perf_counter() - t0
    if not np.isfinite(s.x).all():
        raise RuntimeError(f"{scene} {nodes} {integrator} h={h}: not finite")
    return dict(n=s.x.shape[0], newton=newton / steps, cg=cg / steps, rate=wall / (steps * h), s=s)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default=None, help="comma-separated node counts")
    parser.add_argument("--scenes", default="ground,cantilever")
    parser.add_argument("--threads", default="1,0", help="comma-separated: 1 = one thread, 0 = default")
    parser.add_argument("--no-projective", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else ([1000, 10000] if args.quick else [1000, 10000, 50000])
    scenes = args.scenes.split(",")
    threads_list = [int(t) for t in args.threads.split(",")]
    import msprings

    print(f"msprings from {os.path.dirname(msprings.__file__)}")
    header = f"{'scene':<10} {'nodes':>6} {'thr':>3} {'solver':<16} {'h (s)':>9} {'newton':>7} {'cg/step':>8} {'wall s/sim s':>12} {'vs symp':>8}"
    print(header)
    print("-" * len(header))
    for nodes in sizes:
        big = nodes >= 30000
        for scene in scenes:
            probe = make_scene(scene, nodes)
            dt_crit = probe.critical_dt()
            del probe
            for threads in threads_list:
                tname = "1" if threads == 1 else "all"
                h_symp = 0.9 * dt_crit
                sim = 0.01 if (args.quick or big) else 0.05
                steps = max(10, int(sim / h_symp))
                ref = run_row(scene, nodes, "symplectic_euler", h_symp, steps, threads)
                print(f"{scene:<10} {ref['n']:>6} {tname:>3} {'symplectic_euler':<16} {h_symp:>9.2e} {'':>7} {'':>8} {ref['rate']:>12.3f} {1.0:>8.2f}", flush=True)
                rows = [("implicit_euler", 1e-3), ("implicit_euler", 1.0 / 60.0)]
                if not args.no_projective:
                    rows += [("projective", 1e-3), ("projective", 1.0 / 60.0)]
                for integrator, h in rows:
                    if integrator == "projective" and threads != 1:
                        continue  # projective runs on one thread
                    if big:
                        steps = 5 if h > 1e-2 else 10
                    else:
                        steps = 10 if (args.quick or h > 1e-2) else 30
                    if args.quick:
                        steps = max(3, steps // 2)
                    try:
                        row = run_row(scene, nodes, integrator, h, steps, threads)
                    except Exception as error:  # noqa: BLE001 - reported in the table
                        print(f"{scene:<10} {nodes:>6} {tname:>3} {integrator:<16} {h:>9.2e} failed: {error}", flush=True)
                        continue
                    newton = f"{row['newton']:.1f}" if integrator == "implicit_euler" else ""
                    cg = f"{row['cg']:.0f}" if integrator == "implicit_euler" else ""
                    print(f"{scene:<10} {row['n']:>6} {tname:>3} {integrator:<16} {h:>9.2e} {newton:>7} {cg:>8} {row['rate']:>12.3f} {row['rate'] / ref['rate']:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
