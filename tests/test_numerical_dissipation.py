"""The ledger's ``numerical`` part: what the large-step solvers remove by themselves.

Backward Euler multiplies an undamped oscillator's energy by ``1 / (1 + (omega h)^2)`` each
step; projective dynamics converges to it, and one xpbd projection on one spring steps as
msprings.stability's amplification matrix says.  ``numerical`` books exactly that loss, so
``mechanical + dissipated - work`` stays put to rounding with implicit_euler, projective and
xpbd, whatever else acts; the explicit integrators book nothing there, so their drift stays
in sight.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import msprings
from msprings import io as model_io
from msprings import scenes, stability
from msprings.trajectory import LEDGER_FIELDS

LARGE_STEP = ("implicit_euler", "projective", "xpbd")
EXPLICIT = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4")

# The oscillator: one free node of mass MASS on a spring of stiffness K and rest length REST
# from a pinned node at the origin, no gravity, moving along the spring's axis.
K, MASS, REST = 40.0, 0.25, 1.0
OMEGA = math.sqrt(K / MASS)


def oscillator(integrator: str, c: float = 0.0, stretch: float = 0.2, speed: float = 1.5) -> msprings.System:
    system = msprings.System([[0.0, 0.0, 0.0], [REST + stretch, 0.0, 0.0]], [[0, 1]], mass=[1.0, MASS], k=K, c=c,
                             rest=REST, pinned=[0], gravity=(0.0, 0.0, 0.0), velocities=[[0, 0, 0], [speed, 0, 0]],
                             integrator=integrator)
    if integrator == "implicit_euler":
        system.newton_tol = 1e-14
        system.newton_max_iter = 50
        system.cg_tol = 1e-14
    return system


def oscillator_energy(u: float, v: float) -> float:
    """Spring plus kinetic energy (J) at stretch u (m) and speed v (m/s)."""
    return 0.5 * K * u * u + 0.5 * MASS * v * v


def predicted_step(integrator: str, omega_h: float, zeta: float, u: float, v: float) -> tuple[float, float]:
    """(stretch, speed) after one step, from msprings.stability's amplification matrix."""
    g = stability.amplification_matrix(integrator, omega_h, zeta)
    x, w = g @ np.array([u, v / OMEGA])
    return float(x), float(w * OMEGA)


@pytest.mark.parametrize("omega_h", [0.5, 1.0, 2.0])
def test_implicit_euler_books_the_backward_euler_energy_factor(omega_h: float) -> None:
    """After one step numerical = E0 (1 - 1/(1 + (omega h)^2)); after n steps it is E0 - E_n,
    with E_n = E0 / (1 + (omega h)^2)^n, and nothing else is booked."""
    h = omega_h / OMEGA
    system = oscillator("implicit_euler")
    start = system.energy().mechanical
    assert start == pytest.approx(oscillator_energy(0.2, 1.5), rel=1e-14)
    factor = 1.0 / (1.0 + omega_h**2)
    system.step(h)
    assert system.solver_stats["newton_converged"]
    assert system.ledger().numerical == pytest.approx(start * (1.0 - factor), rel=1e-12)
    steps = 1 + round(math.log(1e3) / math.log(1.0 + omega_h**2))  # down by a thousand
    system.step(h, steps - 1)
    end = system.energy().mechanical
    assert end == pytest.approx(start * factor**steps, rel=1e-9)
    assert system.ledger().numerical == pytest.approx(start - end, rel=1e-12)
    assert system.ledger()._replace(numerical=0.0) == msprings.Ledger(*([0.0] * len(LEDGER_FIELDS)))
    assert system.energy().total == pytest.approx(start, rel=1e-13)


