"""Gradients through a run (msprings/_gradient.py, csrc/src/step/gradient.c): the backward pass is
the exact adjoint of the discrete steps, so it agrees with central differences of the runs
themselves, with the tangent (forward-mode) pass to rounding (the dot-product test), and with
itself for any checkpoint spacing and worker count, bit for bit.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import msprings
from msprings import scenes

from gradient_checks import PARAMETERS, assert_adjoint_matches_tangent, direction
from package_path import python_path

INTEGRATORS = ["symplectic_euler", "explicit_euler", "velocity_verlet", "rk4", "implicit_euler"]
DT, STEPS, EVERY = 2e-3, 240, 7


def network(integrator: str = "symplectic_euler", energy_loss: float = 0.0, side: int = 3) -> msprings.System:
    """A side x side cloth hanging from two pinned corners, one pin moving, with gravity, drag,
    dampers, an external force, springs away from their rest lengths and unequal masses."""
    rng = np.random.default_rng(7)
    s = scenes.cloth(side, integrator=integrator)
    s.x[:] += rng.normal(scale=0.02, size=s.x.shape)
    s.mass[:] = rng.uniform(0.5, 1.5, s.n_nodes)
    s.k[:] = rng.uniform(20.0, 60.0, s.n_springs)
    s.c[:] = rng.uniform(0.05, 0.3, s.n_springs)
    s.rest[:] *= rng.uniform(0.9, 1.1, s.n_springs)
    s.drag = 0.05
    s.energy_loss = energy_loss
    s.v[:] = rng.normal(scale=0.2, size=s.v.shape)
    s.v[s.pinned] = 0.0
    s.v[np.flatnonzero(s.pinned)[0]] = [0.05, 0.0, 0.02]
    s.external[:] = rng.normal(scale=0.5, size=s.external.shape)
    if integrator == "implicit_euler":
        # the gradient is that of the exact backward-Euler step, taken where Newton stopped:
        # central differences see the Newton solve's error, newton_tol
        s.newton_tol = s.cg_tol = 1e-13
    return s


def records(s: msprings.System) -> int:
    return 1 + (STEPS + EVERY - 1) // EVERY


def loss_weights(s: msprings.System) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    shape = (records(s), s.n_nodes, 3)
    return rng.normal(size=shape), rng.normal(size=shape)


def loss(s: msprings.System, weights: tuple[np.ndarray, np.ndarray]) -> float:
    """A linear loss of the recorded positions and velocities, so dL/d(records) is the weights."""
    run = s.copy().run(DT, STEPS, EVERY, velocities=True)
    return float(np.sum(weights[0] * run.positions) + np.sum(weights[1] * run.velocities))


def central_difference(s: msprings.System, name: str, d: np.ndarray, weights) -> float:
    """The fourth-order central difference of the loss along d, with a step scaled to the
    parameter (small enough for truncation, large enough for rounding)."""
    base = getattr(s, name).copy()
    scale = float(np.sqrt(np.mean(base**2))) if name in ("k", "c", "rest", "mass") else 1.0
    eps = 1e-4 * scale
    values = {}
    for multiple in (-2, -1, 1, 2):
        moved = s.copy()
        getattr(moved, name)[:] = base + multiple * eps * d
        values[multiple] = loss(moved, weights)
    return (8.0 * (values[1] - values[-1]) - (values[2] - values[-2])) / (12.0 * eps)


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("name", PARAMETERS)
def test_gradient_matches_central_differences(integrator, name):
    s = network(integrator, energy_loss=0.01 if integrator == "symplectic_euler" else 0.0)
    weights = loss_weights(s)
    gradient = s.copy().run(DT, STEPS, EVERY, differentiable=True).backward(*weights)
    for seed in (1, 2):
        d = direction(s, name, seed)
        adjoint = float(np.sum(getattr(gradient, name) * d))
        difference = central_difference(s, name, d, weights)
        assert abs(adjoint - difference) <= 1e-6 * abs(adjoint), (name, adjoint, difference)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_adjoint_and_tangent_agree_to_rounding(integrator):
    """<adjoint(G), d> == <G, tangent(d)> for a direction moving every parameter at once."""
    s = network(integrator, energy_loss=0.02)
    weights = loss_weights(s)
    run = s.run(DT, STEPS, EVERY, differentiable=True)
    assert_adjoint_matches_tangent(s, run, weights)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_checkpoint_spacing_and_differentiability_change_no_bit(integrator):
    s = network(integrator)
    weights = loss_weights(s)
    plain = s.copy().run(DT, STEPS, EVERY, velocities=True)
    gradients = []
    for every in (None, EVERY, 3 * EVERY, STEPS):
        run = s.copy().run(DT, STEPS, EVERY, velocities=True, differentiable=True, checkpoint_every=every)
        assert np.array_equal(run.positions, plain.positions) and np.array_equal(run.velocities, plain.velocities)
        assert np.array_equal(run.energy, plain.energy)
        gradients.append(run.backward(*weights))
    for gradient in gradients[1:]:
        for name in PARAMETERS:
            assert np.array_equal(getattr(gradient, name), getattr(gradients[0], name)), name


def test_gradient_is_the_same_for_every_worker_count():
    """A network large enough to step on two workers: the backward pass steps it again on
    one, reproducing the checkpoints bit for bit, and gives the bits of a one-worker run."""
    s = scenes.cloth(72)
    assert s.n_springs >= 10000
    s.c[:] = 0.5
    s.drag = 0.1
    weights = np.random.default_rng(0).normal(size=(3, s.n_nodes, 3))
    gradients = []
    for threads in (1, 2):
        copy = s.copy()
        copy.threads = threads
        run = copy.run(1e-3, 20, 10, differentiable=True, checkpoint_every=10)
        assert copy.workers == threads
        gradients.append(run.backward(weights))
    for name in PARAMETERS:
        assert np.array_equal(getattr(gradients[0], name), getattr(gradients[1], name)), name


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_backward_pass_on_two_threads_gives_the_bits_of_one(integrator: str) -> None:
    """With two or more threads the backward pass steps each stretch again on a second thread
    while it takes the next one back: the gradient is the one-thread gradient bit for bit,
    and that of a run kept whole (no checkpoints)."""
    s = network(integrator)
    weights = loss_weights(s)
    gradients = []
    for threads, every in ((1, 4 * EVERY), (2, 4 * EVERY), (3, 4 * EVERY), (2, STEPS)):
        copy = s.copy()
        copy.threads = threads
        run = copy.run(DT, STEPS, EVERY, velocities=True, differentiable=True, checkpoint_every=every)
        gradients.append(run.backward(*weights))
    for gradient in gradients[1:]:
        for name in PARAMETERS:
            assert np.array_equal(getattr(gradient, name), getattr(gradients[0], name)), name
    assert np.any(gradients[0].k != 0.0)


def test_backward_pass_threads_are_checked() -> None:
    """The binding refuses a thread count that is not one (0: the process's setting)."""
    s = network()
    run = s.run(DT, 20, 10, differentiable=True)
    arguments = run._tape.run_arguments()
    seeds = np.zeros(run.positions.shape)
    with pytest.raises(ValueError, match="threads"):
        run._tape.start.copy()._gradient_backward(*arguments, seeds, None, -1)
    with pytest.raises(TypeError, match="threads"):
        run._tape.start.copy()._gradient_backward(*arguments, seeds, None, 1.5)


def test_pinned_nodes_have_no_gradient():
    s = network()
    gradient = s.run(DT, STEPS, EVERY, differentiable=True).backward(*loss_weights(s))
    pinned = s.pinned
    for name in ("x", "v", "external"):
        assert not getattr(gradient, name)[pinned].any()
        assert getattr(gradient, name)[~pinned].any()
    assert not gradient.mass[pinned].any()
    assert gradient.k.shape == (s.n_springs,) and gradient.mass.shape == (s.n_nodes,)


def test_hanging_spring_height_follows_the_closed_form():
    """One node hanging from a pin on a spring that starts unstretched, along y:
    y(t) = -L - (m g / k) (1 - cos w t), w = sqrt(k / m), so
    dy/dk = (m g / k^2) (1 - cos w t) - (m g / k) t sin(w t) w / (2 k);
    symplectic Euler's step (h = 1e-5 s) tracks it to O(h)."""
    k, mass, g, length, h, steps = 40.0, 0.5, 9.81, 1.0, 1e-5, 30000
    s = msprings.System([[0, 0, 0], [0, -length, 0]], [[0, 1]], k=k, mass=mass, pinned=[0])
    run = s.run(h, steps, steps, differentiable=True)
    heights = np.zeros(run.positions.shape)
    heights[-1, 1, 1] = 1.0  # L = y of the hanging node at the end
    t = h * steps
    w = np.sqrt(k / mass)
    closed = mass * g / k**2 * (1 - np.cos(w * t)) - mass * g / k * t * np.sin(w * t) * w / (2 * k)
    assert run.backward(heights).k[0] == pytest.approx(closed, rel=2e-4)
    assert run.positions[-1, 1, 1] == pytest.approx(-length - mass * g / k * (1 - np.cos(w * t)), rel=1e-4)


def test_fit_recovers_stiffness_and_damping():
    from scipy.optimize import least_squares

    s = msprings.System([[0, 0, 0], [0.8, -0.5, 0], [1.5, -1.0, 0.2]], [[0, 1], [1, 2]], k=[30.0, 45.0],
                        c=[0.2, 0.1], pinned=[0])
    measured = s.copy().run(1e-3, 600, record_every=20).positions
    s.k[:] = [25.0, 50.0]
    s.c[:] = [0.3, 0.3]
    fit = msprings.PositionFit(s, 1e-3, 600, measured, {"k": None, "c": [0, 1]}, record_every=20)
    assert np.array_equal(fit.initial, [25.0, 50.0, 0.3, 0.3])
    result = least_squares(fit.residuals, fit.initial, jac=fit.jacobian, xtol=1e-14, ftol=1e-14, gtol=1e-14)
    assert np.allclose(result.x, [30.0, 45.0, 0.2, 0.1], rtol=1e-8)
    # the Jacobian's columns are the tangent runs: compare one with a central difference
    theta = fit.initial
    column = fit.jacobian(theta)[:, 1]
    eps = 1e-3

    def moved(multiple: int) -> np.ndarray:
        point = theta.copy()
        point[1] += multiple * eps
        return fit.residuals(point)

    difference = (8.0 * (moved(1) - moved(-1)) - (moved(2) - moved(-2))) / (12.0 * eps)
    assert np.allclose(column, difference, rtol=1e-6, atol=1e-9 * np.abs(column).max())


def test_bad_inputs_name_the_argument():
    s = network()
    run = s.copy().run(DT, STEPS, EVERY, differentiable=True)
    shape = run.positions.shape
    with pytest.raises(ValueError, match="positions must have shape"):
        run.backward(np.zeros((shape[0] - 1,) + shape[1:]))
    bad = np.zeros(shape)
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="positions holds a NaN"):
        run.backward(bad)
    with pytest.raises(ValueError, match="velocities holds a NaN"):
        run.backward(np.zeros(shape), bad)
    with pytest.raises(TypeError, match="positions must be an array"):
        run.backward("zeros")
    with pytest.raises(TypeError, match="complex"):
        run.backward(np.zeros(shape, dtype=complex))
    with pytest.raises(TypeError, match="needs positions"):
        run.backward()
    with pytest.raises(TypeError, match="not 'stiffness'"):
        run.tangent(stiffness=np.ones(s.n_springs))
    with pytest.raises(ValueError, match="k must have shape"):
        run.tangent(k=np.ones(s.n_springs + 1))
    with pytest.raises(ValueError, match="no gradient: record it"):
        s.copy().run(DT, STEPS, EVERY).backward(np.zeros(shape))
    with pytest.raises(ValueError, match="checkpoint_every = 10 must be a positive multiple of record_every = 7"):
        s.copy().run(DT, STEPS, EVERY, differentiable=True, checkpoint_every=10)
    with pytest.raises(TypeError, match="checkpoint_every must be an integer"):
        s.copy().run(DT, STEPS, EVERY, differentiable=True, checkpoint_every=7.0)
    with pytest.raises(ValueError, match="checkpoint_every needs differentiable=True"):
        s.copy().run(DT, STEPS, EVERY, checkpoint_every=7)


