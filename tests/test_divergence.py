"""A diverging simulation raises ``msprings.DivergenceError``, and the step call that diverged is
undone: the system is exactly as it was before the call (all or nothing).

A stiff spring (omega = sqrt(k/m) = 100 rad/s) is stepped with omega * h far above every
explicit integrator's stability limit, so the amplitude grows by a large factor each step until
a position or velocity overflows; ``System.step`` warns about that step with a
``msprings.StabilityWarning`` first.  Implicit Euler is unconditionally stable and does not
diverge there; its call is undone only when a step is so large that the arithmetic overflows.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import ContextManager

import numpy as np
import pytest

import msprings
from msprings import scenes

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
    """Everything a step call changes (x, v, f, t, steps, the ledger with a pending change of
    the caller, the solver's counts, where the colliders are), exactly."""
    return (
        s.x.tobytes(),
        s.v.tobytes(),
        s.f.tobytes(),
        float(s.t).hex(),
        int(s.steps),
        tuple(float(value).hex() for value in s.ledger()),
        tuple(sorted(s.solver_stats.items())),
        tuple(np.asarray(c.center).tobytes() for c in s.colliders),
    )


def test_divergence_error_is_a_floating_point_error() -> None:
    assert issubclass(msprings.DivergenceError, FloatingPointError)
    assert issubclass(msprings.DivergenceError, ArithmeticError)


@pytest.mark.parametrize("integrator", EXPLICIT_INTEGRATORS)
def test_divergence_undoes_the_call(integrator: str) -> None:
    s = stiff_pair(integrator)
    with unstable_step(integrator) if integrator == "explicit_euler" else contextlib.nullcontext():
        s.step(SAFE_DT, 3)  # a start the failed call must leave as it is
    before = state_bits(s)
    requested = 10_000
    with unstable_step(integrator) if integrator != "explicit_euler" else contextlib.nullcontext():
        with pytest.raises(msprings.DivergenceError) as caught:
            s.step(HUGE_DT, requested)
    error = caught.value
    assert isinstance(error, FloatingPointError)
    assert state_bits(s) == before  # all or nothing

    # the step that blew up: which of the call, counted as steps counts, and when
    assert isinstance(error.step, int) and isinstance(error.call_step, int) and isinstance(error.time, float)
    assert 1 < error.call_step <= requested
    assert error.step == 3 + error.call_step
    reached = s.t
    for _ in range(error.call_step):
        reached += HUGE_DT
    assert error.time == reached
    assert error.dt == HUGE_DT
    assert error.critical_dt == pytest.approx(s.critical_dt(integrator), rel=1e-9)

    # the message: the blow-up in numbers, where the system is, and the stable limit
    message = str(error)
    assert f"blew up at t = {error.time:.6g} s (step {error.call_step} of this call, dt = 0.5 s)" in message
    assert f"as it was before the call (t = {s.t:.6g} s)" in message
    if integrator == "explicit_euler":  # undamped: no dt is stable
        assert "unstable at any dt" in message
    else:
        assert f"stable limit of about {error.critical_dt:.2g} s" in message and "smaller dt" in message

    # the same failure again, from the same state: the same report, nothing changes
    with pytest.raises(msprings.DivergenceError) as again:
        s.step(HUGE_DT, requested)
    assert (again.value.step, again.value.call_step, again.value.time) == (error.step, error.call_step, error.time)
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
def test_euler_divergence_is_undone_in_place_and_double_buffered(integrator: str, setup: str) -> None:
    """The Euler methods step in place, or through the double buffer when something acts after
    the integrator: either way a diverged call leaves the system as it found it, and stepping
    on gives what a copy taken before the call gives."""
    # explicit Euler warns at any step of an undamped spring: warnings are not the subject
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        s = _with_setup(stiff_pair(integrator), setup)
        s.step(HUGE_DT / 1000.0, 3)  # a stable start
        reference = s.copy()
        before = state_bits(s)
        with pytest.raises(msprings.DivergenceError) as caught:
            s.step(HUGE_DT, 10_000)
        assert caught.value.call_step > 3
        assert state_bits(s) == before
        s.step(HUGE_DT / 1000.0, 5)
        reference.step(HUGE_DT / 1000.0, 5)
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
    assert caught.value.step == 51 and caught.value.call_step == 1
    assert caught.value.time == s.t + 1e307
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


# ---- all or nothing -------------------------------------------------------------------------

ALL_INTEGRATORS = msprings.INTEGRATORS


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
@pytest.mark.parametrize("integrator", ALL_INTEGRATORS)
def test_a_write_of_1e155_then_a_step_leaves_everything_as_before(integrator: str) -> None:
    """The caller's write is booked as ledger.user when a call starts; a call that then blows up
    leaves that change pending again, so the ledger (inf in user, not nan), x, v and t are
    exactly as after the write."""
    s = scenes.chain(11, integrator=integrator)
    s.step(1e-4, 3)
    s.x[1, 0] = 1e155
    before = state_bits(s)
    assert math.isinf(s.ledger().user)
    with pytest.raises(msprings.DivergenceError) as caught:
        s.step(1e-4)
    assert caught.value.call_step == 1 and caught.value.step == 4
    assert state_bits(s) == before
    with pytest.raises(msprings.DivergenceError):
        s.step(1e-4, 5)
    assert state_bits(s) == before
    assert "overflowed" in str(caught.value)  # dt is stable: the values are to blame


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_a_blown_up_chain_stays_usable() -> None:
    """After a blow-up the system is where the call began: its energy is finite, and later
    steps go on as a copy taken before the call does."""
    s = scenes.chain(11, k=20.0, c=0.3)  # the references' soft chain blows up slowly at 0.5 s
    s.step(1e-3, 100)
    reference = s.copy()
    energy = s.energy()
    with pytest.raises(msprings.DivergenceError) as caught:
        s.step(0.5, 1000)
    assert caught.value.call_step > 100  # it blew up long after the call began
    assert s.energy() == energy and math.isfinite(s.energy().total)
    assert np.abs(s.x).max() < 20.0
    s.step(1e-3, 200)
    reference.step(1e-3, 200)
    assert state_bits(s) == state_bits(reference)


def blowing_up(integrator: str, plane: bool) -> tuple[msprings.System, float]:
    """A system and a dt at which it blows up long after a call begins.  The explicit methods
    step the stiff pair far above their stable limit.  The large-step solvers are stable at any
    dt, so node 1 instead flies off at 1e151 m/s on a spring too weak to hold it (k = 1e-300):
    its energy overflows a double after about 1,300 steps of 1 s.  With ``plane`` a moving
    plane far below (never reached) makes the Euler methods step through the double buffer,
    and must be back where it was after a failed call."""
    if integrator in EXPLICIT_INTEGRATORS:
        s, dt = stiff_pair(integrator), HUGE_DT
    else:
        s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], k=1e-300, pinned=[0],
                            velocities=[[0.0, 0.0, 0.0], [1e151, 0.0, 0.0]], gravity=(0.0, 0.0, 0.0),
                            integrator=integrator)
        dt = 1.0
    if plane:
        s.add_plane((0.0, -1e3, 0.0), (0.0, 1.0, 0.0), velocity=(0.0, -1.0, 0.0))
    return s, dt


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning", "ignore::msprings.SolverWarning")
@pytest.mark.parametrize("plane", [False, True], ids=["no collider", "moving plane"])
@pytest.mark.parametrize("integrator", ALL_INTEGRATORS)
def test_every_integrator_undoes_a_call_of_many_steps(integrator: str, plane: bool) -> None:
    s, dt = blowing_up(integrator, plane)
    s.step(1e-3, 2)
    reference = s.copy()
    before = state_bits(s)
    with pytest.raises(msprings.DivergenceError) as caught:
        s.step(dt, 100_000)
    assert caught.value.call_step > 10
    assert state_bits(s) == before
    s.step(1e-3, 3)
    reference.step(1e-3, 3)
    assert state_bits(s) == state_bits(reference)


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_a_long_call_made_in_chunks_is_undone_as_a_whole() -> None:
    """A long call runs in chunks (Ctrl-C is noticed between them); a blow-up in a later chunk
    undoes the earlier chunks too.  100,000 idle nodes make a chunk 499 steps; the stiff pair
    (omega h = 2.1 with symplectic Euler) blows up after about 1,000."""
    idle = 100_000
    positions = np.zeros((idle + 2, 3))
    positions[:idle, 2] = np.arange(idle)
    positions[idle:] = [[0.0, 5.0, 0.0], [1.1, 5.0, 0.0]]
    s = msprings.System(positions, [[idle, idle + 1]], k=1e4, rest=1.0, pinned=[idle], gravity=(0.0, 0.0, 0.0))
    s.step(1e-4, 2)
    before = state_bits(s)
    with pytest.raises(msprings.DivergenceError) as caught:
        s.step(0.021, 5000)
    assert caught.value.call_step > 500
    assert state_bits(s) == before


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_a_recording_run_is_undone_as_a_whole() -> None:
    s = scenes.chain(11)
    s.add_sphere((0.0, -40.0, 0.0), 1.0, velocity=(0.0, 1.0, 0.0))
    s.step(1e-3, 10)
    before = state_bits(s)
    with pytest.raises(msprings.DivergenceError) as caught:
        s.run(0.5, 1000, record_every=7)
    assert caught.value.call_step > 7 and "of this run" in str(caught.value)
    assert f"before the run (t = {s.t:.6g} s)" in str(caught.value)
    assert state_bits(s) == before


def test_a_recording_run_interrupted_between_records_is_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C between two of a recording's step calls: the system is as the run found it."""
    s = scenes.chain(11)
    s.step(1e-3, 10)
    before = state_bits(s)
    record_state = msprings.System._record_state
    records = []

    def interrupted(self: msprings.System, *arguments: object) -> None:
        records.append(self.steps)
        if len(records) == 4:
            raise KeyboardInterrupt
        record_state(self, *arguments)

    monkeypatch.setattr(msprings.System, "_record_state", interrupted)
    with pytest.raises(KeyboardInterrupt):
        s.run(1e-3, 100, record_every=5)
    assert records[-1] == 25  # three calls had stepped
    assert state_bits(s) == before
    monkeypatch.undo()
    s.step(1e-3)  # a call after the run is a call of its own
    assert s.steps == 11
