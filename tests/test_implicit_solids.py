"""Implicit Euler on tetrahedral solids: the preconditioned Newton solve (exact tangent after the
first iteration, forcing term, block Jacobi with a coarse level of the aggregates' rigid motions)
still gives the backward-Euler step, converges in a few iterations, and keeps the bits across
threads and copies."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_solid_steps import bcc_box, solid_parameters  # noqa: E402
from test_implicit import network_forces, tangent_matrices  # noqa: E402

H = 1.0 / 60.0


def beam(cells: tuple[int, int, int], size: tuple[float, float, float], **options: object) -> msprings.System:
    """A tetrahedral beam (density 1100 kg/m^3, E = 2e6 Pa, zeta = 0.1) with its x = 0 face pinned."""
    points, tets = bcc_box(cells, size)
    springs, mass, k, c = solid_parameters(points, tets)
    return msprings.System(points, springs, mass=mass, k=k, c=c, pinned=np.flatnonzero(points[:, 0] < 1e-9),
                           integrator="implicit_euler", **options)


def backward_euler(s: msprings.System, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The backward-Euler step from s's state by dense Newton to round-off: M dv = h f(x + h v', v')."""
    x0, v0 = s.x.copy(), s.v.copy()
    free = np.repeat(~s.pinned, 3)
    mass = np.repeat(s.mass, 3)
    dv = np.zeros(x0.size)
    for _ in range(40):
        v1 = v0 + dv.reshape(-1, 3)
        x1 = x0 + h * v1
        residual = mass * dv - h * network_forces(s, x1, v1).ravel()
        if np.abs(residual[free]).max() <= 1e-14 * np.abs(h * mass * 9.81).max():
            break
        stiffness, damping = tangent_matrices(s, x1)
        matrix = np.diag(mass) + h * damping + h * h * stiffness
        dv[free] -= np.linalg.solve(matrix[np.ix_(free, free)], residual[free])
    v1 = v0 + dv.reshape(-1, 3)
    return x0 + h * v1, v1


