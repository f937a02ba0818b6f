"""Any node numbering: networks numbered at random, and a mesh in its own irregular order, step to
the same bits on 1 to 4 workers, their forces are the plain spring-by-spring sums to round-off,
and a renumbered network moves as the original does."""

from __future__ import annotations

import warnings

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


def twins(integrator: str, side: int = 24, seed: int = 7) -> tuple[msprings.System, msprings.System, np.ndarray]:
    """A flag-like cloth in its grid numbering and the same cloth numbered at random (which
    steps on its renumbered copy), with every mechanism on: triangles in gusty wind, drag, an
    external force, a moving sphere, a moving pin and the integrator's options.  Returns both
    and the new number of each node."""
    positions, springs = cloth(side)
    rows, cols = np.meshgrid(np.arange(side - 1), np.arange(side - 1), indexing="ij")
    a = (rows * side + cols).ravel()
    faces = np.concatenate([np.column_stack([a, a + 1, a + side]), np.column_stack([a + 1, a + side + 1, a + side])])
    shuffled, shuffled_springs, place = renumber(positions, springs, seed)
    rng = np.random.default_rng(3)
    m = len(springs)
    k, c = rng.uniform(40.0, 60.0, m), rng.uniform(0.0, 0.02, m)
    external = rng.normal(0.0, 0.01, positions.shape)
    built = []
    for x, pairs, order in ((positions, springs, np.arange(len(positions))), (shuffled, shuffled_springs, place)):
        s = msprings.System(x, pairs, mass=0.01, k=k, c=c, pinned=[int(order[0]), int(order[side - 1])], drag=0.001,
                            integrator=integrator, faces=order[faces])
        s.wind, s.gust, s.drag_coefficient, s.lift_coefficient = (1.0, 0.0, 0.5), 2.0, 1.0, 0.2
        s.external[order] = external
        s.v[int(order[0])] = (0.0, 0.0, 0.05)  # a pin moving with its velocity
        s.add_sphere((1.1, -0.45, 1.0), 0.4, friction=0.2, velocity=(0.0, 0.5, 0.0))
        s.threads = 2
        built.append(s)
    return built[0], built[1], place


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet", "rk4", "implicit_euler", "xpbd",
                                        "projective"])
def test_a_renumbered_network_with_every_mechanism_moves_and_books_as_the_original(integrator: str) -> None:
    original, renumbered, place = twins(integrator)
    for s, order in ((original, np.arange(original.n_nodes)), (renumbered, place)):
        s.step(2e-3, 40)
        s.mass[:] = 0.012  # parameters written between calls are read again
        s.k[:] *= 1.1
        s.pinned[order[30]] = True
    for s in (original, renumbered):
        s.step(2e-3, 40)
    scale = 1.0 + np.abs(original.x).max()
    assert np.abs(original.x - np.array(original.x)[0]).max() > 0.1  # it moved
    assert np.abs(np.array(renumbered.x)[place] - original.x).max() <= 1e-9 * scale
    assert np.abs(np.array(renumbered.v)[place] - original.v).max() <= 1e-7 * (1.0 + np.abs(original.v).max())
    assert np.abs(np.array(renumbered.f)[place] - original.f).max() <= 1e-7 * (1.0 + np.abs(original.f).max())
    assert renumbered.t == original.t and renumbered.steps == original.steps
    for a, b in zip(renumbered.ledger(), original.ledger()):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-12)
    assert renumbered.colliders[0].center == pytest.approx(original.colliders[0].center, abs=1e-15)
    assert original.ledger().colliders != 0.0 and original.ledger().pins != 0.0 and original.ledger().wind != 0.0


def test_a_renumbered_network_steps_alike_in_one_call_many_calls_and_copies() -> None:
    _, first, _ = twins("symplectic_euler", side=16)
    second, third = first.copy(), first.copy()
    first.step(2e-3, 30)
    for _ in range(30):
        second.step(2e-3)
    third.step(2e-3, 10)
    fourth = third.copy()
    fourth.step(2e-3, 20)
    for s in (second, fourth):
        assert s.x.tobytes() == first.x.tobytes() and s.v.tobytes() == first.v.tobytes()
        assert s.f.tobytes() == first.f.tobytes() and s.ledger() == first.ledger()


