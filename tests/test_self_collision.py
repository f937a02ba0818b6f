"""Self-collision: nodes closer than ``self_collision`` that no spring joins are pushed apart.

After each step, a close pair (i, j) is moved apart along the line between them to distance d,
each node by its share of the inverse mass (the centre of mass stays put), and the velocity
with which they approach along that line is removed by equal and opposite impulses (momentum
is conserved).  Two particles give exact answers; a folded cloth checked against all pairs in
NumPy shows it keeps layers apart, which it does not do without self-collision.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import msprings
from msprings import scenes as builders

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

NO_SPRINGS = np.zeros((0, 2), dtype=np.int64)
NO_GRAVITY = (0.0, 0.0, 0.0)


def unjoined_pairs(n_nodes: int, springs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j), i < j, of every pair of nodes that no spring joins."""
    joined = np.zeros((n_nodes, n_nodes), dtype=bool)
    joined[springs[:, 0], springs[:, 1]] = True
    joined |= joined.T
    first, second = np.triu_indices(n_nodes, 1)
    keep = ~joined[first, second]
    return first[keep], second[keep]


def closest_unjoined(x: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]) -> float:
    """Smallest distance (m) between the nodes of any pair in ``pairs``."""
    return float(np.linalg.norm(x[pairs[1]] - x[pairs[0]], axis=1).min())


# ---- two particles, exact -------------------------------------------------------------------------


def two_particles(x0: tuple[float, float, float], x1: tuple[float, float, float],
                  v0: tuple[float, float, float], v1: tuple[float, float, float], *, masses: tuple[float, float],
                  distance: float, pinned: list[int] | None = None) -> msprings.System:
    """Two unconnected nodes, gravity off, self-collision at ``distance``."""
    s = msprings.System([x0, x1], NO_SPRINGS, mass=list(masses), velocities=[v0, v1], gravity=NO_GRAVITY,
                        pinned=pinned)
    s.self_collision = distance
    return s