@pytest.mark.parametrize("change, message", [
    (lambda s: setattr(s, "integrator", "xpbd"), "xpbd has no gradient"),
    (lambda s: setattr(s, "integrator", "projective"), "projective has no gradient"),
    (lambda s: setattr(s, "strain_limit", 0.1), "strain limiting has no gradient"),
    (lambda s: setattr(s, "self_collision", 0.01), "self-collision has no gradient"),
    (lambda s: setattr(s, "wind", (1.0, 0.0, 0.0)), "drag with wind has no gradient"),
])
def test_what_has_no_gradient_is_refused_before_any_step(change, message):
    s = network()
    change(s)
    before = s.x.copy()
    with pytest.raises(ValueError, match=message):
        s.run(DT, 10, differentiable=True)
    assert s.steps == 0 and np.array_equal(s.x, before)


INTERRUPT = r"""
import signal, threading
import numpy as np
from msprings import scenes

s = scenes.cloth(20)
s.c[:] = 0.5
run = s.run(1e-3, 100000, 1000, differentiable=True)  # a backward pass of a second or more
main = threading.main_thread().ident
threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
try:
    run.backward(np.ones(run.positions.shape))
    print("finished")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_interrupts_the_backward_pass():
    out = subprocess.run([sys.executable, "-c", INTERRUPT], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=python_path()))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "interrupted", json.dumps(out.stdout)


INTERRUPT_TWO_THREADS = r"""
import signal, threading, time
import numpy as np
from msprings import scenes