def test_projective_converges_to_the_implicit_euler_booking() -> None:
    """On a chain hanging under gravity (several springs, not one along a line), projective
    dynamics with many rounds books what converged backward Euler books."""
    def chain(integrator: str) -> msprings.System:
        system = scenes.chain(6, 0.5, mass=0.2, k=500.0, c=0.0, direction=(1.0, -0.5, 0.0), integrator=integrator)
        system.v[3] = (0.0, 2.0, 1.0)
        return system

    reference = chain("implicit_euler")
    reference.newton_tol, reference.newton_max_iter, reference.cg_tol = 1e-13, 100, 1e-14
    h = 1.0 / 60.0
    reference.step(h, 30)
    assert reference.solver_stats["newton_converged"]
    booked = reference.ledger().numerical
    assert booked > 0.1 * abs(reference.energy().kinetic)
    errors = []
    for iterations in (20, 400):
        projective = chain("projective")
        projective.iterations = iterations
        projective.step(h, 30)
        errors.append(abs(projective.ledger().numerical - booked))
        assert abs(projective.energy().total - chain("projective").energy().total) < 1e-10 * booked
    assert errors[1] < 1e-6 * booked
    assert errors[1] < 0.1 * errors[0]


@pytest.mark.parametrize("zeta", [0.0, 0.3])
@pytest.mark.parametrize("omega_h", [0.4, 1.0, 3.0])
def test_xpbd_books_the_energy_its_amplification_factor_removes(omega_h: float, zeta: float) -> None:
    """Step by step, xpbd's state follows stability.amplification_matrix('xpbd'), the dampers
    book their power at the start times h, and numerical books the rest of the energy the
    step removed."""
    h = omega_h / OMEGA
    c = 2.0 * zeta * math.sqrt(K * MASS)
    system = oscillator("xpbd", c=c)
    u, v = 0.2, 1.5
    numerical = dampers = 0.0
    for _ in range(12):
        u_next, v_next = predicted_step("xpbd", omega_h, zeta, u, v)
        dampers += h * c * v * v
        numerical += oscillator_energy(u, v) - oscillator_energy(u_next, v_next) - h * c * v * v
        u, v = u_next, v_next
        system.step(h)
        assert system.x[1, 0] - REST == pytest.approx(u, rel=1e-11, abs=1e-14)
    scale = oscillator_energy(0.2, 1.5)
    assert system.ledger().dampers == pytest.approx(dampers, rel=1e-12, abs=1e-15)
    assert system.ledger().numerical == pytest.approx(numerical, rel=1e-10, abs=1e-13 * scale)
    if zeta == 0.0:  # the undamped energy factor itself
        ratio = stability.energy_ratio_per_step("xpbd", omega_h)
        assert system.ledger().numerical == pytest.approx(scale * (1.0 - ratio**12), rel=1e-10)


@pytest.mark.parametrize("integrator", LARGE_STEP)
def test_with_dampers_numerical_books_what_the_dampers_do_not(integrator: str) -> None:
    """With a damper, dampers books the damper's power by the solver's quadrature (implicit
    Euler: at the end of the step; projective and xpbd: at the start), numerical the rest of
    what the step removed; the matrices of msprings.stability give both in closed form."""
    omega_h, zeta = 1.0, 0.2
    h = omega_h / OMEGA
    c = 2.0 * zeta * math.sqrt(K * MASS)
    system = oscillator(integrator, c=c)
    u, v = 0.2, 1.5
    dampers = numerical = 0.0
    for _ in range(10):
        u_next, v_next = predicted_step(integrator, omega_h, zeta, u, v)
        power_speed = v_next if integrator == "implicit_euler" else v
        step_dampers = h * c * power_speed**2
        dampers += step_dampers
        numerical += oscillator_energy(u, v) - oscillator_energy(u_next, v_next) - step_dampers
        u, v = u_next, v_next
    system.step(h, 10)
    assert system.ledger().dampers == pytest.approx(dampers, rel=1e-11)
    assert system.ledger().numerical == pytest.approx(numerical, rel=1e-9)
    assert system.ledger().numerical > 0.0 and system.ledger().dampers > 0.0


def everything_at_once(integrator: str) -> msprings.System:
    """A damped cloth under gravity in a gusty wind with drag, a pin moving, a rising sphere
    with friction, and a ground plane."""
    system = scenes.cloth(10, size=2.0, mass=0.05, k=400.0, c=0.3, integrator=integrator)
    system.drag = 0.01
    system.wind = (1.5, 0.0, 0.5)
    system.gust = 0.5
    system.v[0] = (0.2, 0.1, 0.0)  # node 0 is pinned: it moves
    system.add_sphere((1.0, -0.8, 1.0), 0.4, friction=0.3, restitution=0.2, velocity=(0.0, 0.5, 0.0))
    system.add_plane(point=(0.0, -1.5, 0.0))
    if integrator == "implicit_euler":
        system.newton_tol = 1e-10
    return system


