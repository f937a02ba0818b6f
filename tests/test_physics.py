"""Physics of the integrators against closed forms and conservation laws.

A single spring between a pinned node and a free node, stretched along x with gravity off,
is the damped harmonic oscillator m u'' + c u' + k u = 0 (u = l - L); its closed-form
solution, the known amplification factors of each method and its order of convergence are
checked here, together with momentum and energy bookkeeping on small 3D networks and the
static stretch of a hanging chain.
"""

from __future__ import annotations

import contextlib
import math
from typing import ContextManager

import numpy as np
import pytest

import msprings

INTEGRATORS = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler")
ORDER = {"explicit_euler": 1, "symplectic_euler": 1, "velocity_verlet": 2, "rk4": 4, "implicit_euler": 1}

# Oscillator used throughout: omega = sqrt(k / m) = 2 pi rad/s (period 1 s).
MASS = 0.5
STIFFNESS = MASS * (2.0 * math.pi) ** 2
OMEGA = math.sqrt(STIFFNESS / MASS)
REST = 1.0


def damping_for(zeta: float) -> float:
    """Damping coefficient c (N s/m) giving damping ratio zeta on the oscillator."""
    return 2.0 * zeta * math.sqrt(STIFFNESS * MASS)


def damped_oscillator(t: float, u0: float, v0: float, omega: float, zeta: float) -> tuple[float, float]:
    """Closed-form displacement and velocity of u'' + 2 zeta omega u' + omega^2 u = 0."""
    if zeta < 1.0:
        omega_d = omega * math.sqrt(1.0 - zeta * zeta)
        decay = math.exp(-zeta * omega * t)
        a = u0
        b = (v0 + zeta * omega * u0) / omega_d
        cos, sin = math.cos(omega_d * t), math.sin(omega_d * t)
        u = decay * (a * cos + b * sin)
        v = -zeta * omega * u + decay * omega_d * (-a * sin + b * cos)
        return u, v
    if zeta == 1.0:
        decay = math.exp(-omega * t)
        b = v0 + omega * u0
        return (u0 + b * t) * decay, (b - omega * (u0 + b * t)) * decay
    root = math.sqrt(zeta * zeta - 1.0)
    r1 = -omega * (zeta - root)
    r2 = -omega * (zeta + root)
    c1 = (v0 - r2 * u0) / (r1 - r2)
    c2 = u0 - c1
    return (
        c1 * math.exp(r1 * t) + c2 * math.exp(r2 * t),
        c1 * r1 * math.exp(r1 * t) + c2 * r2 * math.exp(r2 * t),
    )


def oscillator(
    integrator: str, u0: float, v0: float, *, c: float = 0.0, drag: float = 0.0
) -> msprings.System:
    """Node 0 pinned at the origin, node 1 free at x = REST + u0 moving at v0 along x."""
    return msprings.System(
        [[0.0, 0.0, 0.0], [REST + u0, 0.0, 0.0]],
        [[0, 1]],
        mass=MASS,
        k=STIFFNESS,
        c=c,
        rest=REST,
        pinned=[0],
        velocities=[[0.0, 0.0, 0.0], [v0, 0.0, 0.0]],
        gravity=(0.0, 0.0, 0.0),
        drag=drag,
        integrator=integrator,
    )


def displacement(system: msprings.System) -> tuple[float, float]:
    """Signed stretch u = x_1 - L and velocity of the oscillator's free node."""
    return float(system.x[1, 0] - REST), float(system.v[1, 0])


def phase_error(system: msprings.System, u0: float, v0: float, zeta: float) -> float:
    """|(omega du, dv)| between the system and the closed form at the system's time."""
    u, v = displacement(system)
    u_exact, v_exact = damped_oscillator(system.t, u0, v0, OMEGA, zeta)
    return math.hypot(OMEGA * (u - u_exact), v - v_exact)


def oscillator_energy(system: msprings.System) -> float:
    """Kinetic + spring energy (the oscillator has no gravity)."""
    energy = system.energy()
    return energy.kinetic + energy.spring


