"""The implicit (backward) Euler integrator against closed forms and its own definition.

Backward Euler solves M (v' - v) = h f(x + h v', v'), x' = x + h v' by Newton's method.  On
the undamped oscillator it multiplies the energy by exactly 1 / (1 + omega^2 h^2) per step,
so it is stable at any step and first-order accurate.  Its first Newton iteration is Baraff &
Witkin's linearised step, checked here against a dense NumPy solve; the converged step
conserves momentum up to the Newton residual, never gains energy on the benchmark's stiff
chain (where the linearised step does), and only dissipates when dampers and drag act.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

# Oscillator: one free node on a spring to a pinned node, along x, gravity off.
MASS = 0.5
STIFFNESS = MASS * (2.0 * math.pi) ** 2  # omega = 2 pi rad/s
OMEGA = math.sqrt(STIFFNESS / MASS)
REST = 1.0

NO_GRAVITY = (0.0, 0.0, 0.0)


def oscillator(u0: float, v0: float = 0.0, zeta: float = 0.0, **options: object) -> msprings.System:
    """Pinned node at the origin and a free node at x = REST + u0 moving with v0 along x,
    damping ratio ``zeta``, gravity off, implicit Euler."""
    c = 2.0 * zeta * math.sqrt(STIFFNESS * MASS)
    options.setdefault("integrator", "implicit_euler")
    return msprings.System(
        [[0.0, 0.0, 0.0], [REST + u0, 0.0, 0.0]],
        [[0, 1]],
        mass=MASS,
        k=STIFFNESS,
        c=c,
        rest=REST,
        pinned=[0],
        velocities=[[0.0, 0.0, 0.0], [v0, 0.0, 0.0]],
        gravity=NO_GRAVITY,
        **options,
    )


def damped_displacement(t: float, u0: float, v0: float, omega: float, zeta: float) -> float:
    """Closed-form u(t) of u'' + 2 zeta omega u' + omega^2 u = 0 (underdamped, zeta < 1)."""
    omega_d = omega * math.sqrt(1.0 - zeta * zeta)
    b = (v0 + zeta * omega * u0) / omega_d
    return math.exp(-zeta * omega * t) * (u0 * math.cos(omega_d * t) + b * math.sin(omega_d * t))


