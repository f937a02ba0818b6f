"""Strain limiting (Provot 1995): after each step, every spring longer than (1 + tau) L is
shortened to (1 + tau) L in one pass over the springs in order, each end moving in proportion
to its inverse mass, and the moved nodes' velocities change by displacement / h.

A soft cloth hanging from two corners stretches far beyond its rest length near the pins (the
"super-elastic" effect); with the limit on, no spring stays much longer than (1 + tau) L.  The
correction leaves springs below the limit, the centre of mass and the momentum untouched.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

TAU = 0.1
NO_GRAVITY = (0.0, 0.0, 0.0)


def soft_cloth() -> msprings.System:
    """A 12 x 12 cloth, 0.1 m spacing, 0.01 kg nodes and soft springs (k = 50 N/m), lightly
    damped so it settles within a few seconds, hanging from two corners."""
    return scenes.cloth(12, 0.1, mass=0.01, k=50.0, c=0.05, drag=0.02)


def settle(system: msprings.System) -> None:
    """Four seconds of symplectic Euler at h = 1 ms: long enough for the soft cloth to hang."""
    system.step(1e-3, 4000)


def single_spring(
    mass_i: float = 1.0, mass_j: float = 1.0, pinned: list[int] | None = None
) -> tuple[msprings.System, np.ndarray]:
    """Two nodes 1.5 m apart along the direction (0.6, 0.8, 0) with a spring of rest length
    1 m and no stiffness, gravity off: the integrator leaves them in place, so the strain
    limit alone moves them.  Returns the system and the spring's unit direction."""
    direction = np.array([0.6, 0.8, 0.0])
    origin = np.array([0.2, -0.1, 0.3])
    s = msprings.System(
        [origin, origin + 1.5 * direction],
        [[0, 1]],
        mass=[mass_i, mass_j],
        k=0.0,
        rest=1.0,
        pinned=pinned,
        gravity=NO_GRAVITY,
    )
    s.strain_limit = TAU
    return s, direction


def limit_in_numpy(system: msprings.System, x: np.ndarray, v: np.ndarray, h: float, tau: float) -> None:
    """The strain-limiting pass written out in NumPy, applied to (x, v) in place: springs in
    order, each shortened to (1 + tau) L if longer, ends moved by inverse mass."""
    inverse_mass = np.where(system.pinned, 0.0, 1.0 / system.mass)
    for (i, j), rest in zip(system.springs, system.rest):
        weight = inverse_mass[i] + inverse_mass[j]
        d = x[j] - x[i]
        length = float(np.linalg.norm(d))
        if weight == 0.0 or not length > (1.0 + tau) * rest:
            continue
        excess = (length - (1.0 + tau) * rest) / (length * weight)
        move_i, move_j = inverse_mass[i] * excess * d, -inverse_mass[j] * excess * d
        x[i] += move_i
        x[j] += move_j
        v[i] += move_i / h
        v[j] += move_j / h


# --------------------------------------------------------------------------------------
# The hanging cloth


def test_limit_removes_the_super_elastic_stretch_of_a_hanging_cloth() -> None:
    plain = soft_cloth()
    settle(plain)
    strain = plain.strain()
    touches_pin = plain.pinned[plain.springs].any(axis=1)
    # Without limiting: the springs at the two pinned corners carry the whole cloth and
    # stretch far beyond 10 %, much more than a typical spring.
    assert strain[touches_pin].max() > 0.3
    assert strain.max() == strain[touches_pin].max()
    assert np.median(strain) < 0.1

    limited = soft_cloth()
    limited.strain_limit = TAU
    settle(limited)
    limited_strain = limited.strain()
    assert np.all(np.isfinite(limited.x))
    # One pass per step is not exact, but no spring stays much above the limit ...
    assert limited_strain.max() <= 0.13
    assert limited_strain.max() < 0.4 * strain.max()
    # ... and the springs at the pins are held right at it: the cloth still hangs on them.
    assert limited_strain[touches_pin].max() >= TAU - 0.005
    # Limiting makes the cloth stiffer: its far corner hangs higher than without.
    assert limited.x[-1, 1] > plain.x[-1, 1]