@pytest.mark.parametrize("integrator", LARGE_STEP)
def test_the_large_step_solvers_close_the_ledger_to_rounding(integrator: str) -> None:
    system = everything_at_once(integrator)
    start = system.energy()
    trajectory = system.run(1.0 / 120.0, 120, record_every=4)
    ledger = system.ledger()
    for mechanism in ("dampers", "drag", "contact", "wind", "pins", "colliders", "numerical"):
        assert getattr(ledger, mechanism) != 0.0, mechanism
    scale = max(np.abs(trajectory.mechanical - start.mechanical).max(), np.abs(trajectory.ledger).max())
    np.testing.assert_allclose(trajectory.total, start.total, rtol=0.0, atol=1e-11 * scale)
    for name in ("dampers", "drag", "contact", "energy_loss"):
        assert np.all(np.diff(trajectory.column(name)) >= 0.0), name


@pytest.mark.parametrize("integrator", EXPLICIT)
def test_explicit_integrators_book_no_numerical_dissipation(integrator: str) -> None:
    """Their drift is their error and stays in the total: numerical is exactly 0."""
    system = everything_at_once(integrator)
    start = system.energy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        system.step(2e-4, 500)
    assert system.ledger().numerical == 0.0
    assert system.energy().total != start.total  # what the integrator's error leaves


def test_converged_implicit_euler_never_books_negative_numerical_on_a_stiff_cloth() -> None:
    """The stiff cloth of BENCH.md falling from flat under gravity: each converged backward
    Euler step removes energy (its springs are stretched), and numerical books it."""
    system = scenes.cloth(8, k=1e5, c=0.0, integrator="implicit_euler")
    system.newton_tol, system.newton_max_iter, system.cg_tol = 1e-10, 100, 1e-13
    booked = [0.0]
    for _ in range(60):
        system.step(1.0 / 60.0)
        assert system.solver_stats["newton_converged"]
        booked.append(system.ledger().numerical)
    scale = abs(system.energy().gravity)
    assert np.diff(booked).min() >= -1e-12 * scale
    assert booked[-1] > 0.01 * scale


def test_an_unconverged_projective_step_may_book_negative_numerical_and_still_closes() -> None:
    """Few rounds leave the springs short of backward Euler's answer: a step can hand energy
    back, and numerical books that too, so the total still closes."""
    system = scenes.cloth(12, k=1e4, c=0.0, integrator="projective")
    system.iterations = 1
    start = system.energy().total
    booked = [0.0]
    for _ in range(80):
        system.step(1.0 / 60.0)
        booked.append(system.ledger().numerical)
    assert np.diff(booked).min() < 0.0
    assert abs(system.energy().total - start) < 1e-10 * max(np.abs(booked).max(), 1.0)


@pytest.mark.parametrize("integrator", LARGE_STEP)
def test_a_change_between_steps_is_user_work_not_numerical(integrator: str) -> None:
    """A kick between steps is booked as user work, before the step measures the energy it
    starts from: numerical books only what the solver then removes from the kicked state
    (its energy factor, three steps), and the total stays put across the kick."""
    system = oscillator(integrator)
    h = 1.0 / OMEGA
    system.step(h, 3)
    before = system.energy()
    system.v[1, 0] += 2.0  # a kick: work done by the caller
    kicked = system.energy()
    system.step(h, 3)
    ledger = system.ledger()
    assert ledger.user == pytest.approx(kicked.mechanical - before.mechanical, rel=1e-13)
    assert system.energy().total == pytest.approx(before.total, rel=1e-13)
    # numerical booked the backward Euler loss of the kicked state: three more factors
    factor = stability.energy_ratio_per_step(integrator, 1.0)
    assert ledger.numerical - (oscillator_energy(0.2, 1.5) - before.mechanical) == pytest.approx(
        kicked.mechanical * (1.0 - factor**3), rel=1e-10)