def network_forces(system: msprings.System, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Total force (n, 3) on every node at state (x, v), written out from DESIGN.md: springs,
    axial dampers, gravity, linear drag and the external force."""
    force = system.mass[:, None] * system.gravity[None, :] - system.drag * v + system.external
    for (i, j), k, c, rest in zip(system.springs, system.k, system.c, system.rest):
        d = x[j] - x[i]
        length = float(np.linalg.norm(d))
        n = d / length
        pull = (k * (length - rest) + c * float(np.dot(v[j] - v[i], n))) * n
        force[i] += pull
        force[j] -= pull
    return force


def tangent_matrices(system: msprings.System, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense K = -df/dx and C = -df/dv, shape (3n, 3n), as the implicit solver defines them:
    each spring contributes k n n^T + max(k (1 - L/l), 0) (I - n n^T) to K and c n n^T to C
    (the damper's position derivative left out), drag adds drag * I to C."""
    size = 3 * system.n_nodes
    stiffness = np.zeros((size, size))
    damping = system.drag * np.eye(size)
    for (i, j), k, c, rest in zip(system.springs, system.k, system.c, system.rest):
        d = x[j] - x[i]
        length = float(np.linalg.norm(d))
        n = d / length
        axial = np.outer(n, n)
        block = k * axial + max(k * (1.0 - rest / length), 0.0) * (np.eye(3) - axial)
        for matrix, value in ((stiffness, block), (damping, c * axial)):
            for a, b, sign in ((i, i, 1.0), (j, j, 1.0), (i, j, -1.0), (j, i, -1.0)):
                matrix[3 * a : 3 * a + 3, 3 * b : 3 * b + 3] += sign * value
    return stiffness, damping


# --------------------------------------------------------------------------------------
# The oscillator: energy factor, unconditional stability, first-order convergence


@pytest.mark.parametrize("omega_h", [0.1, 1.0, 3.0])
def test_undamped_energy_is_divided_by_one_plus_omega_h_squared_each_step(omega_h: float) -> None:
    h = omega_h / OMEGA
    s = oscillator(u0=0.1, v0=0.3)
    energies = scenes.mechanical_energies(s, h, 8)
    ratios = energies[1:] / energies[:-1]
    np.testing.assert_allclose(ratios, 1.0 / (1.0 + omega_h**2), rtol=1e-7)


def test_stable_and_decaying_at_omega_h_50() -> None:
    h = 50.0 / OMEGA
    s = oscillator(u0=0.2, v0=-0.5)
    energies = scenes.mechanical_energies(s, h, 40)
    assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
    assert np.all(np.diff(energies) <= 0.0)
    # The first steps, before round-off dominates, decay by exactly 1 / (1 + 2500).
    np.testing.assert_allclose(energies[1:4] / energies[:3], 1.0 / 2501.0, rtol=1e-6)
    assert energies[-1] < 1e-20 * energies[0]
    # Nothing moved off the spring's line, and the node rests at the spring's rest length.
    assert np.all(s.x[:, 1:] == 0.0)
    assert abs(s.x[1, 0] - REST) < 1e-9


def test_first_order_convergence_to_the_damped_closed_form() -> None:
    zeta, u0, v0, duration = 0.2, 0.1, 0.4, 1.0
    exact = damped_displacement(duration, u0, v0, OMEGA, zeta)
    errors = []
    for steps in (200, 400, 800, 1600):
        s = oscillator(u0=u0, v0=v0, zeta=zeta)
        s.newton_tol = 1e-12
        s.cg_tol = 1e-12
        s.step(duration / steps, steps)
        errors.append(abs((s.x[1, 0] - REST) - exact))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    np.testing.assert_allclose(orders, 1.0, atol=0.05)
    assert errors[-1] < 5e-3 * abs(u0)


# --------------------------------------------------------------------------------------
# Conservation and pins


def test_momentum_of_a_free_network_is_conserved_to_the_newton_residual() -> None:
    s = scenes.random_network(seed=4, n_nodes=10, n_springs=24, stretch=0.2, speed=1.0, integrator="implicit_euler")
    s.newton_tol = 1e-12
    h = 0.02
    start = s.momentum()
    assert np.linalg.norm(start) > 0.5
    for _ in range(50):
        before = s.momentum()
        velocity_before = s.v.copy()
        s.step(h)
        stats = s.solver_stats
        assert stats["newton_converged"]
        # |sum_i g_i| <= sqrt(n) |g|, g = M dv - h f(x', v') and |g| <= residual * scale.
        change = s.mass[:, None] * (s.v - velocity_before)
        impulse = h * s.update_forces()
        scale = max(np.linalg.norm(change), np.linalg.norm(impulse))
        bound = math.sqrt(s.n_nodes) * stats["newton_residual"] * scale + 1e-14 * np.abs(change).sum()
        assert np.linalg.norm(s.momentum() - before) <= bound
    assert np.linalg.norm(s.momentum() - start) <= 1e-9 * np.linalg.norm(start)
    # The network did move and deform: momentum conservation is not trivial.
    assert np.abs(s.strain()).max() > 0.01


def test_pinned_nodes_stay_put_or_move_exactly_with_their_velocity() -> None:
    s = scenes.chain(8, 0.5, k=200.0, c=1.0, pinned=[0, 5], integrator="implicit_euler")
    prescribed = np.array([0.3, -0.2, 0.1])
    s.v[0] = prescribed
    resting = s.x[5].copy()
    expected = s.x[0].copy()
    h = 0.01
    for _ in range(60):
        s.step(h)
        expected = expected + h * prescribed
    assert np.array_equal(s.x[0], expected)
    assert np.array_equal(s.v[0], prescribed)
    assert np.array_equal(s.x[5], resting)
    assert np.array_equal(s.v[5], np.zeros(3))
    # The free nodes between and after the pins did move (gravity and the dragged end).
    assert np.abs(s.v[[1, 2, 3, 4, 6, 7]]).min(axis=1).max() > 0.0
    assert s.x[7, 1] < -0.1


# --------------------------------------------------------------------------------------
# The benchmark's stiff chain: stable at h = 1/60; converged Newton never gains energy


def test_stiff_chain_stays_finite_and_bounded_at_one_sixtieth() -> None:
    s = scenes.stiff_chain()
    length = 99 * 0.01
    for _ in range(6):
        s.step(1.0 / 60.0, 50)
        assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
        # Each node stays within the (nearly inextensible) chain's reach of the pin.
        reach = np.linalg.norm(s.x - s.x[0], axis=1)
        assert reach.max() <= 1.01 * length
        assert np.abs(s.strain()).max() < 0.01
    assert s.steps == 300
    # The chain swung down under gravity.
    assert s.x[-1, 1] < -0.5


def stiff_chain_energies(newton_max_iter: int, steps: int = 300) -> tuple[np.ndarray, list[dict]]:
    """Mechanical energy of the stiff chain at h = 1/60 before and after each step, and the
    solver statistics of every step."""
    s = scenes.stiff_chain()
    s.newton_max_iter = newton_max_iter
    energies = [s.energy().mechanical]
    stats = []
    for _ in range(steps):
        s.step(1.0 / 60.0)
        energies.append(s.energy().mechanical)
        stats.append(s.solver_stats)
    return np.array(energies), stats


def energy_scale() -> float:
    """Energy scale (J) of the stiff chain: its weight times its length."""
    return 100 * 0.001 * 9.81 * 0.99


def test_linearised_step_gains_energy_on_the_stiff_chain() -> None:
    energies, stats = stiff_chain_energies(newton_max_iter=1)
    assert all(step["newton_iterations"] == 1 for step in stats)
    assert energies.max() - energies[0] > 0.1


def test_converged_newton_never_gains_energy_on_the_stiff_chain() -> None:
    energies, stats = stiff_chain_energies(newton_max_iter=50)
    tolerance = 1e-9 * energy_scale()
    assert all(step["newton_converged"] for step in stats)
    assert energies.max() <= energies[0] + tolerance
    # Stronger: with every spring stretched, backward Euler is energy-non-increasing step
    # by step.
    assert np.diff(energies).max() <= tolerance
    # And it does dissipate (numerically): the chain does not keep all its energy.
    assert energies[-1] < energies[0] - 0.01 * energy_scale()


# --------------------------------------------------------------------------------------
# The first Newton iteration is Baraff & Witkin's linearised step


def test_one_newton_iteration_is_the_baraff_witkin_step() -> None:
    rng = np.random.default_rng(11)
    n_nodes, h = 6, 0.05
    positions = rng.uniform(0.0, 1.0, size=(n_nodes, 3))
    springs = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 2], [1, 4], [2, 5], [0, 5], [3, 5]])
    lengths = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    # Half the springs stretched, half compressed: the clamped transverse term matters.
    rest = lengths * np.where(np.arange(len(springs)) % 2 == 0, 0.7, 1.3)
    s = msprings.System(
        positions,
        springs,
        mass=rng.uniform(0.5, 2.0, size=n_nodes),
        k=rng.uniform(50.0, 200.0, size=len(springs)),
        c=rng.uniform(0.1, 1.0, size=len(springs)),
        rest=rest,
        pinned=[0],
        velocities=rng.normal(0.0, 1.0, size=(n_nodes, 3)),
        drag=0.3,
        integrator="implicit_euler",
    )
    s.external[3] = [0.5, 1.0, -2.0]
    s.newton_max_iter = 1
    s.cg_tol = 1e-13
    x0, v0 = s.x.copy(), s.v.copy()

    stiffness, damping = tangent_matrices(s, x0)
    force = network_forces(s, x0, v0).ravel()
    free = np.repeat(~s.pinned, 3)
    mass = np.repeat(s.mass, 3)
    matrix = np.diag(mass) + h * damping + h * h * stiffness
    rhs = h * (force - h * stiffness @ v0.ravel())
    dv = np.zeros(3 * n_nodes)
    dv[free] = np.linalg.solve(matrix[np.ix_(free, free)], rhs[free])
    v_expected = v0 + dv.reshape(-1, 3)
    x_expected = x0 + h * v_expected

    s.step(h)
    stats = s.solver_stats
    assert stats["newton_iterations"] == 1 and stats["cg_converged"]
    np.testing.assert_allclose(s.v, v_expected, rtol=0, atol=1e-10 * np.abs(v_expected).max())
    np.testing.assert_allclose(s.x, x_expected, rtol=0, atol=1e-10 * np.abs(x_expected).max())
    np.testing.assert_allclose(s.f, network_forces(s, x0, v0), rtol=1e-12, atol=1e-12)
    # The linearised step is not the converged one here: the Newton residual is left over.
    assert not stats["newton_converged"] and stats["newton_residual"] > s.newton_tol


