"""Small scene builders shared by the tests.

The scenes follow BENCH.md: a hanging cloth of N x N nodes with structural, shear and bend
springs pinned at two corners (``cloth-N``, here with any N, spacing and parameters), a chain
of nodes along x pinned at node 0 (``chain-N``), the stiff chain of the implicit-solver
benchmark, and a random free network.  Every builder returns a new :class:`msprings.System`;
keyword arguments not named below are passed on to the constructor unchanged (``gravity``,
``drag``, ``integrator``, ``velocities``, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import msprings


def cloth_positions(n: int, spacing: float) -> np.ndarray:
    """Node positions (n*n, 3) of a flat cloth in the y = 0 plane: node (i, j) = row i,
    column j, index ``i * n + j``, at ``(j * spacing, 0, i * spacing)``."""
    rows, columns = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    positions = np.zeros((n * n, 3))
    positions[:, 0] = columns.ravel() * spacing
    positions[:, 2] = rows.ravel() * spacing
    return positions


def cloth_springs(n: int) -> np.ndarray:
    """Spring index pairs of an n x n cloth, in BENCH.md's order: structural (along rows,
    then along columns), shear (both diagonals), bend (two apart along rows, then columns).
    There are ``2 n (n - 1) + 2 (n - 1)^2 + 2 n (n - 2)`` of them."""

    def node(i: int, j: int) -> int:
        return i * n + j

    pairs: list[tuple[int, int]] = []
    for i in range(n):
        for j in range(n):
            if j + 1 < n:
                pairs.append((node(i, j), node(i, j + 1)))
            if i + 1 < n:
                pairs.append((node(i, j), node(i + 1, j)))
    for i in range(n - 1):
        for j in range(n - 1):
            pairs.append((node(i, j), node(i + 1, j + 1)))
            pairs.append((node(i, j + 1), node(i + 1, j)))
    for i in range(n):
        for j in range(n):
            if j + 2 < n:
                pairs.append((node(i, j), node(i, j + 2)))
            if i + 2 < n:
                pairs.append((node(i, j), node(i + 2, j)))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def cloth_corner_pins(n: int) -> list[int]:
    """Indices of nodes (0, 0) and (0, n - 1), the cloth's two pinned corners."""
    return [0, n - 1]


def cloth(
    n: int,
    spacing: float = 0.625,
    *,
    mass: float = 1.0,
    k: float = 2500.0,
    c: float = 1.0,
    **options: Any,
) -> msprings.System:
    """BENCH.md's hanging cloth with ``n`` nodes a side: springs at rest in the y = 0 plane,
    corners (0, 0) and (0, n - 1) pinned unless ``pinned`` is given, gravity on by default.
    Defaults are the benchmark's (spacing 0.625 m, 1 kg, k = 2500 N/m, c = 1 N s/m)."""
    options.setdefault("pinned", cloth_corner_pins(n))
    return msprings.System(cloth_positions(n, spacing), cloth_springs(n), mass=mass, k=k, c=c, **options)


def chain_positions(n: int, spacing: float) -> np.ndarray:
    """Positions (n, 3) of n nodes on the x axis, ``spacing`` metres apart, from the origin."""
    positions = np.zeros((n, 3))
    positions[:, 0] = np.arange(n) * spacing
    return positions


def chain_springs(n: int) -> np.ndarray:
    """The n - 1 springs (i, i + 1) joining neighbours of an n-node chain."""
    first = np.arange(n - 1)
    return np.stack([first, first + 1], axis=1)


def chain(
    n: int,
    spacing: float = 1.0,
    *,
    mass: float = 1.0,
    k: float = 20.0,
    c: float = 0.3,
    **options: Any,
) -> msprings.System:
    """BENCH.md's chain-N: ``n`` nodes on the x axis joined by springs at rest, node 0 pinned
    unless ``pinned`` is given, gravity on by default.  Defaults are the benchmark's
    (spacing 1 m, 1 kg, k = 20 N/m, c = 0.3 N s/m)."""
    options.setdefault("pinned", [0])
    return msprings.System(chain_positions(n, spacing), chain_springs(n), mass=mass, k=k, c=c, **options)


def stiff_chain(**options: Any) -> msprings.System:
    """BENCH.md's stiff-chain: 100 nodes 0.01 m apart, 0.001 kg, k = 1e5 N/m, c = 0, node 0
    pinned, gravity on, stepped with ``implicit_euler`` unless ``integrator`` is given."""
    options.setdefault("integrator", "implicit_euler")
    return chain(100, 0.01, mass=0.001, k=1e5, c=0.0, **options)


def random_network(
    seed: int,
    n_nodes: int = 8,
    n_springs: int = 16,
    *,
    stretch: float = 0.0,
    speed: float = 0.0,
    **options: Any,
) -> msprings.System:
    """A random 3D network: nodes uniform in the unit cube, ``n_springs`` distinct pairs
    (a spanning path first, so the network is connected, then random extra pairs), masses
    in [0.5, 2] kg, k in [10, 50] N/m, c in [0.05, 0.5] N s/m, gravity off, no pins, all
    unless given in ``options``.  Rest lengths are the initial lengths divided by
    ``1 + stretch`` (so every spring starts with strain ``stretch``); initial velocities are
    normal with standard deviation ``speed`` m/s per component."""
    rng = np.random.default_rng(seed)
    positions = rng.uniform(0.0, 1.0, size=(n_nodes, 3))
    order = rng.permutation(n_nodes)
    pairs = {tuple(sorted((int(a), int(b)))) for a, b in zip(order[:-1], order[1:])}
    max_pairs = n_nodes * (n_nodes - 1) // 2
    if n_springs > max_pairs or n_springs < n_nodes - 1:
        raise ValueError(f"n_springs must be in [{n_nodes - 1}, {max_pairs}] for {n_nodes} nodes")
    while len(pairs) < n_springs:
        a, b = rng.choice(n_nodes, size=2, replace=False)
        pairs.add(tuple(sorted((int(a), int(b)))))
    springs = np.array(sorted(pairs), dtype=np.int64)
    lengths = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    options.setdefault("mass", rng.uniform(0.5, 2.0, size=n_nodes))
    options.setdefault("k", rng.uniform(10.0, 50.0, size=len(springs)))
    options.setdefault("c", rng.uniform(0.05, 0.5, size=len(springs)))
    options.setdefault("rest", lengths / (1.0 + stretch))
    options.setdefault("velocities", rng.normal(0.0, speed, size=(n_nodes, 3)))
    options.setdefault("gravity", (0.0, 0.0, 0.0))
    return msprings.System(positions, springs, **options)


def mechanical_energies(system: msprings.System, dt: float, steps: int) -> np.ndarray:
    """Mechanical energy (J) before the run and after each of ``steps`` single steps of ``dt``."""
    energies = [system.energy().mechanical]
    for _ in range(steps):
        system.step(dt)
        energies.append(system.energy().mechanical)
    return np.array(energies)
