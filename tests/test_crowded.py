"""Crowded networks: a spring given a million times, a node with 200,000 springs.  Their set-up
(xpbd's colours, the minimum degree ordering of the sparse factor) takes time about linear in
the springs: a step takes well under a second where an algorithm quadratic in a node's springs
takes minutes (xpbd's colours of a million duplicates, or implicit Euler's ordering of a
200,000-spring star, took 413 s), and what it computes stays right."""
from __future__ import annotations

import time

import numpy as np
import pytest

import msprings

BOUND = 5.0  # s: generous for a linear set-up, far below a quadratic one's minutes


def duplicates(count: int, integrator: str) -> msprings.System:
    """Two nodes joined by the same spring ``count`` times, one of them pinned, stretched by 1 cm."""
    positions = np.array([[0.0, 0.0, 0.0], [1.01, 0.0, 0.0]])
    springs = np.tile([0, 1], (count, 1))
    return msprings.System(positions, springs, mass=1.0, k=1.0, rest=1.0, pinned=[0], gravity=(0.0, 0.0, 0.0),
                           integrator=integrator)


def star(count: int, integrator: str) -> msprings.System:
    """A hub joined to ``count`` nodes on a unit circle around it, each spring stretched by 1 %."""
    angle = np.arange(count) * (2.0 * np.pi / count)
    positions = np.zeros((count + 1, 3))
    positions[1:, 0] = 1.01 * np.cos(angle)
    positions[1:, 1] = 1.01 * np.sin(angle)
    springs = np.column_stack([np.zeros(count, dtype=np.int64), np.arange(1, count + 1)])
    return msprings.System(positions, springs, mass=1.0, k=1.0, rest=1.0, gravity=(0.0, 0.0, 0.0),
                           integrator=integrator)


def timed_step(system: msprings.System, dt: float) -> float:
    """Seconds that the first step (the one that sets the solver up) takes."""
    start = time.perf_counter()
    system.step(dt)
    return time.perf_counter() - start


def test_xpbd_million_duplicates() -> None:
    system = duplicates(1_000_000, "xpbd")
    assert timed_step(system, 1e-3) < BOUND
    # a million springs of k = 1 act as one of k = 1e6: the free node is pulled back towards
    # the rest length (xpbd's one iteration takes it most of the way in one step)
    assert np.isfinite(system.x).all()
    assert 1.0 <= system.x[1, 0] < 1.01


@pytest.mark.parametrize("integrator", ["xpbd", "implicit_euler", "projective"])
def test_star_of_200k_springs(integrator: str) -> None:
    system = star(200_000, integrator)
    assert timed_step(system, 1e-3) < BOUND
    x = np.asarray(system.x)
    assert np.isfinite(x).all()
    # the symmetric pull leaves the hub about where it is (xpbd's projections, one spring
    # after another, move it a little), and every leaf moves inwards
    assert np.abs(x[0]).max() < (1e-4 if integrator == "xpbd" else 1e-12)
    radius = np.hypot(x[1:, 0], x[1:, 1])
    assert (radius < 1.01).all() and (radius > 1.0).all()
