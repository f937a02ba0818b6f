"""A diverging simulation raises ``msprings.DivergenceError`` and rolls back to the last finite
state.

A stiff spring (omega = sqrt(k/m) = 100 rad/s) is stepped with omega * h far above every
explicit integrator's stability limit, so the amplitude grows by a large factor each step until
a position or velocity overflows; ``System.step`` warns about that step with a
``msprings.StabilityWarning`` first.  Implicit Euler is unconditionally stable and does not
diverge there; it is rolled back only when a step is so large that the arithmetic overflows.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import ContextManager

import numpy as np
import pytest

import msprings

# Implicit Euler is left out of the gradual blow-up: it is unconditionally stable, so at
# HUGE_DT it damps the oscillation instead (test_implicit_euler_does_not_diverge_at_the_huge_step).
EXPLICIT_INTEGRATORS = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4")
INTEGRATOR_NAMES = EXPLICIT_INTEGRATORS + ("implicit_euler",)
STIFFNESS = 1e4  # N/m
MASS = 1.0  # kg: omega = 100 rad/s, critical step 2 / omega = 0.02 s for symplectic Euler
HUGE_DT = 0.5  # omega * h = 50
SAFE_DT = 1e-4  # omega * h = 0.01


def stiff_pair(integrator: str) -> msprings.System:
    """Node 0 pinned at the origin, node 1 free and stretched 0.2 m past the rest length 1 m,
    moving sideways so the motion is not confined to a line; no gravity."""
    return msprings.System(
        [[0.0, 0.0, 0.0], [1.2, 0.0, 0.0]],
        [[0, 1]],
        mass=MASS,
        k=STIFFNESS,
        rest=1.0,
        pinned=[0],
        velocities=[[0.0, 0.0, 0.0], [0.0, 0.5, 0.0]],
        gravity=(0.0, 0.0, 0.0),
        integrator=integrator,
    )


def unstable_step(integrator: str = "symplectic_euler") -> ContextManager[object]:
    """Expects the StabilityWarning that the first step above the explicit ``integrator``'s
    limit issues (implicit Euler has none: nothing is expected)."""
    if integrator == "implicit_euler":
        return contextlib.nullcontext()
    return pytest.warns(msprings.StabilityWarning, match=integrator)


def state_bits(s: msprings.System) -> tuple:
    """The rolled-back part of the state (x, v, t, steps, dissipated), exactly."""
    return (
        s.x.tobytes(),
        s.v.tobytes(),
        float(s.t).hex(),
        int(s.steps),
        float(s.dissipated).hex(),
    )


def test_divergence_error_is_a_floating_point_error() -> None:
    assert issubclass(msprings.DivergenceError, FloatingPointError)
    assert issubclass(msprings.DivergenceError, ArithmeticError)


@pytest.mark.parametrize("integrator", EXPLICIT_INTEGRATORS)
def test_divergence_rolls_back_to_the_last_finite_state(integrator: str) -> None:
    s = stiff_pair(integrator)
    requested = 10_000
    with unstable_step(integrator), pytest.raises(msprings.DivergenceError) as caught:
        s.step(HUGE_DT, requested)
    error = caught.value
    assert isinstance(error, FloatingPointError)
    assert isinstance(error.step, int) and isinstance(error.time, float)

    # the steps before the failing one are kept; the failing one is not
    assert 1 < error.step <= requested
    assert s.steps == error.step - 1
    assert s.t == error.time
    assert math.isclose(error.time, (error.step - 1) * HUGE_DT, rel_tol=1e-12)
    assert str(error.step) in str(error)

    assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
    assert math.isfinite(s.dissipated)
    # the rolled-back state really is on the exploding trajectory, not the initial one
    assert np.abs(s.x[1]).max() > 1e3

    reference = stiff_pair(integrator)
    with unstable_step(integrator):
        reference.step(HUGE_DT, error.step - 1)
    assert state_bits(s) == state_bits(reference)

    # the same failure again, from the rolled-back state: same step reported, nothing changes
    # (and no second warning: it is issued once per system)
    before = state_bits(s)
    with pytest.raises(msprings.DivergenceError) as again:
        s.step(HUGE_DT)
    assert again.value.step == error.step
    assert again.value.time == error.time
    assert state_bits(s) == before


def _with_setup(s: msprings.System, setup: str) -> msprings.System:
    """Turns on something that makes an Euler step act on the state after the integrator
    (and so step through the double buffer instead of in place), without changing the
    blow-up: a little energy loss, or a plane the node never reaches (it moves in z = 0)."""
    if setup == "energy loss":
        s.energy_loss = 1e-3
    elif setup == "collider":
        s.add_plane((0.0, 0.0, -1.0), (0.0, 0.0, 1.0))
    return s


@pytest.mark.parametrize("setup", ["in place", "energy loss", "collider"])
@pytest.mark.parametrize("integrator", ["explicit_euler", "symplectic_euler"])
def test_euler_divergence_rolls_back_in_place_and_double_buffered(integrator: str, setup: str) -> None:
    """The Euler methods check each in-place update before writing it, and step through the
    double buffer when something acts after the integrator: either way a divergence leaves
    exactly the state of the last finite step, and the failing call's own finite steps are
    kept."""
    # explicit Euler warns at any step of an undamped spring: warnings are not the subject
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        s = _with_setup(stiff_pair(integrator), setup)
        s.step(HUGE_DT / 1000.0, 3)  # a stable start, kept by every later failure
        with pytest.raises(msprings.DivergenceError) as caught:
            s.step(HUGE_DT, 10_000)
        finite_steps = caught.value.step - 1
        assert s.steps == finite_steps > 3
        assert np.abs(s.x[1]).max() > 1e3  # on the exploding trajectory
        reference = _with_setup(stiff_pair(integrator), setup)
        reference.step(HUGE_DT / 1000.0, 3)
        reference.step(HUGE_DT, finite_steps - 3)
    assert state_bits(s) == state_bits(reference)


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
def test_stepping_continues_after_lowering_dt(integrator: str) -> None:
    """One overflowing step in the middle of a stable run: after the error, the run goes on with
    a small step exactly as if the big step had never been tried.

    The damper gives zeta = c / (2 sqrt(k m)) = 0.0025, so explicit Euler's limit
    2 zeta / omega = c / k = 5e-5 s is below SAFE_DT: it warns at the first small step (its slow
    growth over 200 steps is harmless here); the others warn at the huge one, implicit Euler
    never.
    """
    s = stiff_pair(integrator)
    s.c[0] = 0.5  # some dissipation, so the rolled-back ledger is non-trivial
    safe_is_stable = integrator != "explicit_euler"
    with contextlib.nullcontext() if safe_is_stable else unstable_step(integrator):
        s.step(SAFE_DT, 50)
    # a step so large that the spring force times dt overflows a double at once
    with unstable_step(integrator) if safe_is_stable else contextlib.nullcontext():
        with pytest.raises(msprings.DivergenceError) as caught:
            s.step(1e307)
    assert caught.value.step == 51
    assert caught.value.time == s.t
    assert s.steps == 50

    s.step(SAFE_DT, 150)
    reference = stiff_pair(integrator)
    reference.c[0] = 0.5
    with contextlib.nullcontext() if safe_is_stable else unstable_step(integrator):
        reference.step(SAFE_DT, 50)
    reference.step(SAFE_DT, 150)
    assert state_bits(s) == state_bits(reference)
    assert s.dissipated > 0.0
    assert s.steps == 200
    assert math.isclose(s.t, 200 * SAFE_DT, rel_tol=1e-12)


def test_error_from_a_stable_system_is_not_raised() -> None:
    """The same spring below its stability limit runs for many periods without error and with
    bounded energy (symplectic Euler)."""
    s = stiff_pair("symplectic_euler")
    start = s.energy().mechanical
    s.step(SAFE_DT, 20_000)  # 32 periods
    assert s.steps == 20_000
    assert s.energy().mechanical == pytest.approx(start, rel=1e-2)


def test_implicit_euler_does_not_diverge_at_the_huge_step() -> None:
    """Where every explicit method overflows, backward Euler stays finite, never gains
    energy and brings the spring to rest at its rest length (the node may keep turning
    slowly about the pin: that motion is not an oscillation and is damped much less)."""
    s = stiff_pair("implicit_euler")
    start = s.energy().mechanical
    previous = start
    for _ in range(20):
        s.step(HUGE_DT, 50)
        assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
        energy = s.energy().mechanical
        assert energy <= previous * (1.0 + 1e-9)
        previous = energy
    assert s.steps == 1000
    assert previous < 0.01 * start
    assert s.energy().spring < 1e-9 * start
    assert s.lengths()[0] == pytest.approx(1.0, rel=1e-5)
