"""msprings.stability against closed forms and against the C integrators.

In scaled units (time 1/omega, velocity v/omega) one step a = omega h of each method on
x'' = -x - 2 zeta x' is a 2x2 matrix G(a, zeta).  Its eigenvalues are checked against the
known closed forms (energy factors, numerical frequency, stability limits), its local error
against the exact propagator, and G itself against one step of msprings.System on a single
damped spring.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import msprings
from msprings import stability

STEPS = np.array([0.05, 0.3, 0.9, 1.5, 1.99, 2.5, 3.5])
ORDER = {"explicit_euler": 1, "symplectic_euler": 1, "velocity_verlet": 2, "rk4": 4, "implicit_euler": 1, "projective": 1, "xpbd": 1}


def exact_propagator(omega_h: float, zeta: float) -> np.ndarray:
    """exp(A a) for A = [[0, 1], [-1, -2 zeta]], by its Taylor series (fine for a <= 0.1)."""
    generator = np.array([[0.0, 1.0], [-1.0, -2.0 * zeta]]) * omega_h
    term, total = np.eye(2), np.eye(2)
    for power in range(1, 25):
        term = term @ generator / power
        total = total + term
    return total


def rk4_factor(z: np.ndarray) -> np.ndarray:
    """RK4 stability function: the degree-4 Taylor polynomial of exp(z)."""
    return 1.0 + z + z**2 / 2.0 + z**3 / 6.0 + z**4 / 24.0


def oscillator_eigenvalues(omega_h: float, zeta: float) -> np.ndarray:
    """h lambda for the two modes of x'' = -omega^2 x - 2 zeta omega x' (roots of s^2 + 2 zeta s + 1)."""
    return omega_h * np.roots([1.0, 2.0 * zeta, 1.0]).astype(complex)


# ---------------------------------------------------------------------------------------
# Energy factors and frequencies (undamped)


def test_explicit_euler_energy_grows_by_one_plus_a_squared() -> None:
    """Forward Euler: |lambda|^2 = 1 + (omega h)^2 per step."""
    np.testing.assert_allclose(stability.energy_ratio_per_step("explicit_euler", STEPS), 1.0 + STEPS**2, rtol=1e-14)


def test_implicit_euler_energy_shrinks_by_one_over_one_plus_a_squared() -> None:
    """Backward Euler: |lambda|^2 = 1 / (1 + (omega h)^2) per step, at every step size."""
    steps = np.concatenate([STEPS, [10.0, 1e3]])
    np.testing.assert_allclose(
        stability.energy_ratio_per_step("implicit_euler", steps), 1.0 / (1.0 + steps**2), rtol=1e-13
    )