def unstable_on_the_oscillator(integrator: str, omega_h: float, zeta: float = 0.0) -> bool:
    """Whether ``omega h`` is beyond the method's closed-form stability limit on the
    oscillator with damping ratio ``zeta``: 2 zeta for explicit Euler (zeta <= 1),
    2 (sqrt(1 + zeta^2) - zeta) for symplectic Euler, 2 for undamped velocity Verlet and
    2 sqrt 2 for undamped RK4 (and above 1.3 for both while zeta <= 1); implicit Euler has
    none."""
    if integrator == "implicit_euler":
        return False
    if integrator == "explicit_euler":
        assert zeta <= 1.0
        return omega_h > 2.0 * zeta
    if integrator == "symplectic_euler":
        return omega_h > 2.0 * (math.sqrt(1.0 + zeta * zeta) - zeta)
    if zeta > 0.0:
        # Damping lowers these limits, but for zeta <= 1 not below 1.3.
        assert zeta <= 1.0 and omega_h <= 1.3
        return False
    return omega_h > (2.0 if integrator == "velocity_verlet" else 2.0 * math.sqrt(2.0))


def stepping(integrator: str, omega_h: float, zeta: float = 0.0) -> ContextManager[object]:
    """Expects the StabilityWarning of a step beyond the limit (see
    :func:`unstable_on_the_oscillator`), and no warning below it."""
    if unstable_on_the_oscillator(integrator, omega_h, zeta):
        return pytest.warns(msprings.StabilityWarning, match=integrator)
    return contextlib.nullcontext()


