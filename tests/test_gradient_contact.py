"""Gradients through contact with colliders (csrc/src/kernels/contact.c, the derivatives at its
end; csrc/src/step/gradient.c): where no node starts or stops touching and none switches
between sliding and sticking, a run is a smooth function of its parameters and the backward
pass is its exact derivative.  So, for runs whose contact states the perturbations leave
unchanged (checked here, step by step), it agrees with central differences of the runs, with
the tangent pass to rounding, with a closed form for a node sliding on the ground with
friction, and with itself bit for bit for any checkpoint spacing and worker count.
"""
from __future__ import annotations

import numpy as np
import pytest

import msprings
from msprings import scenes

from gradient_checks import PARAMETERS, assert_adjoint_matches_tangent, direction

INTEGRATORS = ["symplectic_euler", "explicit_euler", "velocity_verlet", "rk4", "implicit_euler"]
G = 9.81
# Implicit Euler's Newton iterations converge to newton_tol = 1e-13 in these runs, while with
# nodes held on a collider some inner conjugate-gradient solve stops short of cg_tol (the
# Newton step that follows makes up for it): that warning is about the inner solve.
pytestmark = pytest.mark.filterwarnings("ignore::msprings.SolverWarning")


def prepared(s: msprings.System) -> msprings.System:
    if s.integrator == "implicit_euler":
        # the gradient is that of the exact backward-Euler step, taken where Newton stopped
        s.newton_tol = s.cg_tol = 1e-13
        s.cg_max_iter = 10000
    return s


def sliding_chain(integrator: str) -> msprings.System:
    """A chain of four nodes just above the ground, thrown along it: it lands, slides with
    friction (and a little restitution), and its head runs up a sphere lying on the ground;
    with the energy loss."""
    x = np.array([[0.25 * i, 0.002, 0.08 * np.sin(i)] for i in range(4)])
    s = msprings.System(x, [[0, 1], [1, 2], [2, 3], [0, 2]], k=[60.0, 80.0, 70.0, 30.0], c=[0.2, 0.1, 0.3, 0.1],
                        mass=[0.3, 0.2, 0.25, 0.35], integrator=integrator)
    s.rest[:] *= [1.02, 0.97, 1.0, 1.01]
    s.v[:] = [2.0, 0.0, 0.4]
    s.external[:] = [[0.1, 0.0, -0.2], [0.0, 0.0, 0.1], [-0.1, 0.0, 0.0], [0.2, 0.0, 0.05]]
    s.energy_loss = 0.002
    s.add_plane(friction=0.15, restitution=0.1)
    s.add_sphere([1.3, -0.6, 0.2], 0.7, friction=0.05, restitution=0.2)
    return prepared(s)


def resting_ball(integrator: str) -> msprings.System:
    """A ball of five nodes (a pyramid, all pairs joined, at rest length) dropped 0.89
    millimetre onto the ground with a small sideways velocity: its base lands, and static
    friction holds it."""
    x = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.0, 0.0, 0.3], [0.3, 0.0, 0.3], [0.15, 0.25, 0.15]])
    x[:, 1] += 0.00089  # between the heights at which the integrators land it, by 7e-5 m or more
    pairs = [[i, j] for i in range(5) for j in range(i + 1, 5)]
    s = msprings.System(x, pairs, k=np.linspace(120.0, 180.0, len(pairs)), c=0.4, mass=0.2,
                        integrator=integrator)
    s.v[:] = [0.01, 0.0, -0.005]
    s.add_plane(friction=1.0)
    return prepared(s)