s = scenes.cloth(8, integrator="implicit_euler")
s.threads = 2
start = time.perf_counter()
run = s.run(1e-3, 40000, 10000, differentiable=True, checkpoint_every=20000)  # two long stretches
forward = time.perf_counter() - start
main = threading.main_thread().ident
sent = []
def interrupt():
    sent.append(time.perf_counter())
    signal.pthread_kill(main, signal.SIGINT)
threading.Timer(0.2, interrupt).start()
try:
    run.backward(np.ones(run.positions.shape))
    print("finished", forward, 0.0)
except KeyboardInterrupt:
    print("interrupted", forward, time.perf_counter() - sent[0])
"""


def test_ctrl_c_reaches_a_backward_pass_on_two_threads_within_a_stretch():
    """The calling thread checks for Ctrl-C while it waits for the second thread's replay, and
    the replay stops at its next step: the pass ends well before one stretch's replay (half the
    forward run) would."""
    out = subprocess.run([sys.executable, "-c", INTERRUPT_TWO_THREADS], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=python_path()))
    assert out.returncode == 0, out.stderr
    outcome, forward, latency = out.stdout.split()
    assert outcome == "interrupted", out.stdout
    assert float(latency) < 0.25 * float(forward), out.stdout


def test_a_run_into_out_takes_or_drops_the_gradient():
    s = network()
    weights = loss_weights(s)
    reference = s.copy().run(DT, STEPS, EVERY, differentiable=True).backward(*weights)
    out = s.copy().run(DT, STEPS, EVERY)
    again = s.copy().run(DT, STEPS, EVERY, differentiable=True, out=out)
    assert again is out
    assert np.array_equal(out.backward(*weights).k, reference.k)
    s.copy().run(DT, STEPS, EVERY, out=out)
    with pytest.raises(ValueError, match="no gradient"):
        out.backward(*weights)
    exploding = s.copy()
    exploding.k[:] = 1e9  # far beyond the stable step: the run diverges
    with pytest.raises(msprings.DivergenceError), pytest.warns(msprings.StabilityWarning):
        exploding.run(DT, STEPS, EVERY, differentiable=True, out=out)
    with pytest.raises(ValueError, match="no gradient"):
        out.backward(*weights)


def test_backward_and_tangent_passes_leak_nothing():
    from test_memory import ALLOWED_GROWTH, build, settled_resident_bytes

    def once() -> None:
        s = build()
        run = s.run(1e-3, 20, 5, differentiable=True, checkpoint_every=10)
        shape = run.positions.shape
        run.backward(np.ones(shape), np.ones(shape))
        run.tangent(velocities=True, k=np.ones(s.n_springs), x=np.ones((s.n_nodes, 3)))
        for bad in (np.zeros((1, 1)), np.full(shape, np.nan)):
            try:
                run.backward(bad)
            except ValueError:
                pass
        del run, s

    for _ in range(50):
        once()
    before = settled_resident_bytes()
    for _ in range(400):
        once()
    assert settled_resident_bytes() - before < ALLOWED_GROWTH


def test_a_network_numbered_at_random_has_the_gradient_of_the_original():
    """A network numbered at random steps on a renumbered copy; stepping it again reproduces its
    checkpoints there too, and its gradient is the original's, renumbered (to rounding)."""
    s = network(side=10)
    place = np.random.default_rng(5).permutation(s.n_nodes)  # new number of each old node
    old = np.argsort(place)
    shuffled = msprings.System(s.x[old], place[s.springs], mass=s.mass[old], k=s.k, c=s.c, rest=s.rest,
                               pinned=place[np.flatnonzero(s.pinned)], velocities=s.v[old], drag=s.drag)
    shuffled.external[:] = s.external[old]
    positions, velocities = loss_weights(s)
    gradient = s.copy().run(DT, STEPS, EVERY, differentiable=True).backward(positions, velocities)
    renumbered = shuffled.run(DT, STEPS, EVERY, differentiable=True, checkpoint_every=2 * EVERY).backward(
        positions[:, old], velocities[:, old])
    for name in PARAMETERS:
        ours, theirs = getattr(gradient, name), getattr(renumbered, name)
        if name not in ("k", "c", "rest"):
            theirs = theirs[place]
        assert np.allclose(theirs, ours, rtol=1e-9, atol=1e-12 * np.abs(ours).max()), name


