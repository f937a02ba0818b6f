"""Threads: ``step`` releases the GIL, different systems step concurrently with the same results
as sequentially, and one system stepped from two threads at once is refused (or serialised)
without damage."""

from __future__ import annotations

import threading
import time

import numpy as np

import msprings

DT = 1e-4


def hanging_chain(n_nodes: int, integrator: str = "symplectic_euler") -> msprings.System:
    """A damped chain along x with its first node pinned, sagging under gravity; stable for
    ``DT`` with every integrator (fastest mode omega * DT well below 0.1)."""
    positions = np.zeros((n_nodes, 3))
    positions[:, 0] = np.linspace(0.0, 1.0, n_nodes)
    springs = np.column_stack([np.arange(n_nodes - 1), np.arange(1, n_nodes)])
    return msprings.System(
        positions,
        springs,
        mass=0.05,
        k=200.0,
        c=0.02,
        pinned=[0],
        drag=0.01,
        integrator=integrator,
    )


def state_bits(s: msprings.System) -> tuple:
    """Everything a step changes, exactly."""
    return (
        s.x.tobytes(),
        s.v.tobytes(),
        s.f.tobytes(),
        float(s.t).hex(),
        int(s.steps),
        float(s.dissipated).hex(),
    )


def steps_lasting(s: msprings.System, seconds: float) -> int:
    """Number of ``DT`` steps of (a copy of) ``s`` that take about ``seconds`` on this machine."""
    probe = s.copy()
    trial = 200
    while True:
        start = time.perf_counter()
        probe.step(DT, trial)
        elapsed = time.perf_counter() - start
        if elapsed > 0.02:
            return max(trial, int(trial * seconds / elapsed))
        trial *= 4


def run_together(*jobs: tuple[msprings.System, int, int]) -> list[BaseException | None]:
    """Starts one thread per (system, n, calls) job at the same moment; each calls
    ``system.step(DT, n)`` ``calls`` times.  Returns what each thread raised (or None)."""
    barrier = threading.Barrier(len(jobs))
    outcomes: list[BaseException | None] = [None] * len(jobs)

    def work(index: int, system: msprings.System, n: int, calls: int) -> None:
        barrier.wait()
        try:
            for _ in range(calls):
                system.step(DT, n)
        except BaseException as error:  # noqa: BLE001 - reported to the test thread
            outcomes[index] = error

    threads = [
        threading.Thread(target=work, args=(index, *job)) for index, job in enumerate(jobs)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_step_releases_the_gil() -> None:
    """A pure-Python thread keeps running while a long step runs in C."""
    s = hanging_chain(400)
    n = steps_lasting(s, 0.4)
    stop = threading.Event()
    running = threading.Event()
    longest_pause = [0.0]
    iterations = [0]

    def watch() -> None:
        last = time.perf_counter()
        running.set()
        while not stop.is_set():
            now = time.perf_counter()
            longest_pause[0] = max(longest_pause[0], now - last)
            last = now
            iterations[0] += 1

    watcher = threading.Thread(target=watch)
    watcher.start()
    running.wait()
    start = time.perf_counter()
    s.step(DT, n)
    elapsed = time.perf_counter() - start
    stop.set()
    watcher.join()

    assert s.steps == n
    assert elapsed > 0.1, "the step was too short to tell"
    # holding the GIL for the whole step would pause the watcher for about `elapsed`
    assert longest_pause[0] < elapsed / 4, (longest_pause[0], elapsed)
    assert iterations[0] > 1000


def test_different_systems_step_concurrently_like_sequentially() -> None:
    first = hanging_chain(300, "rk4")
    second = hanging_chain(500, "velocity_verlet")
    second.external[-1] = (0.0, 0.0, 0.3)
    third = hanging_chain(200, "implicit_euler")
    third.external[-1] = (0.1, 0.0, 0.0)
    n = steps_lasting(first, 0.05)
    n_implicit = steps_lasting(third, 0.05)
    calls = 4
    first_reference, second_reference, third_reference = first.copy(), second.copy(), third.copy()

    outcomes = run_together((first, n, calls), (second, n, calls), (third, n_implicit, calls))
    assert outcomes == [None, None, None]

    for _ in range(calls):
        first_reference.step(DT, n)
        second_reference.step(DT, n)
        third_reference.step(DT, n_implicit)
    assert first.steps == second.steps == calls * n
    assert third.steps == calls * n_implicit
    assert state_bits(first) == state_bits(first_reference)
    assert state_bits(second) == state_bits(second_reference)
    assert state_bits(third) == state_bits(third_reference)
    assert third.solver_stats == third_reference.solver_stats


def test_same_system_from_two_threads_is_refused_or_serialised() -> None:
    s = hanging_chain(400)
    n = steps_lasting(s, 0.25)
    reference = s.copy()

    outcomes = run_together((s, n, 1), (s, n, 1))
    for outcome in outcomes:
        assert outcome is None or isinstance(outcome, RuntimeError), repr(outcome)
    succeeded = sum(outcome is None for outcome in outcomes)
    assert succeeded >= 1
    assert s.steps == succeeded * n

    # the state is exactly what the successful calls, one after the other, produce
    for _ in range(succeeded):
        reference.step(DT, n)
    assert state_bits(s) == state_bits(reference)

    # nothing is left locked
    s.step(DT, 3)
    assert s.steps == succeeded * n + 3


def test_busy_refusal_changes_nothing() -> None:
    """While one thread steps a system, a second caller either waits or is refused; in both
    cases the final state is exactly a whole number of the requested calls."""
    s = hanging_chain(400)
    n = steps_lasting(s, 0.3)
    reference = s.copy()
    started = threading.Event()
    outcome: list[BaseException | None] = [None]

    def long_step() -> None:
        started.set()
        try:
            s.step(DT, n)
        except BaseException as error:  # noqa: BLE001 - reported to the test thread
            outcome[0] = error

    worker = threading.Thread(target=long_step)
    worker.start()
    started.wait()
    time.sleep(0.05)
    second_ok = True
    try:
        s.step(DT, 7)
    except RuntimeError:
        second_ok = False
    worker.join()
    assert outcome[0] is None

    if second_ok:
        long_first, short_first = reference.copy(), reference.copy()
        long_first.step(DT, n)
        long_first.step(DT, 7)
        short_first.step(DT, 7)
        short_first.step(DT, n)
        assert s.steps == n + 7
        assert state_bits(s) in (state_bits(long_first), state_bits(short_first))
    else:
        reference.step(DT, n)
        assert s.steps == n
        assert state_bits(s) == state_bits(reference)