def test_strain_limit_none_restores_plain_behaviour_bitwise() -> None:
    plain = soft_cloth()
    toggled = soft_cloth()
    assert toggled.strain_limit is None
    toggled.strain_limit = TAU
    assert toggled.strain_limit == TAU
    toggled.step(1e-3, 300)
    assert toggled.strain().max() <= 0.13
    toggled.strain_limit = None
    assert toggled.strain_limit is None
    toggled.reset()
    plain.step(1e-3, 300)
    toggled.step(1e-3, 300)
    assert plain.strain().max() > 2 * TAU
    assert np.array_equal(toggled.x, plain.x)
    assert np.array_equal(toggled.v, plain.v)
    assert toggled.dissipated == plain.dissipated


@pytest.mark.parametrize("integrator", ["symplectic_euler", "rk4", "implicit_euler"])
def test_springs_below_the_limit_are_untouched(integrator: str) -> None:
    tau = 0.5
    plain = scenes.random_network(seed=7, n_nodes=10, n_springs=20, speed=0.1, integrator=integrator)
    limited = plain.copy()
    limited.strain_limit = tau
    largest = 0.0
    for _ in range(20):
        plain.step(1e-2, 10)
        limited.step(1e-2, 10)
        largest = max(largest, plain.strain().max())
    assert 0.01 < largest < tau
    assert np.array_equal(limited.x, plain.x)
    assert np.array_equal(limited.v, plain.v)


# --------------------------------------------------------------------------------------
# One spring: how the ends move


def test_free_spring_with_equal_masses_is_shortened_symmetrically() -> None:
    s, direction = single_spring()
    start = s.x.copy()
    h = 0.01
    s.step(h)
    assert s.lengths()[0] == pytest.approx(1.0 + TAU, rel=1e-14)
    displacement = s.x - start
    np.testing.assert_allclose(displacement[0], 0.2 * direction, atol=1e-14)
    np.testing.assert_allclose(displacement[1], -0.2 * direction, atol=1e-14)
    np.testing.assert_allclose(s.x.mean(axis=0), start.mean(axis=0), atol=1e-15)
    np.testing.assert_allclose(s.v, displacement / h, rtol=1e-12)


def test_ends_move_in_proportion_to_inverse_mass() -> None:
    s, direction = single_spring(mass_i=1.0, mass_j=3.0)
    start = s.x.copy()
    s.step(0.01)
    displacement = s.x - start
    # The 0.4 m excess is split 3 : 1, the light node moving more; the centre of mass stays.
    np.testing.assert_allclose(displacement[0], 0.3 * direction, atol=1e-14)
    np.testing.assert_allclose(displacement[1], -0.1 * direction, atol=1e-14)
    np.testing.assert_allclose(s.mass @ s.x, s.mass @ start, atol=1e-14)


@pytest.mark.parametrize("pinned_end", [0, 1])
def test_with_a_pinned_end_only_the_free_end_moves(pinned_end: int) -> None:
    s, direction = single_spring(pinned=[pinned_end])
    start = s.x.copy()
    h = 0.02
    s.step(h)
    free_end = 1 - pinned_end
    sign = 1.0 if free_end == 0 else -1.0
    assert np.array_equal(s.x[pinned_end], start[pinned_end])
    assert np.array_equal(s.v[pinned_end], np.zeros(3))
    np.testing.assert_allclose(s.x[free_end] - start[free_end], sign * 0.4 * direction, atol=1e-14)
    np.testing.assert_allclose(s.v[free_end], sign * 0.4 * direction / h, rtol=1e-12)
    assert s.lengths()[0] == pytest.approx(1.0 + TAU, rel=1e-14)