def test_a_solid_step_is_the_backward_euler_step() -> None:
    s = beam((12, 6, 6), (0.6, 0.3, 0.3))  # 1,020 free nodes: block Jacobi with the coarse level
    s.newton_tol = 1e-9
    s.step(H)
    for _ in range(2):
        x_expected, v_expected = backward_euler(s, H)
        s.step(H)
        stats = s.solver_stats
        assert stats["newton_converged"]
        # not a direct solve: CG takes more than one iteration per Newton iteration
        assert stats["cg_iterations"] > stats["newton_iterations"]
        scale = np.abs(v_expected).max()
        np.testing.assert_allclose(s.v, v_expected, rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(s.x, x_expected, rtol=0, atol=1e-6 * scale * H)


def twisting(s: msprings.System, rate: float) -> None:
    """Sets s spinning about its long (x) axis through the middle of its cross-section at ``rate``
    rad/s, growing from the pinned end (a twist that the springs resist)."""
    x = s.x
    middle = 0.5 * (x.min(axis=0) + x.max(axis=0))
    along = x[:, 0] / x[:, 0].max()
    r = x - middle
    s.v[:] = rate * along[:, None] * np.stack([np.zeros(len(x)), -r[:, 2], r[:, 1]], axis=1)


def test_a_twisting_solid_step_is_the_backward_euler_step() -> None:
    # 250 free nodes: block Jacobi with the coarse level of the aggregates' rigid motions, here
    # twisted so that the aggregates rotate against each other
    s = beam((10, 3, 3), (0.5, 0.15, 0.15))
    assert int((~s.pinned).sum()) == 250
    twisting(s, 20.0)
    s.newton_tol = 1e-10
    for _ in range(3):
        x_expected, v_expected = backward_euler(s, H)
        s.step(H)
        stats = s.solver_stats
        assert stats["newton_converged"] and stats["cg_converged"]
        assert stats["cg_iterations"] > stats["newton_iterations"]  # CG, not a direct solve
        scale = np.abs(v_expected).max()
        np.testing.assert_allclose(s.v, v_expected, rtol=0, atol=1e-7 * scale)
        np.testing.assert_allclose(s.x, x_expected, rtol=0, atol=1e-7 * scale * H)


def test_the_coarse_level_takes_few_cg_iterations_on_a_twisting_solid() -> None:
    # 1,256 nodes twisting and sagging at h = 1/60 s (70 symplectic critical steps): with the
    # aggregates' translations alone as the coarse level this took 4.2 Newton and 304 CG
    # iterations per step; with their rigid motions 4.2 and 87.
    s = beam((20, 5, 5), (0.4, 0.1, 0.1))
    twisting(s, 20.0)
    newton, cg = [], []
    for _ in range(10):
        s.step(H)
        stats = s.solver_stats
        assert stats["newton_converged"] and stats["cg_converged"]
        newton.append(stats["newton_iterations"])
        cg.append(stats["cg_iterations"])
    assert np.mean(newton) <= 4.5
    assert np.mean(cg) <= 120


@pytest.mark.parametrize(
    ("cells", "size", "counts"),
    [
        # 1,256 nodes: the translations of aggregates as the coarse level
        ((20, 5, 5), (0.4, 0.1, 0.1), [(3, 44), (3, 45), (3, 46), (3, 46), (3, 46)]),
        # 250 free nodes: block Jacobi alone
        ((10, 3, 3), (0.5, 0.15, 0.15), [(3, 29), (3, 28), (3, 28), (3, 28), (3, 28)]),
    ],
)
def test_steps_that_are_not_stiff_keep_the_gentle_preconditioner(
    cells: tuple[int, int, int], size: tuple[float, float, float], counts: list[tuple[int, int]]
) -> None:
    # At h = 1 ms (omega h)^2 is some 15 to 65 on these solids: the rigid coarse level costs
    # more than it saves there, and such steps take the Newton and CG iterations they took
    # before it was made (recorded then, at newton_tol = 1e-8).
    s = beam(cells, size)
    s.newton_tol = 1e-8
    taken = []
    for _ in range(5):
        s.step(1e-3)
        assert s.solver_stats["newton_converged"]
        taken.append((s.solver_stats["newton_iterations"], s.solver_stats["cg_iterations"]))
    assert taken == counts


def test_newton_on_a_sagging_beam_takes_a_few_iterations() -> None:
    # 1,256 nodes, 7,700 springs; h = 1/60 s is 70 times symplectic Euler's critical step.
    # With the clamped tangent throughout and block Jacobi alone this took 7.3 Newton and
    # 990 CG iterations per step.
    s = beam((20, 5, 5), (0.4, 0.1, 0.1))
    newton, cg = [], []
    for _ in range(10):
        s.step(H)
        stats = s.solver_stats
        assert stats["newton_converged"] and stats["cg_converged"]
        newton.append(stats["newton_iterations"])
        cg.append(stats["cg_iterations"])
    assert max(newton) <= 5
    assert np.mean(newton) <= 4.5
    assert np.mean(cg) <= 120  # 290 with the aggregates' translations alone as the coarse level
    # at h = 1 ms: 3 iterations
    s.step(1e-3)
    assert s.solver_stats["newton_converged"] and s.solver_stats["newton_iterations"] <= 3


@pytest.mark.parametrize("threads", [2, 3])
def test_a_solid_steps_to_the_same_bits_on_any_number_of_threads(threads: int) -> None:
    one = beam((16, 7, 7), (0.8, 0.35, 0.35))
    assert one.springs.shape[0] >= 10_000  # large enough for several workers
    many = one.copy()
    one.threads = 1
    many.threads = threads
    one.step(H, 3)
    many.step(H, 3)
    assert many.workers > 1
    np.testing.assert_array_equal(one.x, many.x)
    np.testing.assert_array_equal(one.v, many.v)
    assert one.solver_stats == many.solver_stats


def test_a_fresh_copy_of_a_solid_steps_to_the_same_bits() -> None:
    s = beam((6, 3, 3), (0.6, 0.3, 0.3))
    s.step(H, 4)
    copy = s.copy()
    s.step(H, 2)
    copy.step(H)
    copy.step(H)
    np.testing.assert_array_equal(s.x, copy.x)
    np.testing.assert_array_equal(s.v, copy.v)


def test_the_default_newton_tol_is_far_below_backward_eulers_own_error() -> None:
    # A beam sagging and swinging at h = 1/60 s: the default newton_tol (1e-6 of the step's
    # impulse) moves every node by a millionth of what halving h does (the method's own
    # error), or less.  (newton_tol = 1e-4 fails this: 1e-8 m against 3.5e-3 m.)
    s = beam((8, 3, 3), (0.4, 0.1, 0.1))
    assert (s.newton_tol, s.cg_tol) == (1e-6, 1e-2)

    def path(h: float, tol: float | None) -> np.ndarray:
        run = s.copy()
        if tol is not None:  # None: the defaults
            run.newton_tol = run.cg_tol = tol
        positions = []
        for _ in range(30):
            run.step(h, round(H / h))
            positions.append(run.x.copy())
        return np.array(positions)

    default, tight, halved = path(H, None), path(H, 1e-12), path(H / 2, 1e-12)
    solve_error = np.abs(default - tight).max()
    method_error = np.abs(halved - tight).max()
    assert method_error > 1e-3  # m: a real sag and swing
    assert solve_error < 1e-6 * method_error