def test_a_fit_refuses_bad_arguments_by_name():
    s = network()
    measured = s.copy().run(DT, 20, 5).positions
    with pytest.raises(ValueError, match="measured must have shape"):
        msprings.PositionFit(s, DT, 21, measured, {"k": None}, record_every=5)
    with pytest.raises(ValueError, match="parameters names one of"):
        msprings.PositionFit(s, DT, 20, measured, {"stiffness": None}, record_every=5)
    with pytest.raises(ValueError, match=r"parameters\['c'\] must hold indices"):
        msprings.PositionFit(s, DT, 20, measured, {"c": [s.n_springs]}, record_every=5)
    with pytest.raises(ValueError, match="weights must be finite and >= 0"):
        msprings.PositionFit(s, DT, 20, measured, {"k": None}, record_every=5, weights=-1.0)
    with pytest.raises(TypeError, match="steps must be an integer"):
        msprings.PositionFit(s, DT, 20.0, measured, {"k": None}, record_every=5)
    with pytest.raises(ValueError, match="dt"):
        msprings.PositionFit(s, -DT, 20, measured, {"k": None}, record_every=5)
    s.integrator = "xpbd"
    with pytest.raises(ValueError, match="xpbd has no gradient"):
        msprings.PositionFit(s, DT, 20, measured, {"k": None}, record_every=5)