# --------------------------------------------------------------------------------------
# Solver statistics, the CG cap and its warning


def test_solver_stats_describe_a_converged_step() -> None:
    s = scenes.chain(11, integrator="implicit_euler")
    s.step(0.05)
    stats = s.solver_stats
    assert set(stats) == {
        "newton_iterations",
        "cg_iterations",
        "newton_residual",
        "cg_residual",
        "newton_converged",
        "cg_converged",
        "cg_failures",
    }
    assert 1 <= stats["newton_iterations"] <= s.newton_max_iter
    assert stats["cg_iterations"] >= stats["newton_iterations"]
    assert stats["newton_converged"] is True and stats["cg_converged"] is True
    assert 0.0 <= stats["newton_residual"] <= s.newton_tol
    assert 0.0 <= stats["cg_residual"] <= s.cg_tol
    assert stats["cg_failures"] == 0
    # A nonlinear problem takes more than the one linearised solve to converge.
    assert stats["newton_iterations"] >= 2
    # The stats are a fresh dict, not a live view.
    stats["newton_iterations"] = -1
    assert s.solver_stats["newton_iterations"] >= 1


def stiff_cloth(n: int, **options: object) -> msprings.System:
    """The stiff cloth of BENCH.md (k = 1e5 N/m, c = 0 unless given, 1 kg nodes, two corners
    pinned) with ``n`` nodes a side, implicit Euler."""
    options.setdefault("integrator", "implicit_euler")
    options.setdefault("c", 0.0)
    return scenes.cloth(n, k=1e5, **options)