def random_network(
    seed: int, n: int, *, pinned: tuple[int, ...] = (), spring_factor: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random positions, connected springs, masses and velocities for a small 3D network."""
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-1.0, 1.0, (n, 3))
    pairs = {(a, a + 1) for a in range(n - 1)}
    while len(pairs) < spring_factor * n:
        a, b = (int(u) for u in rng.choice(n, 2, replace=False))
        pairs.add((min(a, b), max(a, b)))
    springs = np.array(sorted(pairs))
    masses = rng.uniform(0.5, 2.0, n)
    velocities = rng.normal(0.0, 1.0, (n, 3))
    velocities[list(pinned)] = 0.0
    return positions, springs, masses, velocities


# ---------------------------------------------------------------------------------------
# The damped oscillator against its closed form


# Global error bound over two periods:  max phase error <= COEFFICIENT * (r h)^p * |(omega u0, v0)|
# with r the fastest rate of the solution (omega, or the larger real root when overdamped).
# Measured coefficients are about 1.4 / 0.6 / 0.2 / 0.025 / 1.4 at most; these leave a margin of ~4.
ERROR_COEFFICIENT = {
    "explicit_euler": 6.0,
    "symplectic_euler": 3.0,
    "velocity_verlet": 1.0,
    "rk4": 0.12,
    "implicit_euler": 6.0,
}
OSCILLATOR_DT = {
    "explicit_euler": 2e-4,
    "symplectic_euler": 2e-4,
    "velocity_verlet": 2e-3,
    "rk4": 1e-2,
    "implicit_euler": 2e-4,
}


def fastest_rate(zeta: float) -> float:
    """Largest |root| of s^2 + 2 zeta omega s + omega^2 (1/s)."""
    if zeta <= 1.0:
        return OMEGA
    return OMEGA * (zeta + math.sqrt(zeta * zeta - 1.0))


@pytest.mark.parametrize("zeta", [0.15, 1.0, 2.5], ids=["underdamped", "critical", "overdamped"])
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_damped_oscillator_follows_closed_form(integrator: str, zeta: float) -> None:
    """Trajectory within the method's O(h^p) error of the exact solution over 2 periods."""
    u0, v0 = 0.1, 0.3
    dt = OSCILLATOR_DT[integrator]
    system = oscillator(integrator, u0, v0, c=damping_for(zeta))
    scale = math.hypot(OMEGA * u0, v0)
    bound = ERROR_COEFFICIENT[integrator] * (fastest_rate(zeta) * dt) ** ORDER[integrator] * scale
    assert bound < 0.05 * scale
    steps_per_sample = round(0.05 / dt)
    worst = 0.0
    for _ in range(40):
        system.step(dt, steps_per_sample)
        worst = max(worst, phase_error(system, u0, v0, zeta))
        assert system.x[1, 1] == 0.0 and system.x[1, 2] == 0.0
    assert system.t == pytest.approx(2.0, rel=1e-12)
    assert worst < bound
    assert abs(displacement(system)[0] - u0) > 0.5 * u0


def estimated_order(integrator: str, zeta: float, damper: str, steps: tuple[int, int, int]) -> tuple[float, float]:
    """Orders log2(e(h)/e(h/2)) from errors at t = 0.7 s with 3 successively halved steps.

    0.7 s is not a multiple of the half period: at whole periods the O(h) offset between the
    velocities of symplectic Euler and the exact flow cancels and the method looks second order.
    """
    u0, v0 = 0.1, 0.3
    coefficient = damping_for(zeta)
    errors = []
    for n in steps:
        if damper == "spring":
            system = oscillator(integrator, u0, v0, c=coefficient)
        else:
            system = oscillator(integrator, u0, v0, drag=coefficient)
        # Undamped explicit Euler is unstable at every step: it warns, and still converges.
        with stepping(integrator, OMEGA * 0.7 / n, zeta):
            system.step(0.7 / n, n)
        errors.append(phase_error(system, u0, v0, zeta))
    return math.log2(errors[0] / errors[1]), math.log2(errors[1] / errors[2])


CONVERGENCE_STEPS = {
    "explicit_euler": (4000, 8000, 16000),
    "symplectic_euler": (4000, 8000, 16000),
    "velocity_verlet": (200, 400, 800),
    "rk4": (50, 100, 200),
    "implicit_euler": (4000, 8000, 16000),
}
ORDER_BAND = {1: (0.9, 1.1), 2: (1.9, 2.1), 4: (3.8, 4.2)}


@pytest.mark.parametrize(
    "zeta, damper", [(0.0, "spring"), (0.2, "spring"), (0.2, "drag")], ids=["undamped", "damper", "drag"]
)
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_convergence_order(integrator: str, zeta: float, damper: str) -> None:
    """Halving dt divides the error at a fixed time by 2^p (p = 1, 1, 2, 4, 1).

    Damping by the spring's damper or by drag is velocity dependent: Verlet keeps second
    order only because it uses a predicted end velocity for those forces.
    """
    low, high = ORDER_BAND[ORDER[integrator]]
    for order in estimated_order(integrator, zeta, damper, CONVERGENCE_STEPS[integrator]):
        assert low < order < high


# ---------------------------------------------------------------------------------------
# Energy of the undamped oscillator: the methods' amplification factors


def test_explicit_euler_energy_grows_by_one_plus_omega_h_squared() -> None:
    """Forward Euler multiplies the energy by exactly 1 + (omega h)^2 every step."""
    for omega_h in (0.05, 0.3, 1.0):
        dt = omega_h / OMEGA
        system = oscillator("explicit_euler", 0.01, 0.02)
        previous = oscillator_energy(system)
        # Unstable at any step without damping: the first step warns.
        with pytest.warns(msprings.StabilityWarning, match="explicit_euler"):
            system.step(dt)
        energy = oscillator_energy(system)
        assert energy / previous == pytest.approx(1.0 + omega_h**2, rel=1e-11)
        previous = energy
        # Keep the amplitude (growing by sqrt(1 + (wh)^2) a step) well inside the linear range.
        for _ in range(int(2.0 * math.log(20.0) / math.log(1.0 + omega_h**2)) - 1):
            system.step(dt)
            energy = oscillator_energy(system)
            assert energy / previous == pytest.approx(1.0 + omega_h**2, rel=1e-11)
            previous = energy


def test_implicit_euler_energy_decays_by_one_over_one_plus_omega_h_squared() -> None:
    """Backward Euler divides the energy by exactly 1 + (omega h)^2 every step, at any step:
    the spring is linear along its axis, so the Newton solve is exact."""
    for omega_h in (0.05, 1.0, 30.0):
        dt = omega_h / OMEGA
        system = oscillator("implicit_euler", 0.1, 0.2)
        previous = start = oscillator_energy(system)
        # Keep the amplitude (shrinking by sqrt(1 + (wh)^2) a step) far above rounding of x = L + u.
        for _ in range(max(1, int(2.0 * math.log(100.0) / math.log(1.0 + omega_h**2)))):
            system.step(dt)
            energy = oscillator_energy(system)
            assert energy / previous == pytest.approx(1.0 / (1.0 + omega_h**2), rel=1e-10)
            previous = energy
        # all of the loss is the solver's own, booked as numerical
        assert system.dissipated == system.ledger().numerical == pytest.approx(start - previous, rel=1e-12)


def test_rk4_energy_decays_by_its_amplification_factor() -> None:
    """RK4 multiplies the energy by |R(i omega h)|^2 = 1 - (wh)^6/72 + (wh)^8/576 per step."""
    for omega_h in (0.3, 0.8, 1.5):
        dt = omega_h / OMEGA
        factor = 1.0 - omega_h**6 / 72.0 + omega_h**8 / 576.0
        system = oscillator("rk4", 0.1, 0.2)
        previous = oscillator_energy(system)
        for _ in range(30):
            system.step(dt)
            energy = oscillator_energy(system)
            assert energy / previous == pytest.approx(factor, rel=1e-11)
            previous = energy


def test_rk4_is_stable_up_to_two_root_two() -> None:
    """|R(i omega h)| <= 1 until omega h = 2 sqrt 2, beyond which the energy grows."""
    for omega_h, grows in ((2.7, False), (2.9, True)):
        system = oscillator("rk4", 0.01, 0.0)
        initial = oscillator_energy(system)
        with stepping("rk4", omega_h):
            system.step(omega_h / OMEGA, 200)
        assert (oscillator_energy(system) > initial) == grows


def modified_energy(integrator: str, u: float, v: float, omega_h: float) -> float:
    """The quadratic invariant (over omega^2) that the symplectic methods conserve exactly.

    Symplectic Euler (v' = v - h w^2 u, u' = u + h v') conserves w^2 u^2 + v^2 - h w^2 u v
    evaluated at the step boundary; velocity Verlet conserves (1 - (wh)^2/4) w^2 u^2 + v^2.
    """
    h = omega_h / OMEGA
    if integrator == "symplectic_euler":
        return OMEGA**2 * u * u + v * v - h * OMEGA**2 * u * v
    return (1.0 - omega_h**2 / 4.0) * OMEGA**2 * u * u + v * v


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet"])
def test_symplectic_methods_keep_energy_bounded(integrator: str) -> None:
    """At omega h = 0.5 the energy oscillates but stays bounded over 10^4 steps.

    The method's modified energy is conserved to round-off, which pins the bound:
    the energy stays within the ratio of the extreme axes of the invariant ellipse.
    """
    omega_h = 0.5
    dt = omega_h / OMEGA
    u0, v0 = 0.1, 0.0
    system = oscillator(integrator, u0, v0)
    initial = oscillator_energy(system)
    invariant = modified_energy(integrator, u0, v0, omega_h)
    energies = np.empty(10_000)
    for index in range(energies.size):
        system.step(dt)
        energies[index] = oscillator_energy(system)
        u, v = displacement(system)
        assert modified_energy(integrator, u, v, omega_h) == pytest.approx(invariant, rel=1e-10)
    ratio = energies / initial
    if integrator == "symplectic_euler":
        low, high = 1.0 / (1.0 + omega_h / 2.0), 1.0 / (1.0 - omega_h / 2.0)
    else:
        low, high = 1.0 - omega_h**2 / 4.0, 1.0
    assert low * (1 - 1e-9) <= ratio.min() and ratio.max() <= high * (1 + 1e-9)
    # No trend: the last thousand steps span the same range as the first thousand.
    assert ratio[-1000:].max() == pytest.approx(ratio[:1000].max(), rel=1e-6)
    assert ratio[-1000:].min() == pytest.approx(ratio[:1000].min(), rel=1e-6)


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet"])
def test_symplectic_methods_blow_up_above_omega_h_two(integrator: str) -> None:
    """Stable at omega h = 1.9; at omega h = 2.1 the energy explodes until divergence."""
    stable = oscillator(integrator, 0.01, 0.0)
    initial = oscillator_energy(stable)
    stable.step(1.9 / OMEGA, 2000)
    assert oscillator_energy(stable) < 20.0 * initial

    unstable = oscillator(integrator, 0.01, 0.0)
    dt = 2.1 / OMEGA
    energies = [initial]
    with stepping(integrator, 2.1), pytest.raises(msprings.DivergenceError) as caught:
        for _ in range(5000):
            unstable.step(dt)
            energies.append(oscillator_energy(unstable))
    # Each step multiplies the energy by roughly lambda^2 with |lambda| ~ 1.88 while the
    # spring is linear; it overflows long before 5000 steps.
    assert energies[20] > 1e6 * initial
    # one step per call: the failed call is the next step, undone
    assert caught.value.step == unstable.steps + 1 and caught.value.call_step == 1
    assert caught.value.time == pytest.approx(unstable.t + dt, rel=1e-12)
    assert np.all(np.isfinite(unstable.x)) and np.all(np.isfinite(unstable.v))


# ---------------------------------------------------------------------------------------
# Conservation and constraints on 3D networks


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_momentum_of_free_network_is_conserved(integrator: str) -> None:
    """No gravity, drag or external force: internal springs and dampers conserve momentum,
    and the centre of mass moves in a straight line at constant speed.

    Implicit Euler conserves momentum when its equations are solved; an iterative solve
    stopped at a relative residual r changes it by up to about r |M dv| per step, so its
    linear solves are made exact to round-off here.
    """
    positions, springs, masses, velocities = random_network(5, 8)
    system = msprings.System(
        positions, springs, mass=masses, k=30.0, c=0.4, velocities=velocities,
        rest=1.0, gravity=(0.0, 0.0, 0.0), integrator=integrator,
    )
    system.cg_tol = 1e-12
    p0 = system.momentum()
    np.testing.assert_allclose(p0, masses @ velocities, rtol=1e-14)
    centre0 = masses @ positions / masses.sum()
    scale = float(masses @ np.linalg.norm(velocities, axis=1))
    dt = 2e-3
    for _ in range(20):
        system.step(dt, 100)
        np.testing.assert_allclose(system.momentum(), p0, rtol=0, atol=1e-12 * scale)
        centre = masses @ system.x / masses.sum()
        np.testing.assert_allclose(centre, centre0 + p0 / masses.sum() * system.t, rtol=0, atol=1e-11)
    # The network did deform: the internal motion is not a rigid translation.
    assert np.max(np.abs(system.v - p0 / masses.sum())) > 0.05


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_pinned_nodes_move_only_with_their_own_velocity(integrator: str) -> None:
    """A pinned node at rest stays exactly put; one with a velocity moves as x0 + v t."""
    positions, springs, masses, velocities = random_network(6, 7)
    pinned_velocity = np.array([0.3, -0.2, 0.5])
    velocities[0] = 0.0
    velocities[3] = pinned_velocity
    system = msprings.System(
        positions, springs, mass=masses, k=40.0, c=0.3, velocities=velocities,
        pinned=[0, 3], drag=0.1, energy_loss=0.01, integrator=integrator,
    )
    system.external[:] = 2.0
    dt = 1e-3
    for _ in range(10):
        system.step(dt, 50)
        assert np.array_equal(system.x[0], positions[0])
        assert np.array_equal(system.v[0], np.zeros(3))
        assert np.array_equal(system.v[3], pinned_velocity)
        np.testing.assert_allclose(system.x[3], positions[3] + pinned_velocity * system.t, rtol=1e-12, atol=1e-13)
    # The free nodes did respond to gravity and the springs.
    assert np.max(np.abs(system.x[[1, 2, 4, 5, 6]] - positions[[1, 2, 4, 5, 6]])) > 1e-2


def test_newtons_third_law_internal_forces_sum_to_zero() -> None:
    """With gravity, drag and external force off, sum of s.f vanishes to round-off."""
    positions, springs, masses, velocities = random_network(7, 12, spring_factor=3)
    rng = np.random.default_rng(7)
    system = msprings.System(
        positions, springs, mass=masses, k=rng.uniform(1.0, 100.0, len(springs)),
        c=rng.uniform(0.0, 2.0, len(springs)), rest=rng.uniform(0.2, 2.0, len(springs)),
        velocities=velocities, gravity=(0.0, 0.0, 0.0),
    )
    forces = system.update_forces()
    largest = float(np.max(np.abs(forces)))
    assert largest > 1.0
    np.testing.assert_allclose(forces.sum(axis=0), 0.0, rtol=0, atol=1e-13 * largest * len(springs))
    # Each node's force is a sum of axial terms, so the total torque about the origin vanishes too.
    torque = np.cross(system.x, forces).sum(axis=0)
    np.testing.assert_allclose(torque, 0.0, rtol=0, atol=1e-13 * largest * len(springs))


# ---------------------------------------------------------------------------------------
# Energy ledger: mechanical + dissipated is conserved up to the integrator's error


def hanging_network(integrator: str, *, energy_loss: float = 0.0) -> msprings.System:
    """A random 3D network hanging from one pinned node, with dampers and drag."""
    positions, springs, masses, velocities = random_network(11, 6, pinned=(0,))
    return msprings.System(
        positions, springs, mass=masses, k=25.0, c=0.3, velocities=velocities,
        pinned=[0], drag=0.2, energy_loss=energy_loss, integrator=integrator,
    )


def ledger_drift(integrator: str, dt: float, duration: float = 1.0) -> tuple[float, float, float]:
    """Largest |total(t) - total(0)| over the run, the initial mechanical energy scale,
    and the energy dissipated by the end."""
    system = hanging_network(integrator)
    start = system.energy()
    scale = start.kinetic + start.spring
    samples = 20
    steps = round(duration / dt / samples)
    drift = 0.0
    for _ in range(samples):
        system.step(dt, steps)
        drift = max(drift, abs(system.energy().total - start.total))
    return drift, scale, system.dissipated


@pytest.mark.parametrize(
    "integrator, dt, tolerance, ratio_band",
    [
        ("rk4", 2e-3, 3e-8, (13.0, 19.0)),
        ("velocity_verlet", 1e-3, 2e-4, (3.6, 4.4)),
        ("symplectic_euler", 1e-4, 5e-3, (1.8, 2.2)),
        ("explicit_euler", 1e-4, 5e-2, (1.8, 2.2)),
    ],
)
def test_energy_ledger_closes_to_the_integrators_order(
    integrator: str, dt: float, tolerance: float, ratio_band: tuple[float, float]
) -> None:
    """total = mechanical + dissipated stays constant up to O(h^p); halving h divides the
    drift by about 2^p (16 for RK4, whose dissipation uses its own stage weights)."""
    drift, scale, dissipated = ledger_drift(integrator, dt)
    assert dissipated > 0.1 * scale
    assert drift < tolerance * scale
    drift_half, _, _ = ledger_drift(integrator, dt / 2.0)
    low, high = ratio_band
    assert low < drift / drift_half < high


def test_implicit_euler_books_its_own_damping_and_the_ledger_closes() -> None:
    """Implicit Euler books its dampers and drag at the end of each step, and the rest of what
    it removes (its own first-order damping) as numerical: the total stays put to rounding,
    and what numerical books halves with the step."""
    booked = []
    for dt in (1e-4, 5e-5):
        drift, scale, dissipated = ledger_drift("implicit_euler", dt)
        assert dissipated > 0.1 * scale
        assert drift < 1e-10 * scale
        system = hanging_network("implicit_euler")
        system.step(dt, round(1.0 / dt))
        booked.append(system.ledger().numerical)
    assert 0.0 < booked[0] < 5e-2 * scale
    assert 1.8 < booked[0] / booked[1] < 2.2


def test_energy_loss_is_booked_as_dissipated() -> None:
    """With energy_loss, symplectic Euler at small dt still closes the ledger."""
    dt = 5e-5
    system = hanging_network("symplectic_euler", energy_loss=2e-4)
    start = system.energy()
    scale = start.kinetic + start.spring
    system.step(dt, 10_000)
    end = system.energy()
    assert end.dissipated > 0.5 * scale
    assert abs(end.total - start.total) < 1e-2 * scale
    without_loss = hanging_network("symplectic_euler")
    without_loss.step(dt, 10_000)
    # Most of what was booked came from energy_loss, not from the dampers and drag.
    assert end.dissipated - without_loss.dissipated > scale


def test_energy_loss_books_exactly_the_kinetic_energy_removed() -> None:
    """Free velocities scale by (1 - loss); the kinetic energy removed is booked exactly.

    No springs and no gravity, so the only change in one step is the energy loss; the
    pinned node keeps its velocity and does not count in the kinetic energy.
    """
    loss = 0.25
    free_mass, free_velocity = 3.0, np.array([0.0, 0.5, -1.0])
    system = msprings.System(
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=[2.0, free_mass],
        velocities=[[1.0, 2.0, 0.0], free_velocity], gravity=(0.0, 0.0, 0.0),
        energy_loss=loss, pinned=[0],
    )
    kinetic = 0.5 * free_mass * float(free_velocity @ free_velocity)
    assert system.energy().kinetic == pytest.approx(kinetic, rel=1e-15)
    system.step(0.1)
    np.testing.assert_allclose(system.v[1], (1.0 - loss) * free_velocity, rtol=1e-15)
    np.testing.assert_array_equal(system.v[0], [1.0, 2.0, 0.0])
    assert system.energy().kinetic == pytest.approx(kinetic * (1.0 - loss) ** 2, rel=1e-14)
    assert system.dissipated == pytest.approx(kinetic * (1.0 - (1.0 - loss) ** 2), rel=1e-14)


# ---------------------------------------------------------------------------------------
# Static equilibrium


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_hanging_chain_settles_to_static_stretch(integrator: str) -> None:
    """A damped vertical chain ends where each spring's tension is the weight below it."""
    masses = np.array([1.0, 0.2, 0.3, 0.25, 0.4, 0.1])
    stiffness = np.array([60.0, 80.0, 50.0, 70.0, 40.0])
    rest = np.array([0.3, 0.2, 0.25, 0.2, 0.15])
    g = 9.81
    n = len(masses)
    positions = np.zeros((n, 3))
    positions[1:, 1] = -np.cumsum(rest)
    springs = np.column_stack([np.arange(n - 1), np.arange(1, n)])
    system = msprings.System(
        positions, springs, mass=masses, k=stiffness, c=2.0, rest=rest, pinned=[0],
        gravity=(0.0, -g, 0.0), drag=0.5, integrator=integrator,
    )
    if integrator == "implicit_euler":
        # its steps are solved to newton_tol relative to the load (default 1e-6), and a step
        # that already meets it is taken with no solve: ask for the accuracy checked below
        system.newton_tol = 1e-11
    system.step(1e-3, 20_000)

    weight_below = g * np.cumsum(masses[::-1])[::-1][1:]
    expected_lengths = rest + weight_below / stiffness
    expected_y = -np.concatenate([[0.0], np.cumsum(expected_lengths)])
    np.testing.assert_allclose(system.tension(), weight_below, rtol=1e-9)
    np.testing.assert_allclose(system.lengths(), expected_lengths, rtol=1e-9)
    np.testing.assert_allclose(system.x[:, 1], expected_y, rtol=1e-9)
    np.testing.assert_array_equal(system.x[:, [0, 2]], 0.0)
    np.testing.assert_allclose(system.v, 0.0, atol=1e-9)
    np.testing.assert_allclose(system.strain(), weight_below / (stiffness * rest), rtol=1e-9)
