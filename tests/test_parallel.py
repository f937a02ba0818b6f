"""Multithreaded stepping of large networks: the same bits on any number of threads.

Networks with at least 10,000 springs run on ``s.threads`` worker threads (0 = the
process-wide setting, all cores unless set) with every integrator but implicit Euler.
The work is cut into blocks of nodes and springs that depend on the network alone, and
every sum over blocks is taken in block order, so any number of threads gives bitwise the
same result as one -- with colliders, air on the triangles, strain limiting,
self-collision and energy loss too.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import msprings
from scenes import cloth

from msprings.scenes import flag

N = 48  # 48 x 48 cloth: 13,254 springs, above the 10,000-spring threshold


def cloth_system(**options: object) -> msprings.System:
    s = cloth(N, spacing=0.1, mass=0.01, k=500.0, c=0.05, **options)
    assert s.n_springs >= 10_000
    return s


def same_bits(a: msprings.System, b: msprings.System) -> bool:
    """x, v, f, the ledger, the clock and the colliders' positions are bitwise equal."""
    return (np.array_equal(a.x, b.x) and np.array_equal(a.v, b.v) and np.array_equal(a.f, b.f)
            and tuple(a.ledger()) == tuple(b.ledger()) and (a.t, a.steps) == (b.t, b.steps)
            and all(np.array_equal(p.center, q.center) for p, q in zip(a.colliders, b.colliders)))


def run_on(system: msprings.System, threads: int, dt: float, steps: int) -> msprings.System:
    copy = system.copy()
    copy.threads = threads
    with np.errstate(all="raise"):
        copy.step(dt, steps)
    assert copy.workers == threads
    return copy


STEP = {"explicit_euler": 2e-5, "symplectic_euler": 2e-4, "velocity_verlet": 2e-4, "rk4": 2e-4, "xpbd": 1e-3,
        "implicit_euler": 5e-3}


@pytest.mark.parametrize("integrator", sorted(STEP))
def test_every_thread_count_gives_the_same_bits(integrator: str) -> None:
    """Dampers, drag in a gusty wind, an external force and a moving pin."""
    s = cloth_system(integrator=integrator, drag=0.01)
    s.wind, s.gust = (1.0, 0.0, 0.5), 0.5
    s.external[5] = (0.1, 0.2, -0.3)
    s.v[0] = (0.0, 0.05, 0.0)  # node 0 is pinned: it moves
    assert STEP[integrator] < s.critical_dt()
    one = run_on(s, 1, STEP[integrator], 60)
    for threads in (2, 3):
        assert same_bits(run_on(s, threads, STEP[integrator], 60), one)
    assert one.ledger().dampers > 0.0 and one.ledger().wind != 0.0 and one.ledger().pins != 0.0


@pytest.mark.parametrize("integrator", sorted(STEP))
def test_constraints_and_contact_on_threads_give_the_same_bits(integrator: str) -> None:
    """A sphere rising into the cloth and a floor, strain limiting and energy loss."""
    s = draping_cloth(integrator=integrator)
    s.x[:, 1] -= 0.1  # on the sphere's top from the start
    s.strain_limit = 1e-4
    s.energy_loss = 1e-4
    one = run_on(s, 1, STEP[integrator], 120)
    assert one.ledger().contact > 0.0 and one.ledger().constraints != 0.0
    for threads in (2, 3):
        assert same_bits(run_on(s, threads, STEP[integrator], 120), one)


def test_air_and_self_collision_on_threads_give_the_same_bits() -> None:
    """A flag of 10,000+ springs in gusts (air on every triangle), folding onto itself."""
    s = flag(50, 60)
    assert s.n_springs >= 10_000
    s.gust = 3.0
    s.self_collision = 0.01
    dt = 0.5 * s.critical_dt()
    one = run_on(s, 1, dt, 80)
    assert one.ledger().wind != 0.0
    for threads in (2, 3):
        assert same_bits(run_on(s, threads, dt, 80), one)


def test_projective_runs_on_one_worker() -> None:
    s = cloth_system(integrator="projective")
    s.threads = 2
    s.step(1e-3, 2)
    assert s.workers == 1


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


def assert_same_system(s: msprings.System, reference: msprings.System) -> None:
    """x, v, f, the clock, the ledger and the colliders bitwise alike."""
    assert np.array_equal(s.x, reference.x) and np.array_equal(s.v, reference.v)
    assert np.array_equal(s.f, reference.f)
    assert s.t == reference.t and s.steps == reference.steps
    assert s.ledger() == reference.ledger()
    for mine, theirs in zip(s.colliders, reference.colliders):
        assert np.array_equal(mine.center, theirs.center)