def test_spring_between_two_pinned_nodes_is_left_alone() -> None:
    s, _ = single_spring(pinned=[0, 1])
    start = s.x.copy()
    s.step(0.01)
    assert np.array_equal(s.x, start)
    assert np.array_equal(s.v, np.zeros((2, 3)))


# --------------------------------------------------------------------------------------
# A network: the pass, the velocity correction and conservation


def stretched_pair(seed: int, **options: object) -> tuple[msprings.System, msprings.System]:
    """A free random network whose springs all start 50 % stretched, moving, and its copy
    with strain limiting on; gravity off."""
    plain = scenes.random_network(seed=seed, n_nodes=9, n_springs=18, stretch=0.5, speed=0.5, **options)
    limited = plain.copy()
    limited.strain_limit = TAU
    return plain, limited


def test_velocity_correction_is_displacement_over_h() -> None:
    plain, limited = stretched_pair(seed=2)
    h = 0.005
    plain.step(h)
    limited.step(h)
    displacement = limited.x - plain.x
    assert np.abs(displacement).max() > 1e-3
    np.testing.assert_allclose(limited.v - plain.v, displacement / h, rtol=0, atol=1e-11)


def test_one_pass_over_the_springs_in_order() -> None:
    plain, limited = stretched_pair(seed=3, pinned=[0, 4])
    h = 0.005
    plain.step(h)
    limited.step(h)
    x, v = plain.x.copy(), plain.v.copy()
    limit_in_numpy(plain, x, v, h, TAU)
    np.testing.assert_allclose(limited.x, x, rtol=0, atol=1e-14)
    np.testing.assert_allclose(limited.v, v, rtol=0, atol=1e-11)
    # The last spring of the pass is exactly at the limit; earlier ones may have been pulled
    # again by later corrections, which is why one pass is not exact.
    assert limited.strain()[-1] == pytest.approx(TAU, abs=1e-13)
    assert limited.strain().max() > TAU + 1e-3


@pytest.mark.parametrize(
    ("integrator", "position_tolerance"),
    # Backward Euler conserves momentum only to its Newton tolerance (1e-8 relative), and the
    # two runs take different paths, so their centres of mass agree to that accuracy only.
    [("symplectic_euler", 1e-12), ("velocity_verlet", 1e-12), ("implicit_euler", 1e-8)],
)
def test_momentum_and_centre_of_mass_are_conserved_by_the_correction(
    integrator: str, position_tolerance: float
) -> None:
    plain, limited = stretched_pair(seed=5, integrator=integrator)
    h = 0.005
    for _ in range(20):
        plain.step(h)
        limited.step(h)
    scale = float(np.abs(limited.mass[:, None] * limited.v).sum())
    assert np.abs(limited.x - plain.x).max() > 1e-3
    np.testing.assert_allclose(limited.momentum(), plain.momentum(), rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(limited.mass @ limited.x, plain.mass @ plain.x, rtol=0, atol=position_tolerance)


# --------------------------------------------------------------------------------------
# Settings


@pytest.mark.parametrize(
    ("value", "error"),
    [(-0.1, ValueError), (math.nan, ValueError), (math.inf, ValueError), ("a", TypeError), (0.1j, TypeError)],
)
def test_bad_strain_limit_raises_and_leaves_the_setting_unchanged(value: object, error: type) -> None:
    s = soft_cloth()
    with pytest.raises(error, match="strain_limit"):
        s.strain_limit = value
    assert s.strain_limit is None
    s.strain_limit = 0.25
    with pytest.raises(error, match="strain_limit"):
        s.strain_limit = value
    assert s.strain_limit == 0.25


def test_zero_strain_limit_makes_springs_inextensible() -> None:
    s = scenes.chain(6, 0.2, mass=0.1, k=20.0, c=0.0)
    s.strain_limit = 0
    assert s.strain_limit == 0.0
    s.step(1e-3, 500)
    # The chain falls and swings, and its last spring never ends longer than its rest length.
    assert s.x[-1, 1] < -0.2
    assert s.strain()[-1] <= 1e-12
