"""Critical time steps, the stability warning and damping ratios.

``critical_dt`` takes the highest angular frequency omega of the network (largest eigenvalue
of M^-1 K) and its highest damping rate (of M^-1 C) and returns the integrator's limit on the
damped oscillator divided by omega: 2 / omega for symplectic Euler and velocity Verlet,
2 sqrt 2 / omega for RK4, 2 zeta / omega for explicit Euler (0 undamped), inf for backward
Euler.  On a chain pinned at one end the frequencies have a closed form.  The limit is then
validated by stepping: just below it symplectic Euler stays bounded, just above it blows up.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

NO_GRAVITY = (0.0, 0.0, 0.0)
MASS = 0.25
STIFFNESS = 40.0

# Chain used for the closed form and the stepping checks: node 0 pinned, 20 free nodes.
CHAIN_FREE_NODES = 20
CHAIN_MASS = 0.1
CHAIN_STIFFNESS = 20.0

# Initial speed scale (m/s) of the stepping checks: small, so that the motion stays linear
# (an instability then grows by many orders of magnitude before large deformations of the
# network change its frequencies and saturate it).
SPEED = 1e-6


def two_nodes(pinned: list[int] | None = None, c: float = 0.0, mass: float = MASS) -> msprings.System:
    """Two nodes 1 m apart on x joined by a spring at rest (k = STIFFNESS), gravity off."""
    return msprings.System(
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], mass=mass, k=STIFFNESS, c=c, pinned=pinned, gravity=NO_GRAVITY
    )


def chain_highest_omega(free_nodes: int, k: float, m: float) -> float:
    """Highest angular frequency (rad/s) of a chain of ``free_nodes`` equal masses joined by
    equal springs, with one end pinned and the other free: the largest of
    omega_j^2 = 4 k/m sin^2((2j - 1) pi / (2 (2N + 1))), j = 1..N."""
    j = np.arange(1, free_nodes + 1)
    omega2 = 4.0 * k / m * np.sin((2 * j - 1) * math.pi / (2 * (2 * free_nodes + 1))) ** 2
    return math.sqrt(float(omega2.max()))


def moving_chain(seed: int, c: float = 0.0) -> msprings.System:
    """The test chain at rest length with small random velocities on its free nodes, gravity off."""
    rng = np.random.default_rng(seed)
    velocities = rng.normal(0.0, SPEED, size=(CHAIN_FREE_NODES + 1, 3))
    velocities[0] = 0.0
    return scenes.chain(
        CHAIN_FREE_NODES + 1,
        0.2,
        mass=CHAIN_MASS,
        k=CHAIN_STIFFNESS,
        c=c,
        gravity=NO_GRAVITY,
        velocities=velocities,
    )


def moving_cloth(seed: int) -> msprings.System:
    """An 8 x 8 cloth at rest length, pinned at two corners, with small random velocities on
    its free nodes, gravity and damping off."""
    n = 8
    rng = np.random.default_rng(seed)
    velocities = rng.normal(0.0, SPEED, size=(n * n, 3))
    velocities[scenes.cloth_corner_pins(n)] = 0.0
    return scenes.cloth(n, 0.1, mass=0.01, k=50.0, c=0.0, gravity=NO_GRAVITY, velocities=velocities)


def energy_extremes(
    system: msprings.System, dt: float, steps: int = 10_000, chunk: int = 100
) -> tuple[float, float, bool]:
    """Steps ``system`` up to ``steps`` times with ``dt`` and returns the smallest and largest
    mechanical energy seen (relative to the start, sampled every ``chunk`` steps) and whether
    it blew up: a DivergenceError, or the energy grew more than 1e6 times."""
    start = system.energy().mechanical
    lowest = highest = 1.0
    for _ in range(steps // chunk):
        try:
            system.step(dt, chunk)
        except msprings.DivergenceError:
            return lowest, highest, True
        ratio = system.energy().mechanical / start
        lowest, highest = min(lowest, ratio), max(highest, ratio)
        if highest > 1e6:
            return lowest, highest, True
    return lowest, highest, False


def symplectic_energy_swing(omega_h: float) -> float:
    """Largest ratio of the undamped energy to its value at another time along a symplectic
    Euler orbit at step omega h: the method conserves x^2 + w^2 - omega h x w (w = v / omega),
    so x^2 + w^2 swings by at most (1 + omega h / 2) / (1 - omega h / 2)."""
    return (1.0 + omega_h / 2.0) / (1.0 - omega_h / 2.0)


# --------------------------------------------------------------------------------------
# Closed forms on one spring


@pytest.mark.parametrize(
    ("integrator", "limit"),
    [("symplectic_euler", 2.0), ("velocity_verlet", 2.0), ("rk4", 2.0 * math.sqrt(2.0))],
)
@pytest.mark.parametrize("pinned", [[0], None])
def test_undamped_spring(integrator: str, limit: float, pinned: list[int] | None) -> None:
    s = two_nodes(pinned=pinned)
    # A pinned end leaves the free mass; two free ends oscillate with the reduced mass m / 2.
    omega = math.sqrt(STIFFNESS / MASS) if pinned else math.sqrt(2.0 * STIFFNESS / MASS)
    assert s.critical_dt(integrator) == pytest.approx(limit / omega, rel=1e-9)


def test_current_integrator_is_the_default() -> None:
    s = two_nodes(pinned=[0])
    s.integrator = "rk4"
    assert s.critical_dt() == s.critical_dt("rk4")
    s.integrator = "velocity_verlet"
    assert s.critical_dt() == s.critical_dt("velocity_verlet")
    with pytest.raises(ValueError, match="integrator"):
        s.critical_dt("leapfrog")


def test_explicit_euler_is_unstable_without_damping_and_implicit_never() -> None:
    s = two_nodes(pinned=[0])
    assert s.critical_dt("explicit_euler") == 0.0
    assert s.critical_dt("implicit_euler") == math.inf
    s.c[:] = 1.0
    assert s.critical_dt("implicit_euler") == math.inf


@pytest.mark.parametrize("zeta", [0.05, 0.3, 0.9])
def test_damped_explicit_euler_limit_is_two_zeta_over_omega(zeta: float) -> None:
    omega = math.sqrt(STIFFNESS / MASS)
    s = two_nodes(pinned=[0], c=2.0 * zeta * math.sqrt(STIFFNESS * MASS))
    assert s.critical_dt("explicit_euler") == pytest.approx(2.0 * zeta / omega, rel=1e-9)
    # Symplectic Euler's damped limit is 2 (sqrt(1 + zeta^2) - zeta) / omega.
    expected = 2.0 * (math.sqrt(1.0 + zeta * zeta) - zeta) / omega
    assert s.critical_dt("symplectic_euler") == pytest.approx(expected, rel=1e-9)


def test_without_springs_or_drag_any_step_is_stable() -> None:
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], np.zeros((0, 2), dtype=int))
    for integrator in msprings.INTEGRATORS:
        assert s.critical_dt(integrator) == math.inf


def test_drag_alone_limits_explicit_steps_to_two_over_its_rate() -> None:
    # v' = (1 - h drag/m) v for both Euler methods: stable while h <= 2 m / drag.
    s = msprings.System([[0.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=2.0, drag=0.5, gravity=NO_GRAVITY)
    assert s.critical_dt("explicit_euler") == pytest.approx(8.0, rel=1e-3)
    assert s.critical_dt("symplectic_euler") == pytest.approx(8.0, rel=1e-3)



@pytest.mark.parametrize("drag", [1e100, 1e200, 1e300])
def test_very_strong_drag_still_gives_two_over_its_rate_and_warns(drag: float) -> None:
    """Rates beyond about 1e154 1/s overflow the Lanczos estimate (it squares them); the
    limit then comes from the Gershgorin bound, which for drag alone is the rate itself,
    and a step above it still warns instead of failing."""
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], mass=2.0, drag=drag)
    assert s.critical_dt("symplectic_euler") == pytest.approx(4.0 / drag, rel=1e-3)
    assert s.critical_dt("explicit_euler") == pytest.approx(4.0 / drag, rel=1e-3)
    with pytest.warns(msprings.StabilityWarning, match="exceeds the stability limit"):
        s.step(1e-3)


# --------------------------------------------------------------------------------------
# The chain pinned at one end: closed-form highest frequency


@pytest.mark.parametrize("free_nodes", [1, 2, 7, 20, 60])
def test_chain_highest_frequency_matches_the_closed_form(free_nodes: int) -> None:
    s = scenes.chain(free_nodes + 1, 0.2, mass=CHAIN_MASS, k=CHAIN_STIFFNESS, c=0.0, gravity=NO_GRAVITY)
    omega = chain_highest_omega(free_nodes, CHAIN_STIFFNESS, CHAIN_MASS)
    omega2, gamma = s._max_eigenvalues()
    assert omega2 == pytest.approx(omega**2, rel=1e-9)
    assert gamma == 0.0
    assert s.critical_dt("symplectic_euler") == pytest.approx(2.0 / omega, rel=1e-9)
    assert s.critical_dt("rk4") == pytest.approx(2.0 * math.sqrt(2.0) / omega, rel=1e-9)


def test_uniformly_damped_chain_pairs_highest_frequency_with_highest_damping() -> None:
    ratio = 0.01  # c / k (s), the same on every spring
    s = scenes.chain(
        CHAIN_FREE_NODES + 1, 0.2, mass=CHAIN_MASS, k=CHAIN_STIFFNESS, c=ratio * CHAIN_STIFFNESS, gravity=NO_GRAVITY
    )
    omega = chain_highest_omega(CHAIN_FREE_NODES, CHAIN_STIFFNESS, CHAIN_MASS)
    # C = (c / k) K: the highest mode has the damping rate (c / k) omega^2, zeta = (c / k) omega / 2.
    zeta = ratio * omega / 2.0
    omega2, gamma = s._max_eigenvalues()
    assert gamma == pytest.approx(ratio * omega**2, rel=1e-9)
    expected = 2.0 * (math.sqrt(1.0 + zeta * zeta) - zeta) / omega
    assert s.critical_dt("symplectic_euler") == pytest.approx(expected, rel=1e-9)
    assert s.critical_dt("explicit_euler") == pytest.approx(2.0 * zeta / omega, rel=1e-9)


# --------------------------------------------------------------------------------------
# Stepping just below and just above the limit


SCENES = {"chain": moving_chain, "cloth": moving_cloth}


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_symplectic_euler_is_bounded_just_below_the_critical_step(scene: str) -> None:
    s = SCENES[scene](seed=1)
    dt = 0.95 * s.critical_dt("symplectic_euler")
    lowest, highest, blew_up = energy_extremes(s, dt)
    swing = symplectic_energy_swing(1.9)
    assert not blew_up
    assert s.steps == 10_000
    assert highest <= swing and lowest >= 1.0 / swing


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_symplectic_euler_blows_up_just_above_the_critical_step(scene: str) -> None:
    s = SCENES[scene](seed=1)
    dt = 1.05 * s.critical_dt("symplectic_euler")
    with pytest.warns(msprings.StabilityWarning):
        _, _, blew_up = energy_extremes(s, dt)
    assert blew_up


def test_damping_aware_limit_on_a_lightly_damped_chain() -> None:
    omega = chain_highest_omega(CHAIN_FREE_NODES, CHAIN_STIFFNESS, CHAIN_MASS)
    c = 0.4 * CHAIN_STIFFNESS / omega  # zeta = 0.2 on the highest mode
    limit = moving_chain(seed=2, c=c).critical_dt("symplectic_euler")
    # The damping lowers the limit well below the undamped 2 / omega ...
    assert limit < 0.85 * 2.0 / omega

    below = moving_chain(seed=2, c=c)
    start = below.energy().mechanical
    _, highest, blew_up = energy_extremes(below, 0.95 * limit)
    assert not blew_up
    assert highest <= symplectic_energy_swing(1.9)
    # The dampers drain the axial motion (the sideways swing of the chain has no damper).
    assert below.energy().mechanical < start
    assert below.energy().dissipated > 0.2 * start

    # ... and that lower limit is the real one: 5 % above it, still below 2 / omega, blows up.
    above = moving_chain(seed=2, c=c)
    assert 1.05 * limit < 2.0 / omega
    with pytest.warns(msprings.StabilityWarning):
        _, _, blew_up = energy_extremes(above, 1.05 * limit)
    assert blew_up


# --------------------------------------------------------------------------------------
# The StabilityWarning


def stability_warnings(record: list[warnings.WarningMessage]) -> int:
    """How many of the recorded warnings are StabilityWarnings."""
    return sum(issubclass(w.category, msprings.StabilityWarning) for w in record)


def test_warned_once_per_system_above_the_limit() -> None:
    first, second = two_nodes(pinned=[0]), two_nodes(pinned=[0])
    first.x[1, 0] += 1e-3
    second.x[1, 0] += 1e-3
    dt = 1.05 * first.critical_dt("symplectic_euler")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(5):
            first.step(dt)
        first.step(1.1 * dt, 2)
        assert stability_warnings(record) == 1
        second.step(dt)
        second.step(dt)
        assert stability_warnings(record) == 2
    assert len(record) == 2
    message = str(record[0].message)
    assert "symplectic_euler" in message and "critical_dt" in message


def test_warned_when_switching_to_an_integrator_whose_limit_is_exceeded() -> None:
    s = two_nodes(pinned=[0])
    s.x[1, 0] += 1e-3
    # 2.5 / omega is stable for RK4 (limit 2 sqrt 2) but not for velocity Verlet (limit 2).
    dt = 2.5 / math.sqrt(STIFFNESS / MASS)
    s.integrator = "rk4"
    s.step(dt, 3)
    s.integrator = "velocity_verlet"
    with pytest.warns(msprings.StabilityWarning, match="velocity_verlet"):
        s.step(dt)


def test_no_warning_below_the_limit() -> None:
    s = moving_chain(seed=3)
    dt = 0.9 * s.critical_dt("symplectic_euler")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        s.step(dt, 50)
        s.step(dt)
    assert record == []


def test_no_warning_for_implicit_euler_at_any_step() -> None:
    s = moving_chain(seed=3, c=0.1)
    s.integrator = "implicit_euler"
    dt = 100.0 * moving_chain(seed=3, c=0.1).critical_dt("symplectic_euler")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        s.step(dt, 20)
    assert record == []
    assert np.all(np.isfinite(s.x))


def test_explicit_euler_without_damping_warns_at_any_step() -> None:
    s = two_nodes(pinned=[0])
    s.integrator = "explicit_euler"
    with pytest.warns(msprings.StabilityWarning, match="explicit_euler"):
        s.step(1e-6)


# --------------------------------------------------------------------------------------
# Damping ratios


def test_damping_ratio_uses_the_reduced_mass_or_the_free_mass() -> None:
    masses = np.array([1.0, 3.0, 2.0, 5.0])
    springs = [[0, 1], [1, 2], [2, 3], [3, 1], [2, 0]]
    k = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    c = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    positions = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 1]]
    s = msprings.System(positions, springs, mass=masses, k=k, c=c, pinned=[0, 3])
    zeta = s.damping_ratio()
    # [0, 1]: 0 pinned -> m_1.  [1, 2]: both free -> m_1 m_2 / (m_1 + m_2).
    # [2, 3], [3, 1]: the free end's mass.  [2, 0]: m_2.
    reduced = np.array([3.0, 3.0 * 2.0 / 5.0, 2.0, 3.0, 2.0])
    np.testing.assert_allclose(zeta, c / (2.0 * np.sqrt(k * reduced)), rtol=1e-14)
    both = msprings.System(positions, springs, mass=masses, k=k, c=c, pinned=[0, 1])
    assert math.isnan(both.damping_ratio()[0])
    assert np.all(np.isfinite(both.damping_ratio()[1:]))


@pytest.mark.parametrize("zeta", [0.0, 0.2, 1.0, 2.5])
def test_damping_for_ratio_round_trip(zeta: float) -> None:
    s = scenes.random_network(seed=9, n_nodes=7, n_springs=12, pinned=[2])
    s.c[:] = s.damping_for_ratio(zeta)
    np.testing.assert_allclose(s.damping_ratio(), zeta, rtol=1e-14, atol=1e-15)
    per_spring = np.linspace(0.1, 1.5, s.n_springs)
    s.c[:] = s.damping_for_ratio(per_spring)
    np.testing.assert_allclose(s.damping_ratio(), per_spring, rtol=1e-14)


def released_spring(zeta: float) -> msprings.System:
    """One free node on a spring to a pinned node, released at rest 0.1 m beyond the rest
    length (1 m), with damping ratio ``zeta``, gravity off, stepped with RK4."""
    s = msprings.System(
        [[0.0, 0.0, 0.0], [1.1, 0.0, 0.0]],
        [[0, 1]],
        mass=MASS,
        k=STIFFNESS,
        rest=1.0,
        pinned=[0],
        gravity=NO_GRAVITY,
        integrator="rk4",
    )
    s.c[:] = s.damping_for_ratio(zeta)
    return s


def test_critical_damping_reaches_rest_without_overshoot() -> None:
    u0, omega, h = 0.1, math.sqrt(STIFFNESS / MASS), 1e-3
    s = released_spring(1.0)
    assert s.damping_ratio()[0] == pytest.approx(1.0, rel=1e-14)
    for step in range(1, 2001):
        s.step(h)
        t = step * h
        u = s.x[1, 0] - 1.0
        assert u > 0.0
        assert abs(u - u0 * (1.0 + omega * t) * math.exp(-omega * t)) <= 1e-9 * u0
    # Slightly under critical damping, the same start does overshoot past the rest length.
    under = released_spring(0.8)
    lowest = math.inf
    for _ in range(200):
        under.step(h, 10)
        lowest = min(lowest, under.x[1, 0] - 1.0)
    assert lowest < -1e-3 * u0


def test_module_damping_for_ratio_formula() -> None:
    assert msprings.damping_for_ratio(1.0, 40.0, 0.25) == pytest.approx(2.0 * math.sqrt(40.0 * 0.25))
    # Two free ends: the reduced mass.
    assert msprings.damping_for_ratio(0.5, 40.0, 2.0, 3.0) == pytest.approx(2.0 * 0.5 * math.sqrt(40.0 * 1.2))
    assert msprings.damping_for_ratio(0.5, 40.0, 2.0, math.inf) == msprings.damping_for_ratio(0.5, 40.0, 2.0)
    zeta = np.array([0.1, 0.5, 1.0])
    k = np.array([10.0, 20.0, 30.0])
    np.testing.assert_allclose(msprings.damping_for_ratio(zeta, k, 2.0, 2.0), 2.0 * zeta * np.sqrt(k * 1.0))
    assert msprings.damping_for_ratio(0.0, 40.0, 1.0) == 0.0


@pytest.mark.parametrize(
    "arguments",
    [
        (-0.1, 40.0, 1.0),
        (math.nan, 40.0, 1.0),
        (0.5, -1.0, 1.0),
        (0.5, math.nan, 1.0),
        (0.5, 40.0, -1.0),
        (0.5, 40.0, math.nan),
        (0.5, 40.0, 1.0, -2.0),
        (0.5, 40.0, 0.0),
        ([0.5, -0.5], 40.0, 1.0),
    ],
)
def test_module_damping_for_ratio_rejects_bad_input(arguments: tuple) -> None:
    with pytest.raises(ValueError):
        msprings.damping_for_ratio(*arguments)