def test_threaded_divergence_is_undone_bitwise() -> None:
    s = cloth_system(gravity=(0.0, 0.0, 0.0),
                     velocities=np.random.default_rng(4).normal(scale=1e-3, size=(N * N, 3)))
    s.threads = 2
    s.v[s.pinned] = 0.0
    reference = s.copy()
    big = 50.0 * s.critical_dt()
    with pytest.warns(msprings.StabilityWarning), pytest.raises(msprings.DivergenceError) as caught:
        s.step(big, 100_000)
    assert caught.value.call_step > 1
    assert_same_system(s, reference)
    s.step(2e-4, 3)
    reference.step(2e-4, 3)
    assert_same_system(s, reference)


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
    its next step; a system's own non-zero threads wins; small networks use one."""
    base = cloth_system(drag=0.01)
    reference = run_on(base, 1, 2e-4, 100)
    try:
        for count in (1, 2):
            msprings.set_num_threads(count)
            assert msprings.get_num_threads() == count
            by_default = base.copy()
            assert by_default.threads == 0
            by_default.step(2e-4, 100)
            assert by_default.workers == count and same_bits(by_default, reference)
        msprings.set_num_threads(1)
        own = base.copy()
        own.threads = 2  # the system's own setting wins
        own.step(2e-4, 100)
        assert own.workers == 2 and same_bits(own, reference)
        small = cloth(10)
        small.threads = 2
        small.step(1e-4)
        assert small.workers == 1
        for bad, error in ((-1, ValueError), (1025, ValueError), (1.5, TypeError), (True, TypeError)):
            with pytest.raises(error):
                msprings.set_num_threads(bad)  # type: ignore[arg-type]
        assert msprings.get_num_threads() == 1
    finally:
        msprings.set_num_threads(0)
    assert msprings.get_num_threads() == min(os.sysconf("SC_NPROCESSORS_ONLN"), 64)


# ---- contact on threads -------------------------------------------------------------------


def draping_cloth(**options: object) -> msprings.System:
    """The cloth without pins, 0.3 m above a sphere that rises at 0.5 m/s (a kinematic
    collider, so its surface velocity enters the contact) and a floor plane, with friction
    on both: within the steps below the cloth lands on the sphere."""
    s = cloth(N, spacing=0.1, mass=0.01, k=500.0, c=0.05, pinned=[], **options)
    s.x[:, 1] += 0.3
    middle = s.x.mean(axis=0)
    s.add_sphere((middle[0], -1.0, middle[2]), 1.2, friction=0.4, thickness=0.01, velocity=(0.0, 0.5, 0.0))
    s.add_plane((0.0, -2.0, 0.0), friction=0.3, thickness=0.01)
    return s


def test_contact_on_threads_gives_the_same_bits_and_moves_the_colliders_once_per_step() -> None:
    one = draping_cloth()
    dt = 2e-4
    one = run_on(one, 1, dt, 1001)  # odd: the newest state ends in the other half of the buffer
    two = run_on(draping_cloth(), 2, dt, 1001)
    assert same_bits(two, one)
    # the sphere rose by 1001 dt 0.5 m/s, once per step
    assert two.colliders[0].center[1] == pytest.approx(-1.0 + 1001 * dt * 0.5, abs=1e-12)
    # contact happened and held: nodes rest on the sphere, none inside it
    centre = np.asarray(two.colliders[0].center)
    distance = np.linalg.norm(two.x - centre, axis=1)
    assert (distance < 1.2 + 0.011).sum() > 50
    assert distance.min() >= 1.2 + 0.01 - 1e-9


def test_threaded_contact_divergence_is_undone_bitwise() -> None:
    s = draping_cloth()
    s.threads = 2
    s.step(2e-4, 101)  # settle into contact, ending an odd number of turns in
    reference = s.copy()
    big = 50.0 * s.critical_dt()
    with pytest.warns(msprings.StabilityWarning), pytest.raises(msprings.DivergenceError) as caught:
        s.step(big, 100_000)
    assert caught.value.call_step > 1 and caught.value.step == 101 + caught.value.call_step
    assert_same_system(s, reference)  # the colliders too: back where the call found them
    s.step(2e-4, 3)
    reference.step(2e-4, 3)
    assert_same_system(s, reference)