def test_a_loss_of_the_velocities_alone():
    """backward(velocities=H) with no positions: the adjoint of the recorded velocities, against
    the tangent of the velocities along every parameter at once."""
    s = network("velocity_verlet")
    weights = loss_weights(s)[1]
    run = s.run(DT, STEPS, EVERY, differentiable=True)
    gradient = run.backward(velocities=weights)
    d = {name: direction(s, name, 10 + seed) for seed, name in enumerate(PARAMETERS)}
    adjoint = sum(float(np.sum(getattr(gradient, name) * d[name])) for name in PARAMETERS)
    tangent = float(np.sum(weights * run.tangent(velocities=True, **d).velocities))
    assert abs(adjoint - tangent) <= 1e-12 * abs(adjoint)


def test_implicit_euler_at_a_large_step_on_a_stiff_chain():
    """A chain 170 times stiffer than its explicit critical step allows, at h = 1/60 s: the
    gradient agrees with central differences (where the loss depends on the parameter well above
    the Newton solve's tolerance) and with the tangent to rounding."""
    n = 30
    positions = np.zeros((n, 3))
    positions[:, 0] = 0.01 * np.arange(n)
    springs = np.column_stack([np.arange(n - 1), np.arange(1, n)])

    def chain() -> msprings.System:
        s = msprings.System(positions, springs, mass=0.001, k=1e5, c=0.5, pinned=[0], drag=1e-4,
                            integrator="implicit_euler")
        s.newton_tol = s.cg_tol = 1e-12
        return s

    h, steps, every = 1 / 60, 30, 5
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(1 + steps // every, n, 3))
    run = chain().run(h, steps, every, differentiable=True)
    gradient = run.backward(weights)
    for name in ("k", "rest", "mass", "x"):
        base = getattr(chain(), name).copy()
        d = rng.normal(size=base.shape)
        if name == "x":
            d[0] = 0.0
        eps = 1e-4 * (float(np.sqrt(np.mean(base**2))) if name != "x" else 1e-2)
        values = {}
        for multiple in (-2, -1, 1, 2):
            moved = chain()
            getattr(moved, name)[:] = base + multiple * eps * d
            values[multiple] = float(np.sum(weights * moved.run(h, steps, every).positions))
        difference = (8.0 * (values[1] - values[-1]) - (values[2] - values[-2])) / (12.0 * eps)
        adjoint = float(np.sum(getattr(gradient, name) * d))
        assert abs(adjoint - difference) <= 1e-6 * abs(adjoint), (name, adjoint, difference)
    d = {name: direction(chain(), name, seed) for seed, name in enumerate(PARAMETERS)}
    adjoint = sum(float(np.sum(getattr(gradient, name) * d[name])) for name in PARAMETERS)
    tangent = float(np.sum(weights * run.tangent(**d).positions))
    assert abs(adjoint - tangent) <= 1e-12 * abs(adjoint)


def test_position_fit_refuses_what_it_cannot_fit() -> None:
    """Indices must be distinct integers; a pinned node's mass, x, v or external has no
    gradient (its motion is given) and is refused when named, and left out of None."""
    s = msprings.System([[0, 0, 0], [0.8, -0.5, 0], [1.5, -1, 0.2]], [[0, 1], [1, 2]], k=[30.0, 45.0], c=0.2,
                        pinned=[0])
    measured = s.copy().run(1e-3, 100, record_every=20).positions
    for name, indices in (("x", [0, 1]), ("mass", [0]), ("v", [2]), ("external", [1])):
        with pytest.raises(ValueError, match="names node 0, which is pinned"):
            msprings.PositionFit(s, 1e-3, 100, measured, {name: indices}, record_every=20)
    with pytest.raises(TypeError, match="integer indices"):
        msprings.PositionFit(s, 1e-3, 100, measured, {"k": [0.5]}, record_every=20)
    with pytest.raises(ValueError, match="repeats an index"):
        msprings.PositionFit(s, 1e-3, 100, measured, {"k": [0, 0]}, record_every=20)
    with pytest.raises(TypeError, match="system must be a msprings.System"):
        msprings.PositionFit("s", 1e-3, 100, measured, {"k": None})  # type: ignore[arg-type]
    fit = msprings.PositionFit(s, 1e-3, 100, measured, {"x": None, "mass": None}, record_every=20)
    assert fit.initial.tolist() == s.x[1:].ravel().tolist() + s.mass[1:].tolist()
    # every column of the Jacobian is the derivative of the residuals (central differences)
    theta = fit.initial + 0.01
    jacobian = fit.jacobian(theta)
    for column in range(theta.size):
        step = np.zeros_like(theta)
        step[column] = 1e-6
        difference = (fit.residuals(theta + step) - fit.residuals(theta - step)) / 2e-6
        assert np.allclose(jacobian[:, column], difference, rtol=1e-5, atol=1e-7)


def test_damaged_run_descriptions_are_refused_not_read_out_of_bounds() -> None:
    """Counts that would overflow a size (a stretch or the checkpoints) are refused before any
    memory is touched, through the pickled tape or the binding itself."""
    import pickle

    s = msprings.System([[0, 0, 0], [0, -1, 0], [0, -2, 0], [0, -3, 0]], [[0, 1], [1, 2], [2, 3]], k=20.0,
                        pinned=[0])
    run = s.run(1e-3, 1, differentiable=True)
    tape = run._tape
    tape.steps = tape.every = 2**62
    tape.record_steps[:] = [0, 2**62]
    with pytest.raises(ValueError, match="tape is not a differentiable run's tape"):
        pickle.loads(pickle.dumps(run))
    seeds = np.zeros(2 * 12)
    with pytest.raises(MemoryError, match="does not fit in memory"):
        s._gradient_backward(1e-3, 2**62, 2**62, np.zeros(2 * 24), np.array([0, 2**62]), seeds, None, 0)
    with pytest.raises(ValueError, match="more than an array can hold"):
        s._gradient_backward(1e-3, 2**62, 1, np.zeros(48), np.array([0, 2**62]), seeds, None, 0)
    with pytest.raises(ValueError, match="must be at most steps"):
        s._gradient_backward(1e-3, 1, 2, np.zeros(48), np.array([0, 1]), seeds, None, 0)


def test_two_threads_take_gradients_of_one_trajectory() -> None:
    """Each pass steps its own copy of the tape's start: both threads get the same gradient,
    and the tape is left as recorded."""
    import threading

    s = msprings.System([[0, 0, 0], [0, -1, 0], [0.3, -2, 0]], [[0, 1], [1, 2]], k=50.0, c=0.1, pinned=[0])
    run = s.run(1e-3, 4000, record_every=100, differentiable=True)
    start = run._tape.start.x.copy(), run._tape.start.steps
    seed = np.ones_like(run.positions)
    results: dict[int, msprings.Gradient] = {}

    def take(i: int) -> None:
        results[i] = run.backward(positions=seed)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(np.array_equal(a, b) for a, b in zip(results[0], results[1]))
    assert np.array_equal(run._tape.start.x, start[0]) and run._tape.start.steps == start[1]