def test_rk4_energy_factor_is_its_stability_polynomial_on_the_imaginary_axis() -> None:
    """RK4: |R(i a)|^2 = 1 - a^6/72 + a^8/576, through G and through stability_region."""
    expected = 1.0 - STEPS**6 / 72.0 + STEPS**8 / 576.0
    np.testing.assert_allclose(stability.energy_ratio_per_step("rk4", STEPS), expected, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(stability.stability_region("rk4", 0.0, STEPS) ** 2, expected, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet"])
def test_symplectic_methods_conserve_modified_energy_below_two(integrator: str) -> None:
    """det G = 1: exactly 1.0 while a < 2; beyond, the real eigenvalue's square."""
    below = STEPS[STEPS < 2.0]
    assert np.all(stability.energy_ratio_per_step(integrator, below) == 1.0)
    above = STEPS[STEPS > 2.0]
    half_trace = (above**2 - 2.0) / 2.0  # -T/2 with T = 2 - a^2
    largest = half_trace + np.sqrt(half_trace**2 - 1.0)
    np.testing.assert_allclose(stability.energy_ratio_per_step(integrator, above), largest**2, rtol=1e-12)


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet"])
def test_symplectic_numerical_period(integrator: str) -> None:
    """omega_num / omega = 2 arcsin(a/2) / a, so the period is pi h / arcsin(a/2)."""
    below = STEPS[STEPS < 2.0]
    np.testing.assert_allclose(
        stability.numerical_frequency(integrator, below), 2.0 * np.arcsin(below / 2.0) / below, rtol=1e-12
    )
    # Period in units of 1/omega (so h = a): T = pi h / arcsin(a / 2).
    period = 2.0 * math.pi * np.asarray(stability.numerical_period_ratio(integrator, below))
    np.testing.assert_allclose(period, math.pi * below / np.arcsin(below / 2.0), rtol=1e-12)
    assert np.all(np.isnan(stability.numerical_frequency(integrator, STEPS[STEPS > 2.0])))


@pytest.mark.parametrize("integrator", ["explicit_euler", "implicit_euler"])
def test_euler_numerical_frequency_is_arctan(integrator: str) -> None:
    """Both Euler methods turn by arg(1 +- i a) = arctan(a) per step (they lag the exact a)."""
    np.testing.assert_allclose(stability.numerical_frequency(integrator, STEPS), np.arctan(STEPS) / STEPS, rtol=1e-13)


def test_rk4_numerical_frequency_is_phase_of_stability_polynomial() -> None:
    """RK4 turns by arg R(i a) per step, while |R(i a)| > 0."""
    steps = STEPS[STEPS < 2.5]
    phase = np.angle(rk4_factor(1j * steps))
    np.testing.assert_allclose(stability.numerical_frequency("rk4", steps), phase / steps, rtol=1e-12)


@pytest.mark.parametrize("integrator", stability.INTEGRATORS)
def test_frequency_tends_to_damped_frequency(integrator: str) -> None:
    """For small steps the numerical frequency approaches sqrt(1 - zeta^2); overdamped is NaN."""
    zeta, step = 0.4, 1e-4
    ratio = stability.numerical_frequency(integrator, step, zeta)
    assert abs(ratio - math.sqrt(1.0 - zeta**2)) < 10.0 * step
    assert math.isnan(stability.numerical_frequency(integrator, 0.1, 2.0))
    assert math.isnan(stability.numerical_frequency(integrator, 0.0, 0.1))


# ---------------------------------------------------------------------------------------
# The amplification matrix itself


@pytest.mark.parametrize("integrator", stability.INTEGRATORS)
def test_local_error_has_the_methods_order(integrator: str) -> None:
    """|G(a) - exp(A a)| = O(a^(p+1)) with damping: halving a divides it by 2^(p+1).

    For velocity Verlet this shows the predicted end velocity keeps it second order with a
    damper.
    """
    zeta = 0.3
    errors = [
        np.abs(stability.amplification_matrix(integrator, a, zeta) - exact_propagator(a, zeta)).max()
        for a in (0.04, 0.02)
    ]
    assert math.log2(errors[0] / errors[1]) == pytest.approx(ORDER[integrator] + 1, abs=0.1)


def test_implicit_euler_matrix_solves_backward_euler_equations() -> None:
    """Each column satisfies w' - w = a acc(x', w') and x' = x + a w' (one exact solve)."""
    for a, zeta in ((0.3, 0.0), (2.0, 0.5), (50.0, 3.0)):
        matrix = stability.amplification_matrix("implicit_euler", a, zeta)
        for start in np.eye(2):
            x_new, w_new = matrix @ start
            assert x_new == pytest.approx(start[0] + a * w_new, abs=1e-14)
            assert w_new - start[1] == pytest.approx(a * (-x_new - 2.0 * zeta * w_new), abs=1e-12)


@pytest.mark.parametrize("integrator", ["explicit_euler", "rk4", "implicit_euler"])
@pytest.mark.parametrize("zeta", [0.0, 0.35, 1.0, 2.5])
def test_eigenvalues_are_stability_function_at_oscillator_modes(integrator: str, zeta: float) -> None:
    """For first-order methods, rho(G) = max |R(h lambda)| over the oscillator's two modes."""
    for step in (0.2, 1.3, 3.0):
        modes = oscillator_eigenvalues(step, zeta)
        expected = stability.stability_region(integrator, modes.real, modes.imag).max()
        assert stability.spectral_radius(integrator, step, zeta) == pytest.approx(expected, rel=1e-12)


def test_broadcasting_shapes() -> None:
    """omega_h and zeta broadcast; scalars give floats."""
    steps = np.array([0.1, 0.5, 1.0])
    zetas = np.array([[0.0], [0.7]])
    assert stability.amplification_matrix("rk4", steps, zetas).shape == (2, 3, 2, 2)
    assert np.shape(stability.spectral_radius("rk4", steps, zetas)) == (2, 3)
    assert isinstance(stability.spectral_radius("rk4", 0.5), float)
    assert np.shape(stability.stability_limit("symplectic_euler", [0.0, 0.5])) == (2,)
    matrices = stability.amplification_matrix("velocity_verlet", steps, zetas)
    np.testing.assert_array_equal(matrices[1, 2], stability.amplification_matrix("velocity_verlet", 1.0, 0.7))


# ---------------------------------------------------------------------------------------
# Stability limits


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet"])
def test_symplectic_methods_stable_iff_step_below_two(integrator: str) -> None:
    """Undamped: rho = 1 for a < 2, rho > 1 for a > 2."""
    steps = np.linspace(0.01, 1.999, 300)
    assert np.all(np.asarray(stability.spectral_radius(integrator, steps)) <= 1.0 + stability.RADIUS_TOLERANCE)
    assert np.all(np.asarray(stability.spectral_radius(integrator, np.linspace(2.001, 5.0, 300))) > 1.0)
    assert stability.stability_limit(integrator) == pytest.approx(2.0, rel=1e-12)


def test_rk4_stable_iff_step_at_most_two_root_two() -> None:
    """Undamped RK4: rho <= 1 exactly for a <= 2 sqrt 2."""
    limit = 2.0 * math.sqrt(2.0)
    assert np.all(np.asarray(stability.spectral_radius("rk4", np.linspace(0.01, limit, 300))) <= 1.0 + 1e-12)
    assert np.all(np.asarray(stability.spectral_radius("rk4", np.linspace(limit + 1e-3, 5.0, 300))) > 1.0)
    assert stability.stability_limit("rk4") == pytest.approx(limit, rel=1e-12)


@pytest.mark.parametrize("zeta", [0.0, 0.1, 0.5, 1.0, 2.0, 10.0, 1e6])
def test_symplectic_euler_limit_closed_form(zeta: float) -> None:
    """Jury's conditions on lambda^2 - (2 - a^2 - 2 zeta a) lambda + (1 - 2 zeta a) give
    a^2 + 4 zeta a - 4 <= 0, i.e. a* = 2 (sqrt(1 + zeta^2) - zeta) = 2 / (sqrt(1 + zeta^2) + zeta)."""
    expected = 2.0 / (math.sqrt(1.0 + zeta * zeta) + zeta)
    assert stability.stability_limit("symplectic_euler", zeta) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("zeta", [0.05, 0.3, 0.8, 1.0, 1.5, 4.0, 1e6])
def test_explicit_euler_limit_closed_form(zeta: float) -> None:
    """2 zeta (zeta <= 1: |1 + z|^2 = 1 - 2 zeta a + a^2) and 2 (zeta - sqrt(zeta^2 - 1)) beyond.

    Below zeta = 1 the radius crosses 1 with slope only zeta, so the tolerance moves the
    limit to the root of sqrt(1 - 2 zeta a + a^2) = 1 + tol, which is matched to 1e-12.
    """
    limit = stability.stability_limit("explicit_euler", zeta)
    if zeta <= 1.0:
        assert limit == pytest.approx(2.0 * zeta, rel=1e-9)
        radius = 1.0 + stability.RADIUS_TOLERANCE
        assert limit == pytest.approx(zeta + math.sqrt(zeta**2 + radius**2 - 1.0), rel=1e-12)
    else:
        assert limit == pytest.approx(2.0 / (zeta + math.sqrt(zeta**2 - 1.0)), rel=1e-12)


@pytest.mark.parametrize("zeta", [1.2, 3.0])
def test_rk4_overdamped_limit_from_real_axis_interval(zeta: float) -> None:
    """Overdamped, both modes are real: the fast one z = -a (zeta + sqrt(zeta^2 - 1)) must stay
    in RK4's real interval [-2.785..., 0], whose end is the real root of z^3 + 4 z^2 + 12 z + 24."""
    roots = np.roots([1.0, 4.0, 12.0, 24.0])
    edge = float(roots[np.abs(roots.imag) < 1e-12].real[0])
    expected = -edge / (zeta + math.sqrt(zeta**2 - 1.0))
    assert stability.stability_limit("rk4", zeta) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("zeta", [0.1, 0.5, 1.0, 2.0])
def test_velocity_verlet_limit_from_jury_conditions(zeta: float) -> None:
    """Expanding the Verlet update (predicted end velocity in the damper) by hand gives
    T = -(a^4 zeta^2 + 2 a^3 zeta^3 - 2 a^3 zeta - 4 a^2 zeta^2 + 2 a^2 + 4 a zeta - 4) / 2 and
    D = 1 - 2y + 2y^2 - y^3 with y = zeta a.  By Jury's conditions stability ends at the first
    positive root of 1 + T + D or of 1 + D (1 - D = y (y^2 - 2y + 2) >= 0 and
    1 - T + D = a^2 (y^2 - 2y + 2) / 2 >= 0 hold for every a)."""
    a = np.array([0.37, 1.1, 2.3])
    matrices = stability.amplification_matrix("velocity_verlet", a, zeta)
    y = zeta * a
    trace = -(a**4 * zeta**2 + 2 * a**3 * zeta**3 - 2 * a**3 * zeta - 4 * a**2 * zeta**2 + 2 * a**2 + 4 * a * zeta - 4) / 2
    np.testing.assert_allclose(np.trace(matrices, axis1=-2, axis2=-1), trace, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(np.linalg.det(matrices), 1 - 2 * y + 2 * y**2 - y**3, rtol=1e-12, atol=1e-13)
    sum_polynomial = [-zeta**2 / 2, -2 * zeta**3 + zeta, 4 * zeta**2 - 1, -4 * zeta, 4]  # 1 + T + D in a
    determinant_polynomial = [-(zeta**3), 2 * zeta**2, -2 * zeta, 2]  # 1 + D in a
    candidates = [
        root.real
        for root in np.concatenate([np.roots(sum_polynomial), np.roots(determinant_polynomial)])
        if abs(root.imag) < 1e-9 and root.real > 0
    ]
    assert stability.stability_limit("velocity_verlet", zeta) == pytest.approx(min(candidates), rel=1e-10)


def test_extreme_limits() -> None:
    """Explicit Euler undamped is unstable at every step; backward Euler at none."""
    assert stability.stability_limit("explicit_euler", 0.0) == 0.0
    assert stability.stability_limit("implicit_euler", 0.0) == math.inf
    assert stability.stability_limit("implicit_euler", 3.0) == math.inf
    assert np.all(np.asarray(stability.spectral_radius("implicit_euler", np.geomspace(1e-3, 1e6, 50), 0.2)) < 1.0)


@pytest.mark.parametrize("integrator", ["explicit_euler", "symplectic_euler", "velocity_verlet", "rk4"])
@pytest.mark.parametrize("zeta", [0.0, 0.25, 0.9, 1.7])
def test_limit_is_the_first_crossing(integrator: str, zeta: float) -> None:
    """Stable on a fine grid of (0, a*], unstable just above a*."""
    limit = stability.stability_limit(integrator, zeta)
    if limit == 0.0:
        assert stability.spectral_radius(integrator, 1e-3, zeta) > 1.0
        return
    radius = stability.spectral_radius(integrator, np.linspace(limit / 5000.0, limit, 5000), zeta)
    assert np.all(np.asarray(radius) <= 1.0 + stability.RADIUS_TOLERANCE)
    assert stability.spectral_radius(integrator, limit * (1.0 + 1e-9), zeta) > 1.0


def test_region_grid_matches_limits() -> None:
    """The (omega h, zeta) grid: radius <= 1 exactly where omega h <= a*(zeta)."""
    steps, zetas, radius = stability.region_grid("symplectic_euler", omega_h_max=3.0, zeta_max=1.5, n=61)
    assert steps.shape == zetas.shape == radius.shape == (61, 61)
    np.testing.assert_array_equal(steps[0], np.linspace(0.0, 3.0, 61))
    np.testing.assert_array_equal(zetas[:, 0], np.linspace(0.0, 1.5, 61))
    limit = 2.0 * (np.sqrt(1.0 + zetas**2) - zetas)
    clear = np.abs(steps - limit) > 1e-6
    stable = radius <= 1.0 + stability.RADIUS_TOLERANCE
    np.testing.assert_array_equal(stable[clear], (steps <= limit)[clear])


def test_stability_region_first_order_methods() -> None:
    """|R| = 1 on each method's boundary circle, < 1 inside, > 1 outside."""
    angle = np.linspace(0.0, 2.0 * math.pi, 17)
    circle = np.exp(1j * angle)
    np.testing.assert_allclose(stability.stability_region("explicit_euler", -1.0 + circle.real, circle.imag), 1.0)
    np.testing.assert_allclose(stability.stability_region("implicit_euler", 1.0 + circle.real, circle.imag), 1.0)
    real, imag = np.meshgrid(np.linspace(-3.0, 3.0, 7), np.linspace(-2.0, 2.0, 5))
    grid = stability.stability_region("rk4", real, imag)
    assert grid.shape == (5, 7)
    np.testing.assert_allclose(grid, np.abs(rk4_factor(real + 1j * imag)), rtol=1e-14)
    assert stability.stability_region("implicit_euler", -100.0, 0.0) < 1.0
    assert stability.stability_region("explicit_euler", 0.5, 0.0) > 1.0


# ---------------------------------------------------------------------------------------
# Bad input


def test_bad_input() -> None:
    """Unknown names list the valid ones; negative or NaN steps and damping are refused."""
    with pytest.raises(ValueError, match="velocity_verlet"):
        stability.spectral_radius("leapfrog", 0.5)
    with pytest.raises(ValueError, match="omega_h"):
        stability.amplification_matrix("rk4", -0.1)
    with pytest.raises(ValueError, match="omega_h"):
        stability.numerical_frequency("rk4", [0.1, float("nan")])
    with pytest.raises(ValueError, match="zeta"):
        stability.spectral_radius("rk4", 0.5, -0.2)
    with pytest.raises(ValueError, match="zeta"):
        stability.stability_limit("rk4", -1.0)
    with pytest.raises(ValueError, match="integrator"):
        stability.stability_limit("Euler")
    with pytest.raises(ValueError, match="n must"):
        stability.region_grid("rk4", n=1)
    for integrator in ("symplectic_euler", "velocity_verlet"):
        with pytest.raises(ValueError, match="oscillator"):
            stability.stability_region(integrator, 0.0, 1.0)


# ---------------------------------------------------------------------------------------
# Agreement with the C integrators

MASS, STIFFNESS, REST = 0.8, 5.0, 1.5
OMEGA = math.sqrt(STIFFNESS / MASS)


def spring_oscillator(integrator: str, zeta: float, u0: float, v0: float) -> msprings.System:
    """Node 0 pinned at the origin, node 1 at x = REST + u0 moving at v0 along x, no gravity."""
    return msprings.System(
        [[0.0, 0.0, 0.0], [REST + u0, 0.0, 0.0]],
        [[0, 1]],
        mass=MASS,
        k=STIFFNESS,
        c=2.0 * zeta * math.sqrt(STIFFNESS * MASS),
        rest=REST,
        pinned=[0],
        velocities=[[0.0, 0.0, 0.0], [v0, 0.0, 0.0]],
        gravity=(0.0, 0.0, 0.0),
        integrator=integrator,
    )


@pytest.mark.parametrize("integrator", stability.INTEGRATORS)
@pytest.mark.parametrize("omega_h, zeta", [(0.3, 0.0), (0.9, 0.25), (1.7, 1.4), (2.6, 0.05)])
def test_amplification_matrix_matches_one_system_step(integrator: str, omega_h: float, zeta: float) -> None:
    """One System step equals G applied to (x - L, v / omega), to round-off."""
    assert integrator in msprings.INTEGRATORS
    u0, v0 = 0.13, -0.4
    system = spring_oscillator(integrator, zeta, u0, v0)
    with warnings.catch_warnings():
        # Some of these steps exceed the method's stability limit on purpose.
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        system.step(omega_h / OMEGA)
    expected = stability.amplification_matrix(integrator, omega_h, zeta) @ np.array([u0, v0 / OMEGA])
    got = np.array([system.x[1, 0] - REST, system.v[1, 0] / OMEGA])
    np.testing.assert_allclose(got, expected, rtol=0.0, atol=1e-12)
    assert np.all(system.x[1, 1:] == 0.0) and np.all(system.v[1, 1:] == 0.0)


def scaled_energy(system: msprings.System) -> float:
    """E / k = ((x - L)^2 + (v/omega)^2) / 2 in m^2 for the spring oscillator."""
    return system.energy().mechanical / STIFFNESS


@pytest.mark.parametrize("zeta", [0.0, 0.15, 0.3])
def test_system_stable_just_below_limit_and_unstable_just_above(zeta: float) -> None:
    """Symplectic Euler on the System: 20000 steps at 0.98 a* stay within the linear bound
    cond(V)^2 E0 (V the eigenvectors of G); at 1.02 a* the energy grows > 10x or diverges."""
    limit = stability.stability_limit("symplectic_euler", zeta)
    u0, v0 = 1e-3, 2e-3
    chunks, per_chunk = 2000, 10

    step = 0.98 * limit
    _, vectors = np.linalg.eig(stability.amplification_matrix("symplectic_euler", step, zeta))
    bound = np.linalg.cond(vectors) ** 2
    system = spring_oscillator("symplectic_euler", zeta, u0, v0)
    start = scaled_energy(system)
    peak = start
    for _ in range(chunks):
        system.step(step / OMEGA, per_chunk)
        peak = max(peak, scaled_energy(system))
    assert system.steps == chunks * per_chunk
    assert peak <= bound * start * (1.0 + 1e-6)

    step = 1.02 * limit
    growth = 2 * chunks * per_chunk * math.log(stability.spectral_radius("symplectic_euler", step, zeta))
    assert growth > math.log(1e6)
    system = spring_oscillator("symplectic_euler", zeta, u0, v0)
    start = scaled_energy(system)
    peak = start
    with pytest.warns(msprings.StabilityWarning):
        try:
            for _ in range(chunks):
                system.step(step / OMEGA, per_chunk)
                peak = max(peak, scaled_energy(system))
        except msprings.DivergenceError:
            peak = math.inf
    assert peak > 10.0 * start