@pytest.mark.parametrize("integrator", LARGE_STEP)
def test_one_call_of_n_steps_books_the_same_bits_as_n_calls(integrator: str) -> None:
    """The energy a step ends with is carried to the next step within a call, and measured
    again, the same way, at the start of the next call: either way the same bits."""
    one, each = everything_at_once(integrator), everything_at_once(integrator)
    one.step(1.0 / 120.0, 12)
    for _ in range(12):
        each.step(1.0 / 120.0)
    assert one.ledger() == each.ledger() and one.ledger().numerical != 0.0
    np.testing.assert_array_equal(one.x, each.x)


def test_xpbd_books_the_same_bits_on_any_number_of_threads() -> None:
    def run(threads: int) -> msprings.Ledger:
        system = scenes.cloth(72, size=10.0, mass=0.05, k=500.0, c=0.5, integrator="xpbd")
        system.threads = threads
        system.step(2e-3, 20)
        assert system.workers == threads
        return system.ledger()

    one = run(1)
    assert one.numerical != 0.0
    assert run(2) == one and run(3) == one


# ---- files ------------------------------------------------------------------------------


def test_model_files_carry_numerical(tmp_path: Path) -> None:
    system = everything_at_once("projective")
    system.step(1.0 / 120.0, 30)
    loaded = model_io.load(model_io.save(system, tmp_path / "cloth.npz"))
    assert loaded.ledger() == system.ledger() and loaded.ledger().numerical != 0.0
    for each in (system, loaded):
        each.step(1.0 / 120.0, 5)
    assert loaded.ledger() == system.ledger()


def test_version_two_model_files_load_with_numerical_zero(tmp_path: Path) -> None:
    system = scenes.chain(4, integrator="rk4")
    system.step(1e-3, 100)
    path = model_io.save(system, tmp_path / "chain.npz")
    with np.load(path) as archive:
        entries = {name: archive[name] for name in archive.files}
    numerical = LEDGER_FIELDS.index("numerical")
    entries["format_version"] = np.array(2)
    entries["ledger"] = np.delete(entries["ledger"], numerical)
    np.savez(tmp_path / "old.npz", **entries)
    loaded = model_io.load(tmp_path / "old.npz")
    assert loaded.ledger() == system.ledger() and loaded.ledger().numerical == 0.0
    # a version 3 file whose ledger lacks a part is damaged, not old
    entries["format_version"] = np.array(3)
    np.savez(tmp_path / "short.npz", **entries)
    with pytest.raises(ValueError, match="ledger"):
        model_io.load(tmp_path / "short.npz")


def test_trajectories_record_numerical_and_older_files_load_with_zero(tmp_path: Path) -> None:
    trajectory = oscillator("implicit_euler").run(0.05, 20, record_every=2)
    assert trajectory.ledger.shape == (11, len(LEDGER_FIELDS)) == (11, 11)
    assert np.all(np.diff(trajectory.numerical) > 0.0)
    np.testing.assert_allclose(trajectory.numerical, trajectory.mechanical[0] - trajectory.mechanical, rtol=1e-11,
                               atol=1e-15)
    loaded = msprings.Trajectory.load(trajectory.save(tmp_path / "run.npz"))
    np.testing.assert_array_equal(loaded.ledger, trajectory.ledger)
    # written before numerical existed: ten ledger columns, read with numerical = 0
    explicit = oscillator("rk4").run(1e-3, 20, record_every=5)
    with np.load(explicit.save(tmp_path / "rk4.npz")) as archive:
        entries = {name: archive[name] for name in archive.files}
    numerical = LEDGER_FIELDS.index("numerical")
    entries["ledger"] = np.delete(entries["ledger"], numerical, axis=1)
    entries["ledger_fields"] = np.delete(entries["ledger_fields"], numerical)
    np.savez(tmp_path / "old.npz", **entries)
    old = msprings.Trajectory.load(tmp_path / "old.npz")
    np.testing.assert_array_equal(old.ledger, explicit.ledger)
    assert np.all(old.numerical == 0.0)
