"""The C core against the plain NumPy reference in tests/reference.py.

Random small networks (random geometry, springs, masses, stiffness, damping, rest lengths,
pinned nodes with a prescribed velocity, drag, energy loss, external forces and a gravity
vector in a random direction) are stepped by msprings and by the reference with every
integrator; states, forces, the dissipated energy and every diagnostic must agree to
round-off.  For implicit Euler msprings' iterative solvers are given tight tolerances, so
that its Newton iterations with matrix-free conjugate gradients and the reference's Newton
iterations with dense solves reach the same backward Euler state.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference  # noqa: E402

SEEDS = (1, 2, 3)
RTOL = 1e-10
SOLVER_TOL = 1e-12  # msprings' newton_tol and cg_tol in these comparisons


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float = RTOL, what: str = "") -> None:
    """Assert agreement relative to the largest magnitude in ``expected`` (round-off level)."""
    expected = np.asarray(expected, dtype=float)
    scale = max(float(np.max(np.abs(expected))), 1e-300) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


def random_network(seed: int) -> tuple[reference.Network, np.ndarray, np.ndarray]:
    """A random connected network with every force term switched on.

    Returns the reference parameters and the initial positions and velocities.  Two nodes
    are pinned and given a nonzero prescribed velocity; for odd seeds one pinned node has
    zero mass (allowed for pinned nodes).
    """
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 11))
    x0 = rng.uniform(-1.0, 1.0, (n, 3))
    pairs = {(a, a + 1) for a in range(n - 1)}
    while len(pairs) < 2 * n:
        a, b = (int(u) for u in rng.choice(n, 2, replace=False))
        pairs.add((min(a, b), max(a, b)))
    springs = np.array(sorted(pairs), dtype=np.int64)
    flip = rng.random(len(springs)) < 0.5
    springs[flip] = springs[flip][:, ::-1]
    m = len(springs)
    mass = rng.uniform(0.5, 2.0, n)
    pinned = np.zeros(n, dtype=bool)
    pinned_nodes = rng.choice(n, 2, replace=False)
    pinned[pinned_nodes] = True
    if seed % 2 == 1:
        mass[pinned_nodes[0]] = 0.0
    v0 = rng.normal(0.0, 0.5, (n, 3))
    initial_lengths = np.linalg.norm(x0[springs[:, 1]] - x0[springs[:, 0]], axis=1)
    net = reference.Network(
        springs=springs,
        mass=mass,
        pinned=pinned,
        k=rng.uniform(5.0, 50.0, m),
        c=rng.uniform(0.0, 0.5, m),
        rest=initial_lengths * rng.uniform(0.7, 1.3, m),
        gravity=rng.normal(0.0, 5.0, 3),
        drag=float(rng.uniform(0.05, 0.3)),
        energy_loss=float(rng.uniform(0.001, 0.02)),
        external=rng.normal(0.0, 1.0, (n, 3)),
    )
    return net, x0, v0


def build_system(net: reference.Network, x0: np.ndarray, v0: np.ndarray, integrator: str) -> msprings.System:
    """The msprings system with exactly the reference network's parameters, and implicit
    Euler's Newton and CG tolerances at SOLVER_TOL (the explicit methods ignore them)."""
    system = msprings.System(
        x0,
        net.springs,
        mass=net.mass,
        k=net.k,
        c=net.c,
        rest=net.rest,
        pinned=net.pinned,
        velocities=v0,
        gravity=tuple(net.gravity),
        drag=net.drag,
        energy_loss=net.energy_loss,
        integrator=integrator,
    )
    if net.external is not None:
        system.external[:] = net.external
    system.newton_tol = SOLVER_TOL
    system.cg_tol = SOLVER_TOL
    return system


def removed_by_forces(system: msprings.System) -> float:
    """What the dampers, drag and energy loss removed (J), as the reference books it: the
    dissipated parts but numerical, which the large-step solvers book for themselves."""
    ledger = system.ledger()
    return ledger.dampers + ledger.drag + ledger.contact + ledger.energy_loss


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("integrator", reference.INTEGRATORS)
def test_step_by_step_agrees_with_reference(integrator: str, seed: int) -> None:
    """Each step: x, v, s.f (force at the step's start), t, steps and dissipated agree."""
    net, x, v = random_network(seed)
    system = build_system(net, x, v, integrator)
    step_along_reference(system, net, x, v, 40)
    assert system.dissipated > 0.0