# A cloth whose factor fills in, so that each Newton iteration runs CG on the diagonal
# preconditioner (a chain's matrix is factored and solved in one CG iteration, so it cannot
# exceed a cap of one).
CAPPED_CLOTH = 10


def dense_backward_euler(system: msprings.System, h: float) -> tuple[np.ndarray, np.ndarray]:
    """One backward Euler step of ``system`` from its state, by dense Newton iterations on
    M dv = h f(x + h (v + dv), v + dv) over the free nodes (tangent_matrices' K and C) until
    the update is at round-off; returns (x', v')."""
    x0, v0 = system.x.copy(), system.v.copy()
    free = np.repeat(~system.pinned, 3)
    mass = np.repeat(system.mass, 3)
    dv = np.zeros(3 * system.n_nodes)
    for _ in range(50):
        v1 = v0 + dv.reshape(-1, 3)
        x1 = x0 + h * v1
        residual = (mass * dv - h * network_forces(system, x1, v1).ravel())[free]
        stiffness, damping = tangent_matrices(system, x1)
        matrix = np.diag(mass) + h * damping + h * h * stiffness
        update = np.linalg.solve(matrix[np.ix_(free, free)], residual)
        dv[free] -= update
        if np.abs(update).max() <= 1e-12 * max(np.abs(dv).max(), 1.0):
            break
    else:
        raise AssertionError("the dense Newton iteration did not settle")
    v1 = v0 + dv.reshape(-1, 3)
    return x0 + h * v1, v1


@pytest.mark.parametrize(
    ("build", "factored", "newton_tol"),
    [
        (lambda: stiff_cloth(4, c=0.5, drag=0.2), True, 1e-11),
        (lambda: stiff_cloth(CAPPED_CLOTH, c=0.5, drag=0.2), False, 1e-10),
        (lambda: scenes.stiff_chain(), True, 3e-9),
    ],
    ids=["stiff-cloth-4", "stiff-cloth-10", "stiff-chain"],
)
def test_converged_steps_match_a_dense_newton_solve(
    build: Callable[[], msprings.System], factored: bool, newton_tol: float
) -> None:
    """Both linear solvers, A's sparse factor (small cloth, chain) and block-Jacobi
    preconditioned CG (a cloth whose factor fills in), converge to the dense solution of backward Euler's
    equations at h = 1/60 s, with dampers and drag in A where given.  Each Newton tolerance
    is a few times the round-off floor of that scene's residual (the chain's tensions
    cancel its 1 g nodes' weight to about 1e-9)."""
    s = build()
    s.newton_tol = newton_tol
    s.cg_tol = 1e-10
    h = 1.0 / 60.0
    for _ in range(3):
        x_expected, v_expected = dense_backward_euler(s, h)
        s.step(h)
        stats = s.solver_stats
        assert stats["newton_converged"] and stats["cg_converged"]
        assert np.abs(s.x - x_expected).max() <= 1e-9
        assert np.abs(s.v - v_expected).max() <= 1e-9 / h
        # Pinned nodes keep their place exactly.
        assert np.array_equal(s.x[s.pinned], x_expected[s.pinned])
        # With A's factor each linear solve meets even cg_tol = 1e-10 in one CG iteration
        # (a factor of a slightly different matrix would not); block Jacobi needs many.
        if factored:
            assert stats["cg_iterations"] == stats["newton_iterations"]
        else:
            assert stats["cg_iterations"] > 5 * stats["newton_iterations"]
    # The steps did something: the cloth or chain fell and stretched.
    assert np.abs(s.strain()).max() > 1e-4


