"""The large-step suite's SciPy references are the algorithms they claim to be.

``benchmarks/bench_large_steps.py`` holds msprings' projective solver to a SciPy Liu et al. 2013
local/global step and its implicit Euler to a SciPy backward-Euler Newton solver; a wrong reference would
pass or fail msprings for the wrong reason.  Here the Liu step is held to a plain dense NumPy version
written spring by spring (1e-12 m on a 4 x 4 stiff cloth), and, with many iterations, to backward Euler
(projective dynamics converges to it for undamped springs); the Newton solver is held to msprings'
implicit Euler on the stiff chain (1e-8 m).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import bench_large_steps, harness  # noqa: E402

H = bench_large_steps.H


def _dense_liu(net: harness.Network, x: np.ndarray, v: np.ndarray, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """One Liu 2013 step (undamped springs, gravity only) with a dense matrix over all nodes, the pinned
    rows replaced by identity rows that hold them where they are."""
    free = ~net.pinned
    matrix = np.diag(net.mass / H**2)
    for (i, j), k in zip(net.springs, net.k):
        matrix[np.ix_((i, j), (i, j))] += k * np.array([[1.0, -1.0], [-1.0, 1.0]])
    matrix[~free] = 0.0
    matrix[~free, ~free] = 1.0
    y = x + H * v + H**2 * np.where(free[:, None], np.asarray(net.gravity), 0.0)
    x_new = y.copy()
    for _ in range(iterations):
        right = net.mass[:, None] / H**2 * y
        for (i, j), k, rest in zip(net.springs, net.k, net.rest):
            d = x_new[i] - x_new[j]
            projected = rest * d / np.linalg.norm(d)
            right[i] += k * projected
            right[j] -= k * projected
        right[~free] = y[~free]
        x_new = np.linalg.solve(matrix, right)
    return x_new, np.where(free[:, None], (x_new - x) / H, v)


def test_scipy_liu_matches_a_dense_solve() -> None:
    net = harness.stiff_cloth(4)
    liu = bench_large_steps.ScipyLiu(net, H, 10)
    state = harness.State.of(net)
    x, v = net.positions.copy(), np.zeros_like(net.positions)
    for _ in range(5):
        liu(state, 1)
        x, v = _dense_liu(net, x, v, 10)
    assert np.abs(state.x - net.positions).max() > 0.01  # the cloth has moved: a real run
    assert harness.largest_distance(state.x, x) < 1e-12
    assert np.abs(state.v - v).max() < 1e-10
    assert np.all(state.x[net.pinned] == net.positions[net.pinned])
    # a different iteration count shows far above the tolerance
    other = harness.State.of(net)
    bench_large_steps.ScipyLiu(net, H, 3)(other, 5)
    assert harness.largest_distance(other.x, x) > 1e-6


def test_scipy_liu_converges_to_backward_euler() -> None:
    net = harness.stiff_cloth(4)
    newton = harness.State.of(net)
    harness.ScipyNewton(net, H, 1e-12, 50)(newton, 1)
    far = []
    for iterations in (10, 100, 2000):
        state = harness.State.of(net)
        bench_large_steps.ScipyLiu(net, H, iterations)(state, 1)
        far.append(harness.largest_distance(state.x, newton.x))
    assert far[0] > far[1] > far[2]
    assert far[2] < 1e-9


def test_scipy_newton_matches_msprings_implicit_euler() -> None:
    net = harness.stiff_chain()
    system = harness.build_system(msprings, net, integrator="implicit_euler", threads=1)
    newton = harness.ScipyNewton(net, H, float(system.newton_tol), 50)
    state = harness.State.of(net)
    for _ in range(20):
        system.step(H)
        newton(state, 1)
    assert np.abs(state.x - net.positions).max() > 0.05  # the chain swings down
    assert harness.largest_distance(state.x, system.x) < 1e-8