def step_along_reference(
    system: msprings.System, net: reference.Network, x: np.ndarray, v: np.ndarray, count: int, dt: float = 2e-3
) -> tuple[np.ndarray, np.ndarray]:
    """Steps system and the reference count times from (x, v); after each step x, v, s.f
    (force at the step's start), t, steps and dissipated must agree.  Returns the reference
    state at the end."""
    dissipated = system.dissipated
    free = ~net.pinned
    for done in range(1, count + 1):
        result = reference.step(net, x, v, dt, integrator=system.integrator)
        system.step(dt)
        assert_close(system.x, result.x, what=f"positions after step {done}")
        assert_close(system.v, result.v, what=f"velocities after step {done}")
        assert_close(system.f[free], result.force[free], what=f"force at the start of step {done}")
        dissipated += result.dissipated
        assert system.steps == done
        assert system.t == pytest.approx(done * dt, rel=1e-12)
        assert removed_by_forces(system) == pytest.approx(dissipated, rel=RTOL)
        x, v = result.x, result.v
    return x, v


@pytest.mark.parametrize("integrator", reference.INTEGRATORS)
def test_force_on_pinned_nodes_includes_every_term(integrator: str) -> None:
    """s.f on a pinned node is the full reference force there (the load the pin carries).

    Spring, damper, gravity (m g with the pinned node's own mass), drag and external force
    are all reported, as for a free node; only the motion ignores them.
    """
    net, x, v = random_network(SEEDS[0])
    system = build_system(net, x, v, integrator)
    system.step(1e-3)
    expected, _ = reference.forces(net, x, v)
    assert_close(system.f[net.pinned], expected[net.pinned])


@pytest.mark.parametrize("integrator", reference.INTEGRATORS)
def test_one_call_of_many_steps_equals_single_steps(integrator: str) -> None:
    """step(dt, n) inside C gives the same state as n reference steps."""
    net, x, v = random_network(SEEDS[1])
    system = build_system(net, x, v, integrator)
    dt, n = 1.5e-3, 30
    dissipated = 0.0
    for _ in range(n):
        result = reference.step(net, x, v, dt, integrator)
        x, v = result.x, result.v
        dissipated += result.dissipated
    system.step(dt, n)
    assert system.steps == n
    assert_close(system.x, x)
    assert_close(system.v, v)
    assert removed_by_forces(system) == pytest.approx(dissipated, rel=RTOL)


def test_switching_integrator_between_steps_agrees() -> None:
    """Changing s.integrator between steps switches the method used by the next step."""
    net, x, v = random_network(SEEDS[2])
    system = build_system(net, x, v, reference.INTEGRATORS[0])
    dt = 2e-3
    for count in range(12):
        name = reference.INTEGRATORS[count % len(reference.INTEGRATORS)]
        system.integrator = name
        assert system.integrator == name
        result = reference.step(net, x, v, dt, name)
        system.step(dt)
        x, v = result.x, result.v
        assert_close(system.x, x, what=f"positions after {name}")
        assert_close(system.v, v, what=f"velocities after {name}")


@pytest.mark.parametrize("integrator", reference.INTEGRATORS)
def test_parameters_written_through_views_take_effect(integrator: str) -> None:
    """Edits to k, c, rest, mass, external, gravity, drag, energy_loss between steps count."""
    net, x, v = random_network(SEEDS[0])
    system = build_system(net, x, v, integrator)
    dt = 2e-3
    rng = np.random.default_rng(99)
    for count in range(10):
        if count == 4:
            net.k = net.k * rng.uniform(0.5, 2.0, net.n_springs)
            net.c = net.c * rng.uniform(0.5, 2.0, net.n_springs)
            net.rest = net.rest * rng.uniform(0.9, 1.1, net.n_springs)
            net.mass = np.where(net.pinned, net.mass, net.mass * rng.uniform(0.5, 2.0, net.n_nodes))
            net.external = rng.normal(0.0, 2.0, (net.n_nodes, 3))
            net.gravity = rng.normal(0.0, 5.0, 3)
            net.drag = 0.5
            net.energy_loss = 0.05
            system.k[:] = net.k
            system.c[:] = net.c
            system.rest[:] = net.rest
            system.mass[:] = net.mass
            system.external[:] = net.external
            system.gravity = tuple(net.gravity)
            system.drag = net.drag
            system.energy_loss = net.energy_loss
        result = reference.step(net, x, v, dt, integrator)
        system.step(dt)
        x, v = result.x, result.v
        assert_close(system.x, x, what=f"positions after step {count + 1}")
        assert_close(system.v, v, what=f"velocities after step {count + 1}")