def test_a_renumbered_network_that_diverges_is_as_before_the_call() -> None:
    """The renumbered copy steps the call; a failed call leaves the network as it found it,
    and the next call steps from there (the copy is not trusted to hold it), as a copy of the
    network taken before the failed call steps."""
    _, renumbered, _ = twins("symplectic_euler", side=16)
    renumbered.step(2e-3, 10)
    replay = renumbered.copy()
    f = np.array(renumbered.f)
    big = 50.0 * renumbered.critical_dt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        with pytest.raises(msprings.DivergenceError) as caught:
            renumbered.step(big, 5000)
    assert 1 < caught.value.call_step < 5000
    assert np.array_equal(renumbered.f, f)
    assert renumbered.ledger() == replay.ledger() and renumbered.t == replay.t and renumbered.steps == replay.steps
    # no view of x or v in between: the next call has the restored x and v copied in again
    renumbered.step(2e-3, 5)
    replay.step(2e-3, 5)
    assert renumbered.x.tobytes() == replay.x.tobytes() and renumbered.v.tobytes() == replay.v.tobytes()
    assert renumbered.ledger() == replay.ledger()
    # and the failed call itself left x and v as they were
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        with pytest.raises(msprings.DivergenceError):
            renumbered.step(big, 5000)
    assert renumbered.x.tobytes() == replay.x.tobytes() and renumbered.v.tobytes() == replay.v.tobytes()


def test_a_renumbered_network_sees_a_reset_and_writes_to_x_and_v_between_calls() -> None:
    original, renumbered, place = twins("symplectic_euler", side=16)
    fresh = renumbered.copy()
    fresh.reset()  # the model's initial state (without the pin's velocity set after it)
    for s in (original, renumbered):
        s.step(2e-3, 10)
    renumbered.reset()
    renumbered.step(2e-3, 10)
    fresh.step(2e-3, 10)
    assert renumbered.x.tobytes() == fresh.x.tobytes() and renumbered.v.tobytes() == fresh.v.tobytes()
    original, renumbered, place = twins("symplectic_euler", side=16)
    for s in (original, renumbered):
        s.step(2e-3, 10)
    for s, order in ((original, np.arange(original.n_nodes)), (renumbered, place)):
        s.x[order[5]] += (0.0, 0.05, 0.0)
        s.v[order[7]] = (0.3, 0.0, 0.0)
        s.step(2e-3, 10)
    scale = 1.0 + np.abs(original.x).max()
    assert np.abs(np.array(renumbered.x)[place] - original.x).max() <= 1e-12 * scale
    assert np.abs(np.array(renumbered.v)[place] - original.v).max() <= 1e-9 * (1.0 + np.abs(original.v).max())


def test_a_refused_call_keeps_a_reset_and_writes_for_the_next() -> None:
    """A call refused by its checks reads nothing: a reset, or a write through a view since
    dropped, made before it is still seen by the call after it, on a renumbered network too."""
    for positions, springs in (cloth(30), renumber(*cloth(30), seed=3)[:2]):
        s = system(positions, springs, 1)
        fresh = s.copy()
        s.step(2e-4, 200)
        s.reset()
        with pytest.raises(ValueError, match="dt"):
            s.step(float("nan"))
        s.step(2e-4, 3)
        fresh.step(2e-4, 3)
        assert s.x.tobytes() == fresh.x.tobytes() and s.v.tobytes() == fresh.v.tobytes()
        # a write through a view that is then dropped, before a refused call
        expected = s.copy()
        np.asarray(expected.x)[:, 1] += 0.05
        expected.step(2e-4, 2)
        s.x[:, 1] += 0.05  # the view is a temporary, gone after this line
        with pytest.raises(ValueError, match="dt"):
            s.step(float("nan"))
        s.step(2e-4, 2)
        assert s.x.tobytes() == expected.x.tobytes() and s.v.tobytes() == expected.v.tobytes()
        # a bad value written before a refused call is refused by the next
        s.mass[3] = -1.0
        with pytest.raises(ValueError):
            s.step(float("nan"))
        with pytest.raises(ValueError, match="mass"):
            s.step(2e-4)