def cloth_on_sphere(integrator: str, moving: bool = False) -> msprings.System:
    """A 3 x 3 cloth (0.2 m squares, structural and shear springs) dropped onto a sphere
    (moving sideways, or at rest): its middle lands on the sphere and the cloth slides over
    it."""
    grid = np.array([[0.2 * i, 0.0, 0.2 * j] for i in range(3) for j in range(3)])
    pairs = [[3 * i + j, 3 * i + j + 1] for i in range(3) for j in range(2)]
    pairs += [[3 * i + j, 3 * (i + 1) + j] for i in range(2) for j in range(3)]
    pairs += [[3 * i + j, 3 * (i + 1) + j + 1] for i in range(2) for j in range(2)]
    grid += np.random.default_rng(5).normal(scale=0.01, size=grid.shape)
    s = msprings.System(grid, pairs, k=np.linspace(30.0, 50.0, len(pairs)), c=0.1,
                        mass=np.linspace(0.05, 0.1, 9), integrator=integrator)
    s.v[:] = [0.325, -0.5, 0.056]
    s.add_sphere([0.169, -0.32, 0.249], 0.3, friction=0.1, velocity=(0.1, 0.0, 0.05) if moving else (0.0, 0.0, 0.0))
    return prepared(s)


SCENES = {"sliding chain": sliding_chain, "resting ball": resting_ball, "cloth on sphere": cloth_on_sphere,
          "cloth on moving sphere": lambda integrator: cloth_on_sphere(integrator, moving=True)}
DT, STEPS = 2e-3, 120


def contact_states(s: msprings.System, run) -> np.ndarray:
    """Per step and node: 0 free, 1 on a collider and sliding, 2 on it and stuck (at rest
    relative to it, as static friction leaves a node with no restitution).  A node on a
    collider is one contact left on its surface (at distance thickness = 0, to rounding)."""
    states = np.zeros(run.positions.shape[:2], dtype=np.int8)
    for collider in s.colliders:
        info = collider.describe()
        center = np.asarray(info["center"]) + np.arange(len(run.positions))[:, None] * DT * np.asarray(info["velocity"])
        r = run.positions - center[:, None, :]
        if info["kind"] == "plane":
            distance = r @ np.asarray(info["axis"])
            normal = np.broadcast_to(np.asarray(info["axis"]), r.shape)
        else:
            distance = np.linalg.norm(r, axis=2) - info["size"][0]
            normal = r / np.linalg.norm(r, axis=2)[..., None]
        touching = np.abs(distance) <= 1e-12 * (1.0 + np.abs(run.positions).sum(axis=2))
        relative = run.velocities - np.asarray(info["velocity"])
        tangential = relative - np.sum(relative * normal, axis=2)[..., None] * normal
        stuck = np.linalg.norm(tangential, axis=2) <= 1e-12
        states = np.where(touching, np.where(stuck, 2, 1), states)
    return states


def run_of(s: msprings.System, differentiable: bool = False, **options):
    return s.copy().run(DT, STEPS, 1, velocities=True, differentiable=differentiable, **options)


def loss_weights(s: msprings.System) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    shape = (STEPS + 1, s.n_nodes, 3)
    return rng.normal(size=shape), rng.normal(size=shape)


def central_difference(s: msprings.System, name: str, d: np.ndarray, weights, states: np.ndarray) -> float:
    """The fourth-order central difference of the loss along d, each run checked to touch,
    slide and stick where the unperturbed run does at every step."""
    base = getattr(s, name)
    scale = float(np.sqrt(np.mean(base**2))) if name in ("k", "c", "rest", "mass") else 1.0
    eps = 1e-5 * scale
    values = {}
    for multiple in (-2, -1, 1, 2):
        moved = s.copy()
        getattr(moved, name)[:] = base + multiple * eps * d
        run = run_of(moved)
        assert np.array_equal(contact_states(moved, run), states), f"{name} moved by {multiple} eps changes contact"
        values[multiple] = float(np.sum(weights[0] * run.positions) + np.sum(weights[1] * run.velocities))
    return (8.0 * (values[1] - values[-1]) - (values[2] - values[-2])) / (12.0 * eps)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("scene", list(SCENES))
def test_contact_gradient_matches_central_differences(scene, integrator):
    s = SCENES[scene](integrator)
    weights = loss_weights(s)
    run = run_of(s, differentiable=True)
    states = contact_states(s, run)
    # the run exercises contact: nodes touch, and (but for the resting ball) slide
    assert (states > 0).sum() > STEPS
    if scene == "resting ball":
        assert (states[-1, :4] == 2).all() or integrator == "implicit_euler"
    else:
        assert (states == 1).any()
    gradient = run.backward(*weights)
    for seed, name in enumerate(PARAMETERS):
        d = direction(s, name, seed)
        adjoint = float(np.sum(getattr(gradient, name) * d))
        difference = central_difference(s, name, d, weights, states)
        assert abs(adjoint - difference) <= 1e-6 * abs(adjoint), (name, adjoint, difference)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("scene", list(SCENES))