@pytest.mark.parametrize("seed", SEEDS)
def test_diagnostics_agree_with_reference_formulas(seed: int) -> None:
    """Energy components, momentum, lengths, strain and tension at a moving state."""
    net, x, v = random_network(seed)
    system = build_system(net, x, v, "rk4")
    dt = 2e-3
    dissipated = 0.0
    for _ in range(25):
        result = reference.step(net, x, v, dt, "rk4")
        x, v = result.x, result.v
        dissipated += result.dissipated
    system.step(dt, 25)

    energy = system.energy()
    kinetic = reference.kinetic_energy(net, v)
    spring = reference.spring_energy(net, x)
    gravity = reference.gravity_energy(net, x)
    assert energy.kinetic == pytest.approx(kinetic, rel=RTOL)
    assert energy.spring == pytest.approx(spring, rel=RTOL)
    assert energy.gravity == pytest.approx(gravity, rel=RTOL, abs=RTOL * abs(kinetic + spring))
    assert energy.dissipated == pytest.approx(dissipated, rel=RTOL)
    assert energy.mechanical == pytest.approx(energy.kinetic + energy.spring + energy.gravity, rel=1e-14, abs=1e-14)
    assert energy.total == pytest.approx(energy.mechanical + energy.dissipated - energy.work, rel=1e-14, abs=1e-14)

    assert_close(system.momentum(), reference.momentum(net, v))
    assert_close(system.lengths(), reference.lengths(net, x))
    assert_close(system.strain(), reference.strain(net, x))
    assert_close(system.tension(), reference.tension(net, x, v))


@pytest.mark.parametrize("seed", SEEDS)
def test_update_forces_at_a_state_written_through_views(seed: int) -> None:
    """update_forces() evaluates the reference force at whatever x, v the user wrote."""
    net, x, v = random_network(seed)
    system = build_system(net, x, v, "symplectic_euler")
    rng = np.random.default_rng(seed + 100)
    x_new = x + rng.normal(0.0, 0.1, x.shape)
    v_new = rng.normal(0.0, 1.0, v.shape)
    system.x[:] = x_new
    system.v[:] = v_new
    forces = system.update_forces()
    expected, _ = reference.forces(net, x_new, v_new)
    free = ~net.pinned
    assert_close(forces[free], expected[free])
    assert_close(system.f[free], expected[free])


def grid_network(seed: int, rows: int = 9, cols: int = 11) -> tuple[reference.Network, np.ndarray, np.ndarray]:
    """A rows x cols grid with structural, shear and bend springs in a shuffled order, each
    turned round at random, plus a few random long springs that make some nodes' springs
    differ from their neighbours'.  Geometry, velocities and every parameter are random.

    Four consecutive nodes whose springs match one for one (most of a grid's rows) are the
    case the core evaluates as vectors; the random extra springs, row ends and last rows
    go through its one-spring-at-a-time code."""
    rng = np.random.default_rng(seed)
    node = np.arange(rows * cols).reshape(rows, cols)
    pairs = [
        (node[:, :-1], node[:, 1:]),
        (node[:-1, :], node[1:, :]),
        (node[:-1, :-1], node[1:, 1:]),
        (node[:-1, 1:], node[1:, :-1]),
        (node[:, :-2], node[:, 2:]),
        (node[:-2, :], node[2:, :]),
    ]
    springs = np.concatenate([np.stack((a.ravel(), b.ravel()), axis=1) for a, b in pairs])
    extra = rng.choice(rows * cols, (5, 2), replace=False)
    springs = np.concatenate([springs, extra])
    springs = springs[rng.permutation(len(springs))]
    flip = rng.random(len(springs)) < 0.5
    springs[flip] = springs[flip][:, ::-1]
    n, m = rows * cols, len(springs)
    x0 = np.zeros((n, 3))
    x0[:, 0] = np.tile(np.arange(cols), rows) * 0.3
    x0[:, 2] = np.repeat(np.arange(rows), cols) * 0.3
    x0 += rng.normal(0.0, 0.03, x0.shape)
    pinned = np.zeros(n, dtype=bool)
    pinned[rng.choice(n, 3, replace=False)] = True
    initial_lengths = np.linalg.norm(x0[springs[:, 1]] - x0[springs[:, 0]], axis=1)
    net = reference.Network(
        springs=springs,
        mass=rng.uniform(0.5, 2.0, n),
        pinned=pinned,
        k=rng.uniform(5.0, 50.0, m),
        c=rng.uniform(0.0, 0.5, m),
        rest=initial_lengths * rng.uniform(0.8, 1.2, m),
        gravity=rng.normal(0.0, 5.0, 3),
        drag=0.05,
        energy_loss=0.0,
        external=None,
    )
    return net, x0, rng.normal(0.0, 0.5, (n, 3))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("integrator", reference.INTEGRATORS)