def test_cg_cap_is_counted_warned_once_and_the_step_completes() -> None:
    s = stiff_cloth(CAPPED_CLOTH)
    s.cg_max_iter = 1
    s.newton_max_iter = 5
    with pytest.warns(msprings.SolverWarning) as record:
        for _ in range(4):
            s.step(1.0 / 60.0, 2)
            stats = s.solver_stats
            assert stats["cg_converged"] is False
            assert stats["cg_iterations"] == stats["newton_iterations"]
            assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
    assert sum(isinstance(w.message, msprings.SolverWarning) for w in record) == 1
    assert len(record) == 1
    assert s.solver_stats["cg_failures"] == 8
    assert s.steps == 8
    # A second system warns for itself.
    other = stiff_cloth(CAPPED_CLOTH)
    other.cg_max_iter = 1
    with pytest.warns(msprings.SolverWarning):
        other.step(1.0 / 60.0)
    assert other.solver_stats["cg_failures"] == 1


def test_cg_failures_are_cleared_by_reset() -> None:
    s = stiff_cloth(CAPPED_CLOTH)
    s.cg_max_iter = 1
    s.newton_max_iter = 2
    with pytest.warns(msprings.SolverWarning):
        s.step(1.0 / 60.0, 3)
    assert s.solver_stats["cg_failures"] == 3
    s.reset()
    assert s.solver_stats["cg_failures"] == 0


DEFAULTS = {"newton_max_iter": 50, "newton_tol": 1e-6, "cg_max_iter": 1000, "cg_tol": 1e-2}


def test_default_settings() -> None:
    s = scenes.chain(3, integrator="implicit_euler")
    for name, value in DEFAULTS.items():
        assert getattr(s, name) == value


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("newton_max_iter", 0, ValueError),
        ("newton_max_iter", -2, ValueError),
        ("newton_max_iter", 2.5, TypeError),
        ("newton_max_iter", "3", TypeError),
        ("newton_max_iter", None, TypeError),
        ("cg_max_iter", 0, ValueError),
        ("cg_max_iter", 10.0, TypeError),
        ("newton_tol", 0.0, ValueError),
        ("newton_tol", -1.0, ValueError),
        ("newton_tol", math.nan, ValueError),
        ("newton_tol", math.inf, ValueError),
        ("newton_tol", "small", TypeError),
        ("cg_tol", 0.0, ValueError),
        ("cg_tol", -1e-3, ValueError),
        ("cg_tol", math.nan, ValueError),
        ("cg_tol", 1e-3j, TypeError),
    ],
)
def test_bad_settings_raise_and_leave_the_setting_unchanged(name: str, value: object, error: type) -> None:
    s = scenes.chain(3, integrator="implicit_euler")
    changed = {"newton_max_iter": 7, "newton_tol": 1e-7, "cg_max_iter": 33, "cg_tol": 1e-3}
    for setting, good in changed.items():
        setattr(s, setting, good)
    with pytest.raises(error, match=name):
        setattr(s, name, value)
    for setting, good in changed.items():
        assert getattr(s, setting) == good


# --------------------------------------------------------------------------------------
# Dampers and drag: only dissipation


def test_implicit_with_dampers_and_drag_is_dissipative() -> None:
    s = scenes.chain(11, k=20.0, c=0.3, drag=0.05, integrator="implicit_euler")
    h = 1.0 / 60.0
    mechanical, total, dissipated = [], [], []
    for _ in range(240):
        s.step(h)
        energy = s.energy()
        mechanical.append(energy.mechanical)
        total.append(energy.total)
        dissipated.append(energy.dissipated)
        assert s.solver_stats["newton_converged"]
    scale = 11 * 9.81 * 10.0
    tolerance = 1e-9 * scale
    mechanical_a, total_a, dissipated_a = np.array(mechanical), np.array(total), np.array(dissipated)
    assert np.diff(mechanical_a).max() <= tolerance
    assert np.all(np.diff(dissipated_a) > 0.0)
    # Backward Euler's own damping comes on top of what dampers and drag removed: the ledger
    # books it as numerical, so the total stays put.
    assert np.abs(total_a - total_a[0]).max() <= tolerance
    assert s.ledger().numerical > 0.0 and s.ledger().dampers > 0.0 and s.ledger().drag > 0.0
    assert dissipated_a[-1] > 0.05 * (mechanical_a[0] - mechanical_a[-1])
