"""A solid filled with tetrahedra resting on the ground: contact's fast paths give the slow
paths' results.

Within one step call contact keeps each node's known gap to each collider and passes over the
nodes far from it, and sums the springs' share of the pushes by node block on every worker; a
call of one step starts knowing no gap (every node gets the full test), and one worker sums every
block.  A resting body has nodes pushed out of the ground at every step, so every part of that
machinery acts at once.  The states and ledgers must agree bit for bit, no node may end below
the ground, and what contact books must be what a NumPy reference of the rule computes.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_solid_contact import bcc_solid, tet_network  # noqa: E402

INTEGRATORS = ("symplectic_euler", "explicit_euler", "velocity_verlet", "rk4", "xpbd", "projective",
               "implicit_euler")
LARGE_STEP = ("xpbd", "projective", "implicit_euler")


def resting_solid(cells: int, friction: float = 0.5) -> msprings.System:
    """A box of BCC tetrahedra (0.3 m, rho 1100, E 2 MPa, zeta 0.1) settled on a plane."""
    net = tet_network(*bcc_solid(cells))
    system = msprings.System(net["positions"], net["springs"], mass=net["mass"], k=net["k"], c=net["c"])
    system.threads = 1
    x = system.x
    x[:, 1] -= x[:, 1].min() - 1e-4
    del x
    system.add_plane(friction=friction)
    h = 0.5 * system.critical_dt("symplectic_euler")
    system.step(h, 300)
    return system


@pytest.fixture(scope="module")
def small() -> msprings.System:
    return resting_solid(6)  # 304 nodes


@pytest.fixture(scope="module")
def threaded() -> msprings.System:
    return resting_solid(12)  # 2,047 nodes, 13,000 springs: several workers when asked


def step_of(system: msprings.System, integrator: str) -> float:
    return 1e-3 if integrator in LARGE_STEP else 0.5 * system.critical_dt(integrator)


def same(a: msprings.System, b: msprings.System) -> bool:
    return (np.array_equal(a.x, b.x) and np.array_equal(a.v, b.v) and a.ledger() == b.ledger()
            and a.dissipated == b.dissipated)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_one_call_equals_a_call_per_step(small: msprings.System, integrator: str) -> None:
    """Gap bounds carried through a call change nothing: the call of one step each tests every
    node in full."""
    one = small.copy()
    one.integrator = integrator
    each = one.copy()
    h = step_of(one, integrator)
    one.step(h, 40)
    for _ in range(40):
        each.step(h)
    assert same(one, each)
    assert one.x[:, 1].min() >= 0.0  # nothing sinks into the ground
    booked = one.ledger().contact + one.ledger().constraints
    if integrator in ("implicit_euler", "xpbd"):
        # the solve (xpbd: each sweep) holds the resting underside on the ground (no push is
        # needed afterwards)
        assert one.x[:, 1].min() < 1e-9
        return
    # the underside is pushed every step: contact books at every step, as dissipation or work
    assert booked > small.ledger().contact + small.ledger().constraints


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet", "rk4", "xpbd", "implicit_euler"])
def test_any_number_of_workers_books_the_same_bits(threaded: msprings.System, integrator: str) -> None:
    """The springs' share of the pushes is summed by node block on every worker: one, two
    and three workers give the same state and ledger."""
    runs = []
    for threads in (1, 2, 3):
        system = threaded.copy()
        system.integrator = integrator
        system.threads = threads
        system.step(step_of(system, integrator), 20 if integrator == "implicit_euler" else 60)
        assert system.workers == threads
        runs.append(system)
    assert same(runs[0], runs[1]) and same(runs[0], runs[2])
    assert runs[0].x[:, 1].min() >= 0.0


def test_contact_books_the_rules_energy_change(small: msprings.System) -> None:
    """One symplectic Euler step on the ground against the same step in free fall (contact
    acts after the integrator, so the free step is the state contact starts from): the change
    contact books is the pushed nodes' kinetic and gravitational energy change plus their
    springs' energy change, computed here in NumPy."""
    ground = small.copy()
    free = small.copy()
    free.remove_collider(free.colliders[0])
    h = step_of(ground, "symplectic_euler")
    before = ground.ledger()
    ground.step(h)
    free.step(h)
    after = ground.ledger()
    pushed = np.any(ground.x != free.x, axis=1) | np.any(ground.v != free.v, axis=1)
    assert pushed.sum() > 20
    m = ground.mass
    kinetic = 0.5 * np.sum(m * (np.sum(ground.v**2, axis=1) - np.sum(free.v**2, axis=1)))
    lift = -np.sum(m[:, None] * np.asarray(ground.gravity) * (ground.x - free.x))

    def spring_energy(x: np.ndarray) -> np.ndarray:
        length = np.linalg.norm(x[ground.springs[:, 1]] - x[ground.springs[:, 0]], axis=1)
        return 0.5 * ground.k * (length - ground.rest) ** 2

    springs = np.sum(spring_energy(ground.x) - spring_energy(free.x))
    change = kinetic + lift + springs
    booked = (after.constraints - before.constraints) - (after.contact - before.contact)
    scale = np.sum(0.5 * m * np.sum(free.v**2, axis=1)) + abs(springs) + 1e-300
    assert booked == pytest.approx(change, abs=1e-9 * scale)
    assert after.colliders == before.colliders == 0.0  # a static plane does no work
