"""Multithreaded stepping of large networks: same physics, bitwise repeatable, safe rollback.

Networks with at least 10,000 springs stepped with explicit or symplectic Euler and no
constraints (colliders are allowed) run on ``s.threads`` worker threads (0 = all cores).  Each worker sums its
springs into a private buffer and the buffers are added in worker order, so a run is
bitwise repeatable for a given thread count and differs from one thread only by the
order of floating-point additions.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import msprings
from scenes import cloth

N = 48  # 48 x 48 cloth: 13,254 springs, above the 10,000-spring threshold


def cloth_system(**options: object) -> msprings.System:
    s = cloth(N, spacing=0.1, mass=0.01, k=500.0, c=0.05, **options)
    assert s.n_springs >= 10_000
    return s


@pytest.mark.parametrize("integrator", ["symplectic_euler", "explicit_euler"])
def test_threads_agree_with_one_thread_to_round_off(integrator: str) -> None:
    one = cloth_system(integrator=integrator, drag=0.01)
    one.threads = 1
    one.external[5] = (0.1, 0.2, -0.3)
    two = one.copy()
    two.threads = 2
    dt = 2e-4 if integrator == "symplectic_euler" else 2e-5
    assert dt < one.critical_dt()  # damped enough for explicit Euler too
    with np.errstate(all="raise"):
        for system in (one, two):
            system.step(dt, 200)
    assert two.steps == one.steps == 200 and two.t == one.t
    scale = np.abs(one.x - one.copy().x).max() + 1.0
    np.testing.assert_allclose(two.x, one.x, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(two.v, one.v, rtol=0, atol=1e-9)
    np.testing.assert_allclose(two.f, one.f, rtol=0, atol=1e-9)
    assert two.dissipated == pytest.approx(one.dissipated, rel=1e-9)
    assert one.dissipated > 0.0


def test_threaded_run_is_bitwise_repeatable_and_chunking_free() -> None:
    first = cloth_system()
    first.threads = 2
    second = first.copy()
    first.step(2e-4, 300)
    second.step(2e-4, 300)
    assert np.array_equal(first.x, second.x) and np.array_equal(first.v, second.v)
    assert first.dissipated == second.dissipated
    third = cloth_system()
    third.threads = 2
    for _ in range(3):
        third.step(2e-4, 100)
    assert np.array_equal(first.x, third.x)


def test_threaded_momentum_of_a_free_cloth_is_conserved() -> None:
    s = cloth_system(gravity=(0.0, 0.0, 0.0), pinned=None,
                     velocities=np.random.default_rng(3).normal(scale=0.05, size=(N * N, 3)))
    s.threads = 2
    p0 = s.momentum()
    s.step(2e-4, 300)
    np.testing.assert_allclose(s.momentum(), p0, atol=1e-13)


def test_threaded_divergence_rolls_back_bitwise() -> None:
    s = cloth_system(gravity=(0.0, 0.0, 0.0),
                     velocities=np.random.default_rng(4).normal(scale=1e-3, size=(N * N, 3)))
    s.threads = 2
    s.v[s.pinned] = 0.0
    reference = s.copy()
    big = 50.0 * s.critical_dt()
    with pytest.warns(msprings.StabilityWarning), pytest.raises(msprings.DivergenceError) as caught:
        s.step(big, 100_000)
    error = caught.value
    assert s.steps == error.step - 1 > 0
    assert np.isfinite(s.x).all() and np.isfinite(s.v).all()
    with pytest.warns(msprings.StabilityWarning):
        reference.step(big, error.step - 1)
    assert np.array_equal(s.x, reference.x) and np.array_equal(s.v, reference.v)
    assert s.t == reference.t and s.steps == reference.steps
    assert s.energy().dissipated == reference.energy().dissipated


def test_threads_setting_is_validated() -> None:
    s = cloth_system()
    assert s.threads == 0
    for bad in (-1, 1025):
        with pytest.raises(ValueError):
            s.threads = bad
    for bad in (1.5, "2", None):
        with pytest.raises(TypeError):
            s.threads = bad  # type: ignore[assignment]
    assert s.threads == 0
    s.threads = 3  # more threads than cores is allowed
    s.step(2e-4, 5)
    assert s.copy().threads == 3


def test_process_wide_thread_setting() -> None:
    """msprings.set_num_threads sets the threads of every system whose own threads is 0, at
    its next step; a system's own non-zero threads wins.  A run equals, bit for bit, a run
    with that many threads set on the system itself."""
    base = cloth_system(drag=0.01)
    one, two = base.copy(), base.copy()
    one.threads, two.threads = 1, 2
    for system in (one, two):
        system.step(2e-4, 100)
    assert not np.array_equal(one.x, two.x)  # the thread count shows in the rounding
    try:
        for count, expected in ((1, one), (2, two)):
            msprings.set_num_threads(count)
            assert msprings.get_num_threads() == count
            by_default = base.copy()
            assert by_default.threads == 0
            by_default.step(2e-4, 100)
            assert np.array_equal(by_default.x, expected.x) and np.array_equal(by_default.v, expected.v)
        msprings.set_num_threads(1)
        own = base.copy()
        own.threads = 2  # the system's own setting wins
        own.step(2e-4, 100)
        assert np.array_equal(own.x, two.x)
        for bad, error in ((-1, ValueError), (1025, ValueError), (1.5, TypeError), (True, TypeError)):
            with pytest.raises(error):
                msprings.set_num_threads(bad)  # type: ignore[arg-type]
        assert msprings.get_num_threads() == 1
    finally:
        msprings.set_num_threads(0)
    assert msprings.get_num_threads() == min(os.sysconf("SC_NPROCESSORS_ONLN"), 64)


# ---- contact on threads -------------------------------------------------------------------


def draping_cloth() -> msprings.System:
    """The cloth without pins, 0.3 m above a sphere that rises at 0.5 m/s (a kinematic
    collider, so its surface velocity enters the contact) and a floor plane, with friction
    on both: within the steps below the cloth lands on the sphere."""
    s = cloth(N, spacing=0.1, mass=0.01, k=500.0, c=0.05, pinned=[])
    s.x[:, 1] += 0.3
    middle = s.x.mean(axis=0)
    s.add_sphere((middle[0], -1.0, middle[2]), 1.2, friction=0.4, thickness=0.01, velocity=(0.0, 0.5, 0.0))
    s.add_plane((0.0, -2.0, 0.0), friction=0.3, thickness=0.01)
    return s


def test_contact_on_threads_agrees_with_one_thread_and_repeats_bitwise() -> None:
    """With colliders the threaded step goes through the double buffer and each worker
    applies the contacts of its own nodes: the same contacts as one thread up to the order
    of the spring sums, the colliders moved once per step, and the same bits every run."""
    one = draping_cloth()
    one.threads = 1
    two, again = one.copy(), one.copy()
    two.threads = again.threads = 2
    dt = 2e-4
    for system in (one, two, again):
        system.step(dt, 1001)  # odd: the newest state ends in the other half of the buffer
    assert two.steps == one.steps == 1001 and two.t == one.t
    np.testing.assert_allclose(two.x, one.x, rtol=0, atol=1e-9)
    np.testing.assert_allclose(two.v, one.v, rtol=0, atol=1e-6)
    assert two.dissipated == pytest.approx(one.dissipated, rel=1e-9)
    assert np.array_equal(two.x, again.x) and np.array_equal(two.v, again.v)
    assert two.dissipated == again.dissipated
    # the sphere rose by 1001 dt 0.5 m/s, once per step, on both
    for system in (one, two):
        assert system.colliders[0].center[1] == pytest.approx(-1.0 + 1001 * dt * 0.5, abs=1e-12)
    # contact happened and held: nodes rest on the sphere, none inside it
    centre = np.asarray(two.colliders[0].center)
    distance = np.linalg.norm(two.x - centre, axis=1)
    assert (distance < 1.2 + 0.011).sum() > 50
    assert distance.min() >= 1.2 + 0.01 - 1e-9


def test_threaded_contact_divergence_rolls_back_bitwise() -> None:
    s = draping_cloth()
    s.threads = 2
    s.step(2e-4, 101)  # settle into contact, ending an odd number of turns in
    reference = s.copy()
    big = 50.0 * s.critical_dt()
    with pytest.warns(msprings.StabilityWarning), pytest.raises(msprings.DivergenceError) as caught:
        s.step(big, 100_000)
    finite_steps = caught.value.step - 1 - 101
    assert finite_steps > 0
    assert np.isfinite(s.x).all() and np.isfinite(s.v).all()
    with pytest.warns(msprings.StabilityWarning):
        reference.step(big, finite_steps)
    assert np.array_equal(s.x, reference.x) and np.array_equal(s.v, reference.v)
    assert s.t == reference.t and s.steps == reference.steps
    assert s.dissipated == reference.dissipated
    for mine, theirs in zip(s.colliders, reference.colliders):
        assert np.array_equal(mine.center, theirs.center)  # moved only by the finite steps