def test_grid_networks_agree_with_reference(integrator: str, seed: int) -> None:
    """Grids of matching springs: states, step forces and dissipated energy agree each step."""
    net, x, v = grid_network(seed)
    system = build_system(net, x, v, integrator)
    x, v = step_along_reference(system, net, x, v, 10)
    free = ~net.pinned
    # forces at an arbitrary state, and parameters changed through the views
    rng = np.random.default_rng(seed + 200)
    system.k[:] = net.k = rng.uniform(1.0, 80.0, len(net.k))
    system.rest[:] = net.rest = net.rest * rng.uniform(0.9, 1.1, len(net.rest))
    system.c[:] = net.c = rng.uniform(0.0, 1.0, len(net.c))
    system.x[:] = x = x + rng.normal(0.0, 0.05, x.shape)
    system.v[:] = v = rng.normal(0.0, 1.0, v.shape)
    expected, _ = reference.forces(net, x, v)
    assert_close(system.update_forces()[free], expected[free])


@pytest.mark.parametrize("integrator", ["symplectic_euler", "rk4"])
def test_jelly_lattice_agrees_with_reference(integrator: str) -> None:
    """A 3-D lattice (the jelly cube's structural, shear and bend springs: many springs per
    node, several of which reach into the next layers) with random parameters and a jiggled
    state agrees with the reference step by step."""
    from msprings.scenes import jelly_cube

    cube = jelly_cube(6)
    rng = np.random.default_rng(7)
    springs = np.array(cube.springs)
    m = len(springs)
    x0 = np.array(cube.x) + rng.normal(0.0, 0.01, cube.x.shape)
    pinned = np.zeros(cube.n_nodes, dtype=bool)
    pinned[:3] = True
    initial_lengths = np.linalg.norm(x0[springs[:, 1]] - x0[springs[:, 0]], axis=1)
    net = reference.Network(
        springs=springs,
        mass=rng.uniform(0.5, 2.0, cube.n_nodes),
        pinned=pinned,
        k=rng.uniform(50.0, 500.0, m),
        c=rng.uniform(0.0, 0.5, m),
        rest=initial_lengths * rng.uniform(0.9, 1.1, m),
        gravity=np.array([0.0, -9.81, 0.0]),
        drag=0.0,
        energy_loss=0.0,
        external=None,
    )
    system = build_system(net, x0, rng.normal(0.0, 0.2, x0.shape), integrator)
    step_along_reference(system, net, x0, np.array(system.v), 5, dt=1e-3)


def test_zero_length_spring_exerts_no_force() -> None:
    """Two coincident nodes joined by a spring: finite state, only gravity acts."""
    positions = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    springs = np.array([[0, 1], [1, 2]])
    net = reference.Network(
        springs=springs,
        mass=np.array([1.0, 2.0, 1.5]),
        pinned=np.zeros(3, dtype=bool),
        k=np.array([10.0, 10.0]),
        c=np.array([0.3, 0.3]),
        rest=np.array([0.5, 1.0]),
        gravity=np.array([0.0, -9.81, 0.0]),
    )
    velocities = np.zeros((3, 3))
    for integrator in reference.INTEGRATORS:
        system = build_system(net, positions, velocities, integrator)
        forces = system.update_forces()
        expected, _ = reference.forces(net, positions, velocities)
        assert_close(forces, expected)
        assert np.array_equal(forces[0], net.mass[0] * net.gravity)
        result = reference.step(net, positions, velocities, 1e-3, integrator)
        system.step(1e-3)
        assert np.all(np.isfinite(system.x)) and np.all(np.isfinite(system.v))
        assert_close(system.x, result.x)
        assert_close(system.v, result.v)


def test_strain_of_zero_rest_length_springs() -> None:
    """strain is +inf for L = 0 < l and 0 for L = l = 0, and (l - L)/L otherwise."""
    positions = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    springs = np.array([[0, 1], [1, 2], [0, 2]])
    rest = np.array([0.0, 0.0, 1.6])
    system = msprings.System(positions, springs, rest=rest, gravity=(0.0, 0.0, 0.0))
    strain = system.strain()
    assert strain[0] == 0.0
    assert strain[1] == np.inf
    assert strain[2] == pytest.approx((2.0 - 1.6) / 1.6, rel=1e-14)