def test_contact_adjoint_and_tangent_agree_to_rounding(scene, integrator):
    """<adjoint(G), d> == <G, tangent(d)> for a direction moving every parameter at once."""
    s = SCENES[scene](integrator)
    weights = loss_weights(s)
    run = run_of(s, differentiable=True, checkpoint_every=10)
    assert_adjoint_matches_tangent(s, run, weights)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_sliding_node_follows_the_closed_form(integrator):
    """One free node on the ground (its spring to a far pin has k = 0) sliding with speed s0
    along t.  Each contact that stops its fall of speed u takes mu u off its sliding speed, in
    its direction, so the velocity before step k is v_k = v0 (1 - C_k / s0), C_k the speed
    friction took before it, and x_N = x_0 + h sum v_k:
        dx_N/dv0 = N h t t^T + h (N - sum C_k / s0) (I - t t^T).
    The symplectic methods (and Verlet, RK4) land it every step with u = g h: C_k = k mu g h.
    Explicit Euler moves it with the velocity before the step, so it stays on the surface one
    step (no contact) and falls below it the next with u = 2 g h: C_k = 2 mu g h floor(k / 2).
    Implicit Euler holds it inside its solve (its normal velocity kept), and the contact after
    the step finds it on the surface: no friction, C_k = 0, dx_N/dv0 = N h I."""
    h, steps, mu = 1e-3, 300, 0.2
    s = msprings.System([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]], [[0, 1]], k=0.0, pinned=[1], integrator=integrator)
    v0 = np.array([1.0, 0.0, 0.5])
    s.v[0] = v0
    s.add_plane(friction=mu)
    run = s.run(h, steps, steps, velocities=True, differentiable=True)
    s0, t = np.linalg.norm(v0), v0 / np.linalg.norm(v0)
    k = np.arange(steps + 1)
    taken = {"implicit_euler": 0.0 * k, "explicit_euler": 2.0 * mu * G * h * (k // 2)}.get(integrator, mu * G * h * k)
    assert np.allclose(run.velocities[-1, 0], v0 * (1.0 - taken[-1] / s0), rtol=1e-12, atol=1e-14)
    across = np.eye(3) - np.outer(t, t)
    closed = steps * h * np.outer(t, t) + h * (steps - taken[:-1].sum() / s0) * across
    for axis in (0, 2):
        weights = np.zeros(run.positions.shape)
        weights[-1, 0, axis] = 1.0
        gradient = run.backward(weights)
        assert np.allclose(gradient.v[0][[0, 2]], closed[axis][[0, 2]], rtol=1e-10, atol=1e-15), axis
        assert np.allclose(gradient.x[0][[0, 2]], np.eye(3)[axis][[0, 2]], rtol=1e-12, atol=1e-15)
    tangent = run.tangent(v=np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert np.allclose(tangent.positions[-1, 0][[0, 2]], closed[[0, 2], 0], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("scene", ["cloth on moving sphere", "resting ball"])
def test_contact_gradient_is_the_same_for_every_checkpoint_spacing(scene, integrator):
    """A moving collider is put where the run moved it at each checkpoint; implicit Euler
    finds the nodes it holds on a collider at rest again as the step found them."""
    s = SCENES[scene](integrator)
    weights = loss_weights(s)
    plain = run_of(s)
    gradients = []
    for every in (None, 1, 7, STEPS):
        run = run_of(s, differentiable=True, checkpoint_every=every)
        assert np.array_equal(run.positions, plain.positions) and np.array_equal(run.velocities, plain.velocities)
        gradients.append(run.backward(*weights))
    for gradient in gradients[1:]:
        for name in PARAMETERS:
            assert np.array_equal(getattr(gradient, name), getattr(gradients[0], name)), name


@pytest.mark.parametrize("integrator", ["symplectic_euler", "implicit_euler"])
def test_contact_gradient_is_the_same_for_every_worker_count(integrator):
    """A cloth large enough to step on two workers, falling onto a sphere and the ground."""
    s = scenes.cloth(72, integrator=integrator)
    assert s.n_springs >= 10000
    s.pinned[:] = False
    s.c[:] = 0.5
    low = s.x[:, 1].min()
    s.add_sphere(s.x.mean(axis=0) - [0.0, 0.5, 0.0], 0.49, friction=0.2)
    s.add_plane(point=(0.0, low - 0.001, 0.0), friction=0.5)
    s.v[:] = [0.0, -2.0, 0.0]
    weights = np.random.default_rng(0).normal(size=(3, s.n_nodes, 3))
    gradients = []
    for threads in (1, 2):
        copy = s.copy()
        copy.threads = threads
        run = copy.run(1e-3, 20, 10, differentiable=True, checkpoint_every=10)
        assert copy.workers == threads
        gradients.append(run.backward(weights))
    assert np.abs(gradients[0].x).max() > 0.0
    for name in PARAMETERS:
        assert np.array_equal(getattr(gradients[0], name), getattr(gradients[1], name)), name


def test_renumbered_network_keeps_its_state_before_contact_in_the_callers_numbering():
    """A cloth numbered at random steps on a renumbered copy: the state before contact that
    the passes read comes back in the caller's numbering, so the gradient is the run's."""
    base = cloth_on_sphere("symplectic_euler")
    place = np.random.default_rng(2).permutation(base.n_nodes)
    order = np.argsort(place)
    s = msprings.System(base.x[order], place[np.asarray(base.springs)], k=np.array(base.k), c=np.array(base.c),
                        mass=base.mass[order])
    s.rest[:] = base.rest
    s.v[:] = base.v[order]
    for collider in base.colliders:
        info = collider.describe()
        if info["kind"] == "plane":
            s.add_plane(info["center"], info["axis"], friction=info["friction"])
        else:
            s.add_sphere(info["center"], info["size"][0], friction=info["friction"])
    weights = loss_weights(s)
    run = run_of(s, differentiable=True)
    states = contact_states(s, run)
    gradient = run.backward(*weights)
    for name in ("x", "k"):  # the directions of the first numbering's test, renumbered
        d = direction(base, name, PARAMETERS.index(name))
        d = d[order] if name == "x" else d
        adjoint = float(np.sum(getattr(gradient, name) * d))
        assert abs(adjoint - central_difference(s, name, d, weights, states)) <= 1e-6 * abs(adjoint)


@pytest.mark.parametrize("change, message", [
    (lambda s: setattr(s, "self_collision", 0.01), "self-collision has no gradient"),
    (lambda s: setattr(s, "strain_limit", 0.1), "strain limiting has no gradient"),
])
def test_contact_options_without_a_gradient_are_refused(change, message):
    s = sliding_chain("symplectic_euler")
    change(s)
    before = s.x.copy()
    with pytest.raises(ValueError, match=message):
        s.run(DT, 10, differentiable=True)
    assert s.steps == 0 and np.array_equal(s.x, before)


def test_passes_through_contact_leak_nothing():
    """The passes' contact storage (the states before contact, the colliders' centres, implicit
    Euler's held nodes) is freed, on success and on a refused argument alike."""
    from test_memory import ALLOWED_GROWTH, build, settled_resident_bytes

    def once(integrator: str) -> None:
        s = build()
        s.integrator = integrator
        s.add_plane((0.0, -0.001, 0.0), friction=0.3)
        s.add_sphere((0.5, -0.3, 0.5), 0.3, friction=0.1, velocity=(0.0, 0.5, 0.0))
        run = s.run(1e-3, 20, 5, differentiable=True, checkpoint_every=10)
        shape = run.positions.shape
        run.backward(np.ones(shape), np.ones(shape))
        run.tangent(velocities=True, k=np.ones(s.n_springs), x=np.ones((s.n_nodes, 3)))
        try:
            run.backward(np.full(shape, np.nan))
        except ValueError:
            pass
        del run, s

    for integrator in ("symplectic_euler", "implicit_euler"):
        for _ in range(30):
            once(integrator)
        before = settled_resident_bytes()
        for _ in range(200):
            once(integrator)
        assert settled_resident_bytes() - before < ALLOWED_GROWTH, integrator


# A node just inside the band of thickness around each kind of collider surface, where the
# surface is flat (plane, box face, cylinder cap), curved one way (sphere, cylinder side, box
# edge rounded by the thickness) or two ways (box corner, cylinder rim): the projection's
# Jacobian carries the signed distance's Hessian there.
SURFACES = {
    "plane": (lambda s: s.add_plane((0.0, 0.0, 0.0), (0.3, 1.0, 0.2), friction=0.3, restitution=0.2),
              [0.1, -0.1, 0.2], [0.6, -0.8, 0.3]),
    "sphere": (lambda s: s.add_sphere((0.0, 0.0, 0.0), 0.5, friction=0.3, restitution=0.2),
               [0.2, 0.42, 0.1], [0.5, -0.6, 0.2]),
    "box face": (lambda s: s.add_box((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5), friction=0.3, thickness=0.05),
                 [0.2, 0.53, 0.1], [0.4, -0.7, 0.3]),
    "box edge": (lambda s: s.add_box((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5), friction=0.2, thickness=0.1),
                 [0.55, 0.56, 0.1], [-0.3, -0.5, 0.4]),
    "box corner": (lambda s: s.add_box((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5), friction=0.2, thickness=0.1),
                   [0.53, 0.55, 0.54], [-0.3, -0.4, 0.2]),
    "cylinder side": (lambda s: s.add_cylinder((0.0, 0.0, 0.0), 0.5, 1.0, (0.0, 0.0, 1.0), friction=0.2,
                                               thickness=0.05), [0.52, 0.1, 0.1], [-0.6, 0.5, 0.2]),
    "cylinder cap": (lambda s: s.add_cylinder((0.0, 0.0, 0.0), 0.5, 1.0, friction=0.2, thickness=0.05),
                     [0.1, 0.52, 0.1], [0.3, -0.6, 0.2]),
    "cylinder rim": (lambda s: s.add_cylinder((0.0, 0.0, 0.0), 0.5, 1.0, friction=0.2, thickness=0.05),
                     [0.52, 0.53, 0.05], [-0.4, -0.5, 0.3]),
}


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("surface", list(SURFACES))
def test_projection_onto_every_kind_of_surface_has_the_exact_jacobian(surface, integrator):
    """d(state after 4 steps)/d(initial state) of a node pushed out of each kind of surface and
    sliding along it, against central differences, for every direction of x0 and v0."""
    add, x0, v0 = SURFACES[surface]
    s = msprings.System([x0, [3.0, 3.0, 3.0]], [[0, 1]], k=0.0, pinned=[1], integrator=integrator)
    s.v[0] = v0
    add(s)
    prepared(s)
    h, steps = 1e-3, 4
    run = s.copy().run(h, steps, 1, velocities=True, differentiable=True)
    jacobian = np.zeros((6, 6))  # rows: final x, v; columns: x0, v0
    for row in range(6):
        weights = [np.zeros(run.positions.shape), np.zeros(run.positions.shape)]
        weights[row // 3][-1, 0, row % 3] = 1.0
        gradient = run.backward(*weights)
        jacobian[row] = np.concatenate([gradient.x[0], gradient.v[0]])
    eps = 1e-7
    for column in range(6):
        ends = []
        for sign in (1, -1):
            moved = s.copy()
            (moved.x if column < 3 else moved.v)[0, column % 3] += sign * eps
            end = moved.run(h, steps, steps, velocities=True)
            ends.append(np.concatenate([end.positions[-1, 0], end.velocities[-1, 0]]))
        difference = (ends[0] - ends[1]) / (2 * eps)
        assert np.allclose(jacobian[:, column], difference, rtol=1e-6, atol=1e-7), (column, jacobian[:, column],
                                                                                   difference)
    # the node was pushed (a free flight would give the identity)
    assert not np.allclose(jacobian[:3, :3], np.eye(3))