def test_head_on_pair_is_pushed_to_exactly_d_and_stops_approaching() -> None:
    """Masses 1 and 3 approaching along x: after a step their free-flight positions are closer
    than d = 0.1, so they are pushed apart to exactly 0.1 about their centre of mass, and both
    move on with the centre-of-mass velocity (the approach is fully removed)."""
    dt, d = 0.01, 0.1
    s = two_particles((0.0, 0.0, 0.0), (0.09, 0.0, 0.0), (1.0, 0.0, 0.0), (-2.0, 0.0, 0.0), masses=(1.0, 3.0),
                      distance=d)
    s.step(dt)
    free_flight = np.array([[0.01, 0.0, 0.0], [0.07, 0.0, 0.0]])
    centre = (1.0 * free_flight[0] + 3.0 * free_flight[1]) / 4.0
    centre_velocity = (1.0 * 1.0 + 3.0 * -2.0) / 4.0
    assert np.linalg.norm(s.x[1] - s.x[0]) == pytest.approx(d, abs=1e-15)
    np.testing.assert_allclose((s.x[0] + 3.0 * s.x[1]) / 4.0, centre, rtol=0, atol=1e-15)
    # the light node moves three times as far as the heavy one
    np.testing.assert_allclose(s.x[0], centre - (0.75 * d, 0.0, 0.0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.x[1], centre + (0.25 * d, 0.0, 0.0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.v, [[centre_velocity, 0.0, 0.0]] * 2, rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.momentum(), (1.0 * 1.0 + 3.0 * -2.0, 0.0, 0.0), rtol=0, atol=1e-14)


def test_oblique_pair_against_reference() -> None:
    """Random masses, positions and velocities of a close pair: after one step (free flight,
    then the push and impulse along the line between the free-flight positions, computed here
    in NumPy) the pair is d apart, its centre of mass and momentum are those of free flight, its
    relative normal velocity is zero and its relative tangential velocity is unchanged."""
    rng = np.random.default_rng(2)
    dt, d = 0.005, 0.2
    for _ in range(10):
        masses = rng.uniform(0.2, 3.0, size=2)
        x = np.array([[0.0, 0.0, 0.0], rng.normal(size=3)])
        x[1] *= 0.1 / np.linalg.norm(x[1])
        v = np.array([x[1], -x[1]]) * 20.0 + rng.normal(scale=0.3, size=(2, 3))  # approaching
        s = msprings.System(x, NO_SPRINGS, mass=masses, velocities=v, gravity=NO_GRAVITY)
        s.self_collision = d
        s.step(dt)
        flight = x + dt * v
        gap = flight[1] - flight[0]
        normal = gap / np.linalg.norm(gap)
        approach = (v[1] - v[0]) @ normal
        assert np.linalg.norm(gap) < d and approach < 0.0
        inverse = 1.0 / masses
        expected_x = flight + np.outer([-inverse[0], inverse[1]], normal) * (d - np.linalg.norm(gap)) / inverse.sum()
        impulse = -approach / inverse.sum()
        expected_v = v + np.outer([-inverse[0], inverse[1]], normal) * impulse
        np.testing.assert_allclose(s.x, expected_x, rtol=0, atol=1e-14)
        np.testing.assert_allclose(s.v, expected_v, rtol=0, atol=1e-14)
        assert np.linalg.norm(s.x[1] - s.x[0]) == pytest.approx(d, abs=1e-14)
        np.testing.assert_allclose(masses @ s.x, masses @ flight, rtol=0, atol=1e-14)
        np.testing.assert_allclose(s.momentum(), masses @ v, rtol=0, atol=1e-14)
        relative = s.v[1] - s.v[0]
        assert relative @ normal == pytest.approx(0.0, abs=1e-14)
        tangential = (v[1] - v[0]) - approach * normal
        np.testing.assert_allclose(relative - (relative @ normal) * normal, tangential, rtol=0, atol=1e-14)


def test_separating_pair_is_pushed_apart_but_keeps_its_velocities() -> None:
    """A close pair already moving apart is only moved: no impulse."""
    s = two_particles((0.0, 0.0, 0.0), (0.02, 0.0, 0.0), (-0.5, 0.0, 0.0), (0.5, 0.0, 0.0), masses=(2.0, 2.0),
                      distance=0.1)
    s.step(0.01)
    np.testing.assert_allclose(s.x, [[-0.04, 0.0, 0.0], [0.06, 0.0, 0.0]], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(s.v, [[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]])


def test_pinned_partner_takes_none_of_the_push() -> None:
    """Against a pinned node (inverse mass 0) the free node takes the whole push and its
    approach is removed; the pinned node does not move."""
    s = two_particles((0.0, 0.0, 0.0), (0.05, 0.0, 0.0), (0.0, 0.0, 0.0), (-1.0, 0.7, 0.0), masses=(1.0, 1.0),
                      distance=0.1, pinned=[0])
    s.step(0.01)
    np.testing.assert_array_equal(s.x[0], 0.0)
    np.testing.assert_array_equal(s.v[0], 0.0)
    free_flight = np.array([0.04, 0.007, 0.0])
    np.testing.assert_allclose(s.x[1], 0.1 * free_flight / np.linalg.norm(free_flight), rtol=0, atol=1e-15)
    assert s.v[1] @ free_flight == pytest.approx(0.0, abs=1e-15)


def test_far_pairs_anywhere_in_space_are_found() -> None:
    """Isolated close pairs scattered over a large region (negative coordinates, far from the
    origin, many hash cells apart) are each pushed to exactly d; lone nodes do not move."""
    rng = np.random.default_rng(9)
    d = 0.05
    centres = rng.uniform(-3000.0, 3000.0, size=(40, 3))
    offsets = rng.normal(size=(40, 3))
    offsets *= (0.3 * d / 2.0) / np.linalg.norm(offsets, axis=1, keepdims=True)
    loners = rng.uniform(-3000.0, 3000.0, size=(20, 3))
    positions = np.vstack([centres - offsets, centres + offsets, loners])
    s = msprings.System(positions, NO_SPRINGS, gravity=NO_GRAVITY)
    s.self_collision = d
    s.step(1e-3)
    gaps = np.linalg.norm(s.x[40:80] - s.x[:40], axis=1)
    np.testing.assert_allclose(gaps, d, rtol=0, atol=1e-11)
    np.testing.assert_allclose((s.x[40:80] + s.x[:40]) / 2.0, centres, rtol=0, atol=1e-11)
    np.testing.assert_array_equal(s.x[80:], loners)


def resolve_pair(x: np.ndarray, v: np.ndarray, inverse_mass: np.ndarray, i: int, j: int, d: float) -> None:
    """NumPy version of one close-pair resolution, in place: push i and j apart along their
    line to distance d in proportion to their inverse masses, and remove their approaching
    normal velocity with equal and opposite impulses."""
    gap = x[j] - x[i]
    length = np.linalg.norm(gap)
    if length >= d:
        return
    normal = gap / length
    share = (d - length) / (inverse_mass[i] + inverse_mass[j])
    approach = (v[j] - v[i]) @ normal
    impulse = -approach / (inverse_mass[i] + inverse_mass[j]) if approach < 0.0 else 0.0
    x[i] -= inverse_mass[i] * share * normal
    x[j] += inverse_mass[j] * share * normal
    v[i] -= inverse_mass[i] * impulse * normal
    v[j] += inverse_mass[j] * impulse * normal


def test_nodes_joined_by_a_spring_are_never_pushed() -> None:
    """Nodes 0 and 1 are joined by a spring with no stiffness or damping: they pass through
    each other exactly as in free flight.  Node 2, joined to neither, placed within d of both,
    is resolved against node 0 and then node 1 (node order), while the pair (0, 1) is left
    alone, whatever its distance."""
    positions = [[0.0, 0.0, 0.0], [0.04, 0.0, 0.0], [0.02, 0.5, 0.0]]
    velocities = [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    masses = np.array([1.0, 2.0, 0.5])
    s = msprings.System(positions, [[0, 1]], k=0.0, c=0.0, mass=masses, velocities=velocities, gravity=NO_GRAVITY)
    s.self_collision = 0.1
    s.step(0.01, 4)
    np.testing.assert_allclose(s.x[:2], [[0.04, 0.0, 0.0], [0.0, 0.0, 0.0]], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(s.v[:2], velocities[:2])
    s.x[2] = (0.02, 0.01, 0.0)  # now within d of both ends of the spring
    x, v = np.array(s.x), np.array(s.v)
    h = 1e-6
    x += h * v
    for i, j in [(0, 2), (1, 2)]:
        resolve_pair(x, v, 1.0 / masses, i, j, 0.1)
    s.step(h)
    np.testing.assert_allclose(s.x, x, rtol=0, atol=1e-14)
    np.testing.assert_allclose(s.v, v, rtol=0, atol=1e-14)
    assert np.linalg.norm(s.x[1] - s.x[0]) < 0.1


# ---- conservation ---------------------------------------------------------------------------------


def crowd(seed: int, self_collision: float | None) -> msprings.System:
    """40 free nodes of random mass crowded in a 0.4 m box, flying about at ~1 m/s, with a few
    soft damped springs between random pairs; gravity off."""
    rng = np.random.default_rng(seed)
    n = 40
    pairs = np.array(sorted({tuple(sorted(rng.choice(n, size=2, replace=False))) for _ in range(15)}))
    s = msprings.System(rng.uniform(0.0, 0.4, size=(n, 3)), pairs, mass=rng.uniform(0.1, 2.0, size=n), k=5.0,
                        c=0.2, velocities=rng.normal(size=(n, 3)), gravity=NO_GRAVITY)
    s.self_collision = self_collision
    return s


def test_momentum_and_centre_of_mass_of_a_free_crowd() -> None:
    """Self-collision impulses are equal and opposite and the pushes keep the centre of mass,
    so a free crowd's momentum stays at its initial value and its centre of mass moves in a
    straight line at P / M (symplectic Euler moves it by exactly h P / M per step)."""
    dt, steps = 1e-3, 300
    s = crowd(1, 0.08)
    mass = np.array(s.mass)
    p0 = s.momentum()
    c0 = mass @ s.x / mass.sum()
    for step in range(1, steps + 1):
        s.step(dt)
        np.testing.assert_allclose(s.momentum(), p0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mass @ s.x / mass.sum(), c0 + steps * dt * p0 / mass.sum(), rtol=0, atol=1e-12)
    unconstrained = crowd(1, None)
    unconstrained.step(dt, steps)
    assert np.abs(unconstrained.x - s.x).max() > 1e-2  # the collisions did change the motion
    pairs = unjoined_pairs(s.n_nodes, np.array(s.springs))
    assert closest_unjoined(np.array(unconstrained.x), pairs) < 0.08


def test_kinetic_energy_removed_is_booked() -> None:
    """The impulses are perfectly inelastic: the relative kinetic energy they remove is added
    to ``dissipated``.  With no springs, drag or gravity, mechanical + dissipated is constant."""
    s = crowd(4, 0.1)
    s.k[:] = 0.0
    s.c[:] = 0.0
    initial = s.energy().total
    s.step(1e-3, 500)
    assert s.energy().dissipated > 0.01 * initial
    assert s.energy().total == pytest.approx(initial, abs=1e-12)


# ---- a cloth folded onto itself ----------------------------------------------------------------------

FOLD_N = 12
FOLD_SPACING = 0.1
FOLD_DISTANCE = 0.075


def folded_cloth(self_collision: float | None) -> msprings.System:
    """A 12 x 12 cloth (0.1 m spacing, 10 g nodes, k = 50 N/m, rest lengths of the flat sheet)
    folded in half: rows 0-5 lie flat on the ground (y = 0), rows 6-11 lie 0.15 m above them,
    mirrored, so row 11 is over row 0.  Gravity drops the top half onto the bottom half."""
    n, h = FOLD_N, FOLD_SPACING
    flat = scenes.cloth_positions(n, h)
    springs = scenes.cloth_springs(n)
    rest = np.linalg.norm(flat[springs[:, 1]] - flat[springs[:, 0]], axis=1)
    positions = flat.copy()
    rows = np.arange(n * n) // n
    top = rows >= n // 2
    positions[top, 2] = (n - 1 - rows[top]) * h
    positions[top, 1] = 0.15
    s = msprings.System(positions, springs, rest=rest, mass=0.01, k=50.0, c=0.05)
    s.add_plane(friction=0.5)
    s.self_collision = self_collision
    return s


def run_fold(self_collision: float | None, steps: int = 800, every: int = 10) -> tuple[msprings.System, float]:
    """Steps the folded cloth (h = 2 ms); returns it and the closest approach of unjoined nodes
    seen at every ``every``-th step."""
    s = folded_cloth(self_collision)
    pairs = unjoined_pairs(s.n_nodes, np.array(s.springs))
    closest = math.inf
    for _ in range(steps // every):
        s.step(2e-3, every)
        closest = min(closest, closest_unjoined(np.array(s.x), pairs))
    return s, closest


def test_folded_cloth_keeps_its_layers_apart() -> None:
    """With self-collision at d = 7.5 cm (more than half a cell's diagonal, so a node cannot
    slip between the four nodes of a cell) the top half lands on the bottom half and stays on
    it: at the end no two unjoined nodes are closer than d (to 2 %), never much closer during
    the fall, and the top layer lies above the bottom one.  Without self-collision the top half
    falls through the bottom half to the ground, and unjoined nodes come far closer than d."""
    d = FOLD_DISTANCE
    s, closest = run_fold(d)
    pairs = unjoined_pairs(s.n_nodes, np.array(s.springs))
    assert closest_unjoined(np.array(s.x), pairs) >= 0.98 * d
    assert closest >= 0.9 * d
    rows = np.arange(s.n_nodes) // FOLD_N
    top, bottom = rows >= FOLD_N // 2 + 1, rows <= FOLD_N // 2 - 2  # away from the seam
    assert s.x[top, 1].min() > s.x[bottom, 1].max() + 0.5 * d
    loose, closest_loose = run_fold(None)
    assert closest_loose < 0.5 * d
    assert loose.x[top, 1].min() <= 1e-12  # the top half reached the ground
    assert np.abs(loose.x[bottom, 1]).max() <= 1e-12


def test_runs_are_deterministic() -> None:
    """Two systems built alike, a copy, and a reset-and-rerun all end bitwise identical."""
    first = folded_cloth(FOLD_DISTANCE)
    second = folded_cloth(FOLD_DISTANCE)
    third = first.copy()
    for s in (first, second, third):
        s.step(2e-3, 300)
    np.testing.assert_array_equal(first.x, second.x)
    np.testing.assert_array_equal(first.v, second.v)
    np.testing.assert_array_equal(first.x, third.x)
    assert first.dissipated == second.dissipated == third.dissipated
    x, v = np.array(first.x), np.array(first.v)
    first.reset()
    first.step(2e-3, 300)
    np.testing.assert_array_equal(first.x, x)
    np.testing.assert_array_equal(first.v, v)


# ---- the setting ---------------------------------------------------------------------------------------


def test_setting_reads_back_and_turns_off() -> None:
    """``self_collision`` reads back as a float; 0 and None turn it off (reads 0.0)."""
    s = msprings.System([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0]], NO_SPRINGS, gravity=NO_GRAVITY)
    assert s.self_collision == 0.0
    s.self_collision = 0.25
    assert s.self_collision == 0.25
    s.self_collision = None
    assert s.self_collision == 0.0
    s.step(0.01)
    np.testing.assert_array_equal(s.x, [[0.0, 0.0, 0.0], [0.01, 0.0, 0.0]])  # off: nothing pushed
    s.self_collision = 1
    s.step(0.01)
    assert np.linalg.norm(s.x[1] - s.x[0]) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("value, error", [(-0.1, ValueError), (math.nan, ValueError), (math.inf, ValueError),
                                          (-math.inf, ValueError), (1e100, ValueError), ("far", TypeError),
                                          ((0.1, 0.2), TypeError)])
def test_bad_values_are_refused(value: object, error: type[Exception]) -> None:
    """A bad distance raises and leaves the setting and the state unchanged."""
    s = msprings.System([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0]], NO_SPRINGS, gravity=NO_GRAVITY)
    s.self_collision = 0.05
    with pytest.raises(error):
        s.self_collision = value
    assert s.self_collision == 0.05
    np.testing.assert_array_equal(s.x, [[0.0, 0.0, 0.0], [0.01, 0.0, 0.0]])


LARGEST = 1e6  # m: the largest self-collision distance


@pytest.mark.parametrize("value", [1e100, 1e300, math.nextafter(LARGEST, math.inf), 2.0 * LARGEST])
def test_distances_beyond_the_largest_are_refused_before_anything_changes(value: float) -> None:
    """A distance beyond 1e6 m is refused by the setter with a ValueError that names the
    option and its range; the setting, the state and the ledger stay as they were, and the
    system steps on as before."""
    s = builders.cloth(6, size=0.5)
    s.self_collision = 0.02
    s.step(1e-3, 5)
    x, v, ledger = s.x.copy(), s.v.copy(), s.ledger()
    with pytest.raises(ValueError, match=r"self_collision = .* must be in \[0, 1e\+06\]"):
        s.self_collision = value
    assert s.self_collision == 0.02
    np.testing.assert_array_equal(s.x, x)
    np.testing.assert_array_equal(s.v, v)
    assert s.ledger() == ledger
    s.step(1e-3, 5)
    assert np.isfinite(s.x).all()


def test_the_range_is_the_option_tables() -> None:
    """The option table gives the same closed range [0, 1e6] m as the check."""
    row = next(option for option in msprings._core.OPTIONS if option.name == "self_collision")
    assert (row.low, row.high, row.low_open, row.high_open) == (0.0, LARGEST, False, False)


def test_the_largest_distance_acts_beyond_the_systems_extent_and_the_next_is_refused() -> None:
    """1e6 m, far larger than the cloth, is accepted: all its nodes fall in a few cells of the
    grid (whose size does not depend on the distance), the step pushes the unjoined pairs
    apart over the distance and the ledger still closes.  The next double is refused.  The
    cloth's nodes and springs are taken without its triangles: with them, the self-contact
    sweep would send back every node whose push passes through the sheet."""
    cloth = builders.cloth(5, size=0.4)
    s = msprings.System(cloth.x, cloth.springs, mass=cloth.mass, k=cloth.k, c=cloth.c, rest=cloth.rest,
                        pinned=np.flatnonzero(cloth.pinned), integrator="rk4")
    start = s.energy()
    s.self_collision = LARGEST
    s.step(1e-3)
    assert np.isfinite(s.x).all() and np.isfinite(s.v).all()
    assert np.ptp(s.x, axis=0).max() > 0.5 * LARGEST
    assert s.ledger().constraints > 0.0
    assert s.energy().total == pytest.approx(start.total, rel=1e-9)
    with pytest.raises(ValueError, match="self_collision"):
        s.self_collision = math.nextafter(LARGEST, math.inf)
    assert s.self_collision == LARGEST


def test_a_state_that_overflows_in_the_triangle_test_diverges_and_is_not_out_of_memory() -> None:
    """A cloth 1e80 m across: the node-triangle test's products of lengths overflow to
    non-finite values.  The step reports a divergence and rolls back; running out of memory
    is for allocations only."""
    s = builders.cloth(6, size=0.5)
    s.x[:] = s.x * 2e80
    s.self_collision = 0.05
    x = s.x.copy()
    with pytest.raises(msprings.DivergenceError):
        s.step(1e-3)
    np.testing.assert_array_equal(s.x, x)
    assert s.steps == 0


# ---- node-triangle ---------------------------------------------------------------------


def _triangle_and_particle(velocity_y: float, pinned: list[int] | None = None) -> msprings.System:
    """A horizontal triangle of three 1 kg corners at y = 0 and a 1 kg particle just above
    its interior; no springs join the particle to the triangle, no gravity."""
    positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.25, 0.01, 0.25]]
    velocities = [[0.0, 0.0, 0.0]] * 3 + [[0.0, velocity_y, 0.0]]
    return msprings.System(positions, [[0, 1], [1, 2], [2, 0]], faces=[[0, 1, 2]], pinned=pinned,
                           velocities=velocities, gravity=(0.0, 0.0, 0.0), k=100.0)


def test_node_is_kept_off_a_triangle_between_its_corners() -> None:
    """A particle falling onto the interior of a pinned triangle -- far from every corner, so
    node-node repulsion alone would let it through -- stops at exactly the distance."""
    s = _triangle_and_particle(-1.0, pinned=[0, 1, 2])
    s.self_collision = 0.05
    s.step(1e-3, 100)
    assert s.x[3, 1] == pytest.approx(0.05, abs=1e-12)
    np.testing.assert_allclose(s.v[3], 0.0, atol=1e-12)
    np.testing.assert_array_equal(s.x[:3], _triangle_and_particle(0.0).x[:3])
    without = _triangle_and_particle(-1.0, pinned=[0, 1, 2])
    without.step(1e-3, 100)
    assert without.x[3, 1] < -0.05


def test_node_triangle_push_splits_by_barycentric_weight_and_conserves_momentum() -> None:
    """Free triangle and particle: one step of contact matches the closed form of the
    barycentric split (generalised inverse mass 1 + sum w_i^2) and keeps momentum."""
    s = _triangle_and_particle(-2.0)
    s.self_collision = 0.05
    p0 = s.momentum()
    dt = 1e-3
    s.step(dt, 1)
    # before the contact the particle is at y = 0.01 - 2 dt = 0.008, inside the distance
    weights = np.array([0.5, 0.25, 0.25])  # barycentric weights of (0.25, 0.25) in the triangle
    total = 1.0 + np.sum(weights**2)
    push = (0.05 - 0.008) / total
    assert s.x[3, 1] == pytest.approx(0.008 + push, abs=1e-12)
    np.testing.assert_allclose(s.x[:3, 1], -weights * push, atol=1e-12)
    impulse = 2.0 / total  # the approach speed 2 m/s is removed along the normal
    assert s.v[3, 1] == pytest.approx(-2.0 + impulse, abs=1e-12)
    np.testing.assert_allclose(s.v[:3, 1], -weights * impulse, atol=1e-12)
    np.testing.assert_allclose(s.momentum(), p0, atol=1e-12)
    relative = s.v[3, 1] - weights @ s.v[:3, 1]
    assert relative == pytest.approx(0.0, abs=1e-12)