# ---------------------------------------------------------------------------------------
# Implicit Euler: the linearised step, stiff large steps, and the default tolerances


@pytest.mark.parametrize("seed", SEEDS)
def test_linearised_implicit_step_agrees_with_reference(seed: int) -> None:
    """newton_max_iter = 1 is the single linearised solve (M + h C + h^2 K) dv = h (f0 - h K v)."""
    net, x, v = random_network(seed)
    system = build_system(net, x, v, "implicit_euler")
    system.newton_max_iter = 1
    dt = 5e-3
    dissipated = 0.0
    for count in range(1, 31):
        result = reference.step(net, x, v, dt, "implicit_euler", newton_max_iter=1)
        system.step(dt)
        assert system.solver_stats["newton_iterations"] == 1
        assert_close(system.x, result.x, what=f"positions after step {count}")
        assert_close(system.v, result.v, what=f"velocities after step {count}")
        dissipated += result.dissipated
        assert removed_by_forces(system) == pytest.approx(dissipated, rel=RTOL)
        x, v = result.x, result.v
    # The linearised step is not the converged one: the difference shows.
    converged = reference.step(net, x, v, dt, "implicit_euler")
    linearised = reference.step(net, x, v, dt, "implicit_euler", newton_max_iter=1)
    assert np.max(np.abs(converged.v - linearised.v)) > 1e3 * RTOL * np.max(np.abs(converged.v))


def stiff_network(seed: int) -> tuple[reference.Network, np.ndarray, np.ndarray]:
    """:func:`random_network` made stiff (k up to 2e4 N/m, omega h up to ~10 at the test's
    step) and with many springs compressed or stretched by up to 40 %, so Newton needs
    many iterations: the transverse stiffness of the compressed springs, clamped at 0 in
    the Jacobian, is really negative, so Newton converges only linearly (up to ~70
    iterations here, in msprings and the reference alike)."""
    net, x0, v0 = random_network(seed)
    rng = np.random.default_rng(seed + 1000)
    net.k = rng.uniform(2e3, 2e4, net.n_springs)
    net.rest = net.rest * rng.uniform(0.6, 1.4, net.n_springs)
    return net, x0, v0


@pytest.mark.parametrize("seed", SEEDS)
def test_stiff_large_implicit_steps_agree_with_reference(seed: int) -> None:
    """Far beyond every explicit limit, converged Newton in msprings (CG inside) and in the
    reference (dense solves) reaches the same backward Euler state step after step."""
    net, x, v = stiff_network(seed)
    system = build_system(net, x, v, "implicit_euler")
    system.newton_max_iter = reference.NEWTON_MAX_ITER
    dt = 0.02
    iterations = []
    for count in range(1, 16):
        result = reference.step(net, x, v, dt, "implicit_euler")
        system.step(dt)
        stats = system.solver_stats
        assert stats["newton_converged"] and stats["cg_failures"] == 0
        iterations.append(stats["newton_iterations"])
        assert_close(system.x, result.x, rtol=1e-9, what=f"positions after step {count}")
        assert_close(system.v, result.v, rtol=1e-9, what=f"velocities after step {count}")
        x, v = result.x, result.v
    # genuinely nonlinear steps (with the exact tangent after its first iteration Newton needs
    # at most 9, 9 and 46 iterations on these seeds; with the clamped one it needed 10 or more)
    assert max(iterations) >= 8
    assert np.all(np.isfinite(x))


@pytest.mark.parametrize("seed", SEEDS)
def test_default_solver_tolerances_agree_with_reference(seed: int) -> None:
    """With newton_tol = 1e-8 and cg_tol = 1e-4 (CG stopped early, Newton making
    up for it) the state agrees with the converged backward Euler state to about newton_tol
    per step (a few 1e-8 over these 15 steps), far below the method's own O(h) error."""
    net, x, v = stiff_network(seed)
    system = build_system(net, x, v, "implicit_euler")
    system.newton_max_iter = reference.NEWTON_MAX_ITER
    system.newton_tol = 1e-8
    system.cg_tol = 1e-4
    dt = 0.02
    for count in range(1, 16):
        result = reference.step(net, x, v, dt, "implicit_euler")
        system.step(dt)
        assert system.solver_stats["newton_converged"]
        assert_close(system.x, result.x, rtol=3e-7, what=f"positions after step {count}")
        assert_close(system.v, result.v, rtol=1e-6, what=f"velocities after step {count}")
        x, v = result.x, result.v
