"""Any node numbering: networks numbered at random, and a mesh in its own irregular order, step to
the same bits on 1 to 4 workers, their forces are the plain spring-by-spring sums to round-off,
and a renumbered network moves as the original does."""

from __future__ import annotations

import numpy as np
import pytest

import msprings
from msprings import mesh

DT = 2e-4


def cloth(side: int) -> tuple[np.ndarray, np.ndarray]:
    """A side x side cloth 0.1 m apart with structural, shear and bend springs."""
    rows, cols = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    positions = np.column_stack([0.1 * cols.ravel(), np.zeros(side * side), 0.1 * rows.ravel()])
    node = np.arange(side * side).reshape(side, side)
    pairs = ((node[:, :-1], node[:, 1:]), (node[:-1, :], node[1:, :]), (node[:-1, :-1], node[1:, 1:]),
             (node[:-1, 1:], node[1:, :-1]), (node[:, :-2], node[:, 2:]), (node[:-2, :], node[2:, :]))
    return positions, np.concatenate([np.column_stack([a.ravel(), b.ravel()]) for a, b in pairs])


def sphere() -> tuple[np.ndarray, np.ndarray]:
    """An icosphere of 2562 nodes, radius 2 m, with edge and bend springs (15,360: several workers)."""
    m = mesh.icosphere(4, radius=2.0)
    springs = np.concatenate([mesh.unique_edges(m.faces), mesh.interior_edge_opposites(m.faces).opposites])
    return np.asarray(m.vertices, dtype=float), springs


def renumber(positions: np.ndarray, springs: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The network with its nodes numbered at random, and the new number of each old node."""
    place = np.random.default_rng(seed).permutation(len(positions))
    return positions[np.argsort(place)], place[springs], place


def system(positions: np.ndarray, springs: np.ndarray, threads: int) -> msprings.System:
    """A damped network with random per-spring values and velocities, its first node pinned."""
    rng = np.random.default_rng(11)
    m = len(springs)
    s = msprings.System(positions, springs, mass=0.01, k=rng.uniform(50.0, 80.0, m), c=rng.uniform(0.0, 0.01, m),
                        pinned=[int(springs[0, 0])], velocities=rng.normal(0.0, 0.1, positions.shape), drag=0.001)
    s.threads = threads
    return s


SCENES = {
    "shuffled cloth": lambda: renumber(*cloth(72), seed=3)[:2],
    "icosphere": sphere,
    "shuffled icosphere": lambda: renumber(*sphere(), seed=4)[:2],
}


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_every_worker_count_gives_the_same_bits(scene: str) -> None:
    positions, springs = SCENES[scene]()
    ends = []
    for threads in (1, 2, 3, 4):
        s = system(positions, springs, threads)
        s.step(DT, 30)
        assert s.workers == threads
        ends.append((s.x.tobytes(), s.v.tobytes(), s.f.tobytes(), s.ledger()))
    assert all(end == ends[0] for end in ends[1:])


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_forces_are_the_plain_spring_by_spring_sums(scene: str) -> None:
    positions, springs = SCENES[scene]()
    s = system(positions, springs, threads=2)
    s.step(DT, 20)  # stretched and moving
    x, v = np.array(s.x), np.array(s.v)
    expected = np.array(s.mass)[:, None] * np.asarray(s.gravity) - s.drag * v
    i, j = springs[:, 0], springs[:, 1]
    d = x[j] - x[i]
    length = np.linalg.norm(d, axis=1)
    unit = d / length[:, None]
    tension = s.k * (length - s.rest) + s.c * np.einsum("ij,ij->i", v[j] - v[i], unit)
    np.add.at(expected, i, tension[:, None] * unit)
    np.add.at(expected, j, -tension[:, None] * unit)
    forces = s.update_forces()
    scale = np.abs(expected).max()
    assert np.abs(forces - expected).max() <= 1e-12 * scale
    assert np.abs(tension).max() > 1e-3 * scale  # the springs matter


def test_a_renumbered_network_moves_as_the_original() -> None:
    positions, springs = cloth(72)
    shuffled, shuffled_springs, place = renumber(positions, springs, seed=5)
    original = system(positions, springs, threads=2)
    renumbered = msprings.System(shuffled, shuffled_springs, mass=0.01, k=np.array(original.k),
                                 c=np.array(original.c), pinned=[int(place[springs[0, 0]])],
                                 velocities=np.array(original.v)[np.argsort(place)], drag=0.001)
    renumbered.threads = 2
    original.step(DT, 200)
    renumbered.step(DT, 200)
    moved = np.abs(original.x - positions).max()
    assert moved > 1e-3
    assert np.abs(np.array(renumbered.x)[place] - original.x).max() <= 1e-12 * (1.0 + np.abs(positions).max())
