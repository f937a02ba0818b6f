"""The energy ledger: dissipated energy and work done, by mechanism.

``mechanical + dissipated - work`` is constant up to an explicit integrator's own error: to
~1e-6 of the energies involved with RK4 at small steps, and with a drift that halves when h
halves for symplectic Euler.  Implicit Euler books its own damping as ``numerical``, which
halves with h instead.  Each dissipated part but ``numerical`` never decreases.  Each split
is also checked against a closed form where one exists (``numerical`` in
test_numerical_dissipation.py).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import msprings
from msprings import io as model_io
from msprings import scenes

# the dissipated parts that never decrease (numerical, the large-step solvers' own, may)
DISSIPATED = ("dampers", "drag", "contact", "energy_loss")
WORK = ("wind", "external", "pins", "colliders", "constraints", "user")


def scale_of(system: msprings.System, start: msprings.Energy) -> float:
    """The size of the energies in play: the mechanical energies and the ledger's flows."""
    e = system.energy()
    return max(abs(start.kinetic) + abs(start.spring), abs(e.kinetic) + abs(e.spring), e.dissipated, abs(e.work),
               abs(e.gravity - start.gravity), 1e-12)


def drift(factory: Callable[[], msprings.System], integrator: str, dt: float, duration: float) -> tuple[float, float]:
    """|total(end) - total(0)| and the scale of the energies, for one run."""
    system = factory()
    system.integrator = integrator
    start = system.energy()
    system.step(dt, round(duration / dt))
    return abs(system.energy().total - start.total), scale_of(system, start)


# ---- the four scenes of the invariant ------------------------------------------------


def flag_in_gusts() -> msprings.System:
    return scenes.flag(10, 14)


def tablecloth_on_table() -> msprings.System:
    return scenes.tablecloth(12, size=4.0, height=0.3, table_height=1.0, mass=0.5, k=800.0, c=2.0)


def dragged_anchor() -> msprings.System:
    """A hanging chain whose top node is pulled sideways and up at a constant velocity."""
    system = scenes.chain(8, 0.25, mass=0.2, k=60.0, c=0.2, direction=(0.0, -1.0, 0.0))
    system.v[0] = (0.8, 0.3, 0.0)
    return system


def sphere_pushing_cloth() -> msprings.System:
    """A kinematic sphere rising through a hanging cloth, with friction."""
    system = scenes.cloth(10, size=2.0, k=400.0, c=0.5, mass=0.05)
    system.add_sphere((1.0, -2.0, 1.0), 0.5, friction=0.3, restitution=0.2, velocity=(0.0, 1.5, 0.0))
    return system


SCENES = {
    "flag in gusts": (flag_in_gusts, "wind"),
    "tablecloth on its table": (tablecloth_on_table, "contact"),
    "dragged anchor": (dragged_anchor, "pins"),
    "sphere pushing a cloth": (sphere_pushing_cloth, "colliders"),
}


@pytest.mark.parametrize("name", SCENES)
def test_rk4_closes_the_ledger_to_a_millionth(name: str) -> None:
    factory, mechanism = SCENES[name]
    system = factory()
    system.integrator = "rk4"
    start = system.energy()
    system.step(2.5e-4, 2000)
    end = system.energy()
    assert abs(getattr(system.ledger(), mechanism)) > 1e-3 * scale_of(system, start), "the mechanism must act"
    assert abs(end.total - start.total) < 1e-6 * scale_of(system, start)


@pytest.mark.parametrize("name", SCENES)
def test_first_order_drift_halves_with_the_step(name: str) -> None:
    """Symplectic Euler's drift is the method's error: first order, so it halves with the step."""
    factory, _ = SCENES[name]
    coarse, scale = drift(factory, "symplectic_euler", 2.5e-4, 0.5)
    fine, _ = drift(factory, "symplectic_euler", 1.25e-4, 0.5)
    assert coarse < 0.1 * scale
    assert 1.6 < coarse / fine < 2.5


def booked_damping(factory: Callable[[], msprings.System], dt: float, duration: float) -> tuple[float, float, float]:
    """Implicit Euler's numerical part, |total(end) - total(0)| and the scale, for one run."""
    system = factory()
    system.integrator = "implicit_euler"
    start = system.energy()
    system.step(dt, round(duration / dt))
    return system.ledger().numerical, abs(system.energy().total - start.total), scale_of(system, start)


@pytest.mark.parametrize("name", SCENES)
def test_implicit_euler_books_its_first_order_damping(name: str) -> None:
    """What implicit Euler removes by itself is booked as numerical, so the total stays put
    to rounding at every step size; that damping is the method's first-order error, so it
    halves with the step (the flag's fast modes reach that rate last)."""
    factory, _ = SCENES[name]
    coarse, coarse_drift, scale = booked_damping(factory, 2.5e-4, 0.5)
    fine, fine_drift, _ = booked_damping(factory, 1.25e-4, 0.5)
    assert max(coarse_drift, fine_drift) < 1e-9 * scale
    assert 0.0 < coarse < 0.1 * scale
    assert 1.6 < coarse / fine < 2.5


def test_velocity_verlet_drift_quarters_with_the_step() -> None:
    coarse, scale = drift(dragged_anchor, "velocity_verlet", 1e-3, 0.5)
    fine, _ = drift(dragged_anchor, "velocity_verlet", 5e-4, 0.5)
    assert coarse < 1e-3 * scale
    assert 3.3 < coarse / fine < 4.7


# ---- dissipated never decreases (but for numerical) -------------------------------------

BUILDERS: dict[str, Callable[[], msprings.System]] = {
    "single_spring": lambda: scenes.single_spring(stretch=0.3),
    "chain": lambda: scenes.chain(11),
    "cloth": lambda: scenes.cloth(12),
    "flag": lambda: scenes.flag(8, 12),
    "tablecloth": lambda: scenes.tablecloth(12),
    "jelly_cube": lambda: scenes.jelly_cube(4),
    "spring_sphere": lambda: scenes.spring_sphere(1),
    "balloon": lambda: scenes.balloon(1),
    "pyramid": lambda: scenes.pyramid(),
}


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("integrator", msprings.INTEGRATORS)
def test_dissipated_parts_never_decrease(builder: str, integrator: str) -> None:
    system = BUILDERS[builder]()
    system.integrator = integrator
    limit = system.critical_dt()
    dt = 1e-3 if limit == 0.0 else min(1e-3, 0.5 * limit)
    with warnings.catch_warnings():
        # explicit Euler is unstable at any step where dampers miss a mode; 300 steps stay finite
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        trajectory = system.run(dt, 300, record_every=3)
    for name in DISSIPATED:
        column = trajectory.column(name)
        assert column[0] == 0.0
        assert np.all(np.diff(column) >= -1e-12 * max(1.0, abs(column).max())), name
    if integrator not in ("implicit_euler", "projective", "xpbd"):
        assert np.all(trajectory.numerical == 0.0)
        assert np.all(np.diff(trajectory.dissipated) >= -1e-12 * max(1.0, trajectory.dissipated.max()))
    parts = len(DISSIPATED) + 1  # and numerical
    np.testing.assert_allclose(trajectory.dissipated, trajectory.ledger[:, :parts].sum(axis=1), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(trajectory.work, trajectory.ledger[:, parts:].sum(axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(trajectory.total, trajectory.mechanical + trajectory.dissipated - trajectory.work,
                               rtol=1e-12, atol=1e-9)


def test_wind_no_longer_counts_as_negative_dissipation() -> None:
    """The flag in its gusts: the air dissipates in its own frame and the wind does work."""
    system = scenes.flag()
    system.integrator = "rk4"
    system.step(1e-3, 2000)
    ledger = system.ledger()
    assert ledger.drag > 0.0 and ledger.wind > ledger.drag
    assert system.dissipated > 0.0
    assert system.work == pytest.approx(ledger.wind)


# ---- each split against a closed form --------------------------------------------------


def test_drag_in_wind_splits_into_dissipation_and_the_winds_work() -> None:
    """A free node with drag b in a uniform wind W: v(t) = W + (v0 - W) e^(-b t / m), so the
    air dissipates 1/2 m |v0 - W|^2 (1 - e^(-2 b t / m)) in its own frame and the wind does
    m W.(v0 - W) (e^(-b t / m) - 1)... of work with the opposite sign convention below."""
    mass, b = 2.0, 0.7
    wind = np.array([3.0, 0.0, -1.0])
    v0 = np.array([-1.0, 2.0, 0.5])
    system = msprings.System([[0.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=mass, velocities=[v0],
                             gravity=(0, 0, 0), drag=b, integrator="rk4")
    system.wind = wind
    duration = 3.0
    system.step(1e-3, 3000)
    decay = math.exp(-b * duration / mass)
    relative = v0 - wind
    dissipated = 0.5 * mass * relative @ relative * (1.0 - decay**2)
    # the wind's work: -b (v - W).W integrated = -m W.(v0 - W) (1 - e^(-b t / m))
    wind_work = -mass * wind @ relative * (1.0 - decay)
    ledger = system.ledger()
    assert ledger.drag == pytest.approx(dissipated, rel=1e-9)
    assert ledger.wind == pytest.approx(wind_work, rel=1e-9)
    np.testing.assert_allclose(system.v[0], wind + relative * decay, rtol=1e-9)


def test_external_force_work_is_force_times_displacement() -> None:
    force = np.array([0.5, -1.0, 2.0])
    system = msprings.System([[0.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=3.0, gravity=(0, 0, 0),
                             velocities=[[1.0, 0.0, 0.0]], integrator="velocity_verlet")
    system.external[0] = force
    system.step(1e-3, 1500)
    assert system.ledger().external == pytest.approx(force @ system.x[0], rel=1e-12)
    assert system.energy().total == pytest.approx(0.5 * 3.0, rel=1e-12)


def test_moving_pin_does_the_work_its_spring_receives() -> None:
    """A pin pulled away at speed u from a free node at rest, through an undamped spring
    with no gravity: in the pin's frame the node oscillates with amplitude u/omega, and the
    pin has put in exactly the mechanical energy the lab frame sees."""
    k, mass, u = 50.0, 0.5, 0.4
    system = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], mass=mass, k=k, pinned=[1],
                             gravity=(0, 0, 0), velocities=[[0, 0, 0], [u, 0, 0]], integrator="rk4")
    omega = math.sqrt(k / mass)
    duration = 1.3
    system.step(1e-4, 13000)
    # node 0: x(t) = u t - (u / omega) sin(omega t) + 0, v(t) = u (1 - cos(omega t))
    x_node = u * duration - (u / omega) * math.sin(omega * duration)
    v_node = u * (1.0 - math.cos(omega * duration))
    assert system.x[0, 0] == pytest.approx(x_node, rel=1e-9)
    stretch = (1.0 + u * duration) - x_node - 1.0
    expected = 0.5 * mass * v_node**2 + 0.5 * k * stretch**2
    assert system.ledger().pins == pytest.approx(expected, rel=1e-8)


def test_bounce_dissipates_the_restitution_loss_and_a_static_plane_does_no_work() -> None:
    """A node dropped from h0 onto the ground with e = 0.5: the impact removes
    1/2 m v^2 (1 - e^2) with v = sqrt(2 g h0); the plane is at rest and does no work."""
    h0, e, mass = 1.0, 0.5, 1.0
    system = msprings.System([[0.0, h0, 0.0]], np.zeros((0, 2), dtype=int), mass=mass, integrator="rk4")
    system.add_plane(restitution=e)
    system.step(1e-5, 60000)  # past the first bounce, before the second
    impact = 2.0 * 9.81 * h0
    assert system.ledger().contact == pytest.approx(0.5 * mass * impact * (1.0 - e * e), rel=1e-3)
    assert system.ledger().colliders == 0.0
    assert abs(system.energy().total - mass * 9.81 * h0) < 1e-9 * mass * impact


def test_moving_collider_does_work_through_its_impulses() -> None:
    """A plane rising at V under a node resting on it carries the node along: with no
    gravity and e = 0 the node ends with speed V, all of it the collider's work."""
    speed = 2.0
    system = msprings.System([[0.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=1.5, gravity=(0, 0, 0))
    system.add_plane(point=(0.0, -0.001, 0.0), velocity=(0.0, speed, 0.0))
    system.step(1e-3, 200)
    assert system.v[0, 1] == pytest.approx(speed)
    ledger = system.ledger()
    assert ledger.colliders == pytest.approx(0.5 * 1.5 * speed**2 + ledger.contact, rel=1e-9)
    assert ledger.contact >= 0.0


def test_strain_limit_and_self_collision_are_booked_as_constraint_work() -> None:
    system = scenes.cloth(10, size=2.0, mass=0.05, k=300.0, c=0.2)
    system.strain_limit = 0.05
    system.self_collision = 0.05
    system.integrator = "rk4"
    start = system.energy()
    system.step(5e-4, 600)
    ledger = system.ledger()
    assert ledger.constraints != 0.0
    assert abs(system.energy().total - start.total) < 1e-6 * scale_of(system, start)


# ---- contact: a collider at rest does no work --------------------------------------------

INTEGRATORS = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler", "projective",
               "xpbd")
GRAVITY = 9.81


def thrown_node(target: str, integrator: str) -> msprings.System:
    """A 1 kg node thrown from 0.2 m above the ground at (3, 1.6, 0) m/s: 7.742 J above
    resting on the ground (y = 0), at a static collider with restitution 0.6 and friction
    0.2: the ground plane; a ball of radius 0.3 m lying on the ground in its path (it hits
    the ball, then the ground); or a box whose top face is the ground."""
    system = msprings.System([[0.0, 0.2, 0.0]], np.zeros((0, 2), dtype=int), mass=1.0, velocities=[[3.0, 1.6, 0.0]],
                             integrator=integrator)
    surface = {"restitution": 0.6, "friction": 0.2}
    if target == "box":
        system.add_box((-1.0, -1.0, -1.0), (5.0, 0.0, 1.0), **surface)
    else:
        system.add_plane(**surface)
    if target == "sphere":
        system.add_sphere((1.0, 0.3, 0.0), 0.3, **surface)
    return system


@pytest.mark.parametrize("target", ["plane", "sphere", "box"])
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_static_collider_does_no_work_and_dissipates_at_most_what_there_was(target: str, integrator: str) -> None:
    """Thrown at a collider at rest, the node bounces and comes to rest on the ground.  The
    collider books no work at any step; what contact dissipates never decreases and is at
    most the energy the node had above its resting state (7.742 J), plus what the
    integrator itself added; the ledger closes to the integrator's error.  Under constant
    gravity that error is closed-form: the explicit and symplectic Euler steps change the
    energy by +-1/2 m g^2 h^2 whatever the state, RK4 and Verlet are exact, and the
    large-step solvers book theirs as numerical."""
    h, steps = 1e-3, 3000
    system = thrown_node(target, integrator)
    start = system.energy()
    assert start.mechanical == pytest.approx(7.742, abs=1e-12)
    contact = 0.0
    for _ in range(steps):
        system.step(h)
        ledger = system.ledger()
        assert ledger.colliders == 0.0
        assert ledger.contact >= contact
        contact = ledger.contact
    end = system.energy()
    assert system.x[0, 1] == pytest.approx(0.0, abs=1e-4) and abs(system.v[0, 1]) < 0.05, "at rest on the ground"
    euler_error = steps * 0.5 * 1.0 * GRAVITY**2 * h**2  # 0.144 J
    expected_drift = {"explicit_euler": euler_error, "symplectic_euler": -euler_error}.get(integrator, 0.0)
    assert end.total - start.total == pytest.approx(expected_drift, abs=1e-9 * start.mechanical)
    added = max(expected_drift, 0.0)
    assert 0.9 * start.mechanical < contact <= start.mechanical + added + 1e-12 * start.mechanical


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_tablecloth_on_a_static_table_books_no_collider_work(integrator: str) -> None:
    """Springs pushed along with their nodes: the table at rest still does no work, and the
    large-step solvers' ledger still closes to rounding."""
    system = scenes.tablecloth(8, size=3.0, height=0.2, table_height=1.0, mass=0.5, k=400.0, c=1.0,
                               integrator=integrator)
    start = system.energy()
    system.step(5e-4, 600)
    ledger = system.ledger()
    assert ledger.colliders == 0.0 and ledger.contact > 0.0
    if integrator in ("implicit_euler", "projective", "xpbd"):
        assert abs(system.energy().total - start.total) < 1e-12 * scale_of(system, start)


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet", "rk4", "implicit_euler", "projective",
                                        "xpbd"])
def test_a_plane_rising_at_constant_speed_books_its_work(integrator: str) -> None:
    """A node resting on the ground when the ground starts to rise at V (e = 0, no
    friction): the first push brings it to V, and from then on each push gives it back the
    speed g h that gravity took in the step.  The plane's work is its impulses times V:
    m V^2 + m g V t, exactly; contact dissipates the 1/2 m V^2 of the inelastic start
    (less 1/2 m g^2 h^2 for the methods whose fall from rest sinks g h^2, not g h^2 / 2)."""
    mass, speed, h, steps = 1.5, 0.5, 1e-3, 1000
    system = msprings.System([[0.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=mass, integrator=integrator)
    system.add_plane(velocity=(0.0, speed, 0.0), restitution=0.0, friction=0.0)
    start = system.energy()
    system.step(h, steps)
    duration = steps * h
    ledger = system.ledger()
    assert system.x[0, 1] == pytest.approx(speed * duration, rel=1e-12)
    assert system.v[0, 1] == pytest.approx(speed, rel=1e-12)
    assert ledger.colliders == pytest.approx(mass * speed**2 + mass * GRAVITY * speed * duration, rel=1e-12)
    assert ledger.contact == pytest.approx(0.5 * mass * speed**2, abs=0.5 * mass * GRAVITY**2 * h**2 + 1e-12)
    expected_drift = -steps * 0.5 * mass * GRAVITY**2 * h**2 if integrator == "symplectic_euler" else 0.0
    assert system.energy().total - start.total == pytest.approx(expected_drift, abs=1e-10)


# ---- the caller's changes ------------------------------------------------------------


def test_writes_between_steps_are_booked_as_user_work() -> None:
    system = scenes.chain(5, integrator="rk4")
    system.step(1e-3, 100)
    before = system.energy()
    start = before
    system.x[3] += (0.0, 0.5, 0.0)
    system.v[2] = (1.0, 2.0, 0.0)
    changed = system.energy()
    # counted at once (the next step books it), so the total is right between steps too
    assert system.ledger().user == system.work == changed.work == changed.mechanical - before.mechanical
    assert changed.total == pytest.approx(before.total, rel=1e-12, abs=1e-12)
    trajectory = system.run(1e-3, 3)
    np.testing.assert_allclose(trajectory.total, before.total, rtol=0, atol=1e-6 * scale_of(system, start))
    assert system.ledger().user == pytest.approx(changed.mechanical - before.mechanical, rel=1e-12)
    assert abs(system.energy().total - before.total) < 1e-6 * scale_of(system, start)


def test_a_view_kept_across_steps_books_every_write() -> None:
    system = scenes.single_spring(integrator="rk4")
    x, k = system.x, system.k  # kept: each step records the energy it ends with
    start = system.energy()
    booked = 0.0
    for kick in (0.1, -0.2, 0.3):
        system.step(1e-3, 10)
        before = system.energy().mechanical
        x[1, 0] += kick
        k[0] *= 1.1
        booked += system.energy().mechanical - before
    system.step(1e-3)
    assert system.ledger().user == pytest.approx(booked, rel=1e-10)
    assert abs(system.energy().total - start.total) < 1e-6 * abs(booked)


def test_gravity_and_pins_changes_are_booked() -> None:
    system = scenes.chain(4, integrator="rk4")
    system.step(1e-3, 50)
    before = system.energy().mechanical
    system.gravity = (0.0, -3.0, 0.0)
    system.pinned[3] = True
    system.step(1e-3)
    booked = system.ledger().user
    system2 = scenes.chain(4, integrator="rk4")
    system2.step(1e-3, 50)
    system2.gravity = (0.0, -3.0, 0.0)
    system2.pinned[3] = True
    assert booked == pytest.approx(system2.energy().mechanical - before, rel=1e-12)


def test_set_up_before_the_first_step_is_not_booked() -> None:
    system = scenes.chain(5)
    system.x[4] += (0.0, 1.0, 0.0)
    system.k[:] = 40.0
    system.step(1e-3)
    assert system.ledger().user == 0.0
    system.reset()
    system.v[2] = (1.0, 0.0, 0.0)
    system.step(1e-3)
    assert system.ledger().user == 0.0


def test_reset_empties_the_ledger_and_copy_keeps_it() -> None:
    system = flag_in_gusts()
    system.step(1e-3, 100)
    duplicate = system.copy()
    assert duplicate.ledger() == system.ledger()
    system.reset()
    assert system.ledger() == msprings.Ledger(*([0.0] * 11))
    assert system.dissipated == 0.0 and system.work == 0.0


# ---- threads, divergence and files -------------------------------------------------------


def big_cloth_on_sphere(threads: int) -> msprings.System:
    system = scenes.cloth(64, size=10.0, mass=0.05, k=500.0, c=0.5)
    system.threads = threads
    system.add_sphere((5.0, -1.5, 5.0), 1.5, friction=0.3, velocity=(0.0, 0.5, 0.0))
    system.v[0] = (0.0, 0.2, 0.0)  # a moving pin too
    return system


def test_threaded_steps_book_the_same_ledger() -> None:
    one, two = big_cloth_on_sphere(1), big_cloth_on_sphere(2)
    start = one.energy()
    for system in (one, two):
        system.step(2e-3, 300)
    np.testing.assert_allclose(two.ledger(), one.ledger(), rtol=1e-9, atol=1e-9 * scale_of(one, start))
    assert one.ledger().colliders != 0.0 and one.ledger().pins != 0.0
    repeat = big_cloth_on_sphere(2)
    repeat.step(2e-3, 300)
    assert repeat.ledger() == two.ledger()  # bitwise repeatable for a thread count


def test_divergence_leaves_the_ledger_as_the_call_found_it() -> None:
    system = scenes.single_spring(k=1e4, c=0.5, stretch=0.1)
    system.integrator = "explicit_euler"
    system.step(1e-5, 100)  # below explicit Euler's limit c / k = 5e-5 s
    ledger, energy = system.ledger(), system.energy()
    with pytest.raises(msprings.DivergenceError) as caught, pytest.warns(msprings.StabilityWarning):
        system.step(0.05, 10_000)
    assert caught.value.call_step > 1
    assert system.ledger() == ledger and system.energy() == energy
    assert ledger.dampers > 0.0


def test_model_files_keep_the_ledger(tmp_path: Path) -> None:
    system = sphere_pushing_cloth()
    system.step(1e-3, 300)
    system.x[5] += 0.01
    loaded = model_io.load(model_io.save(system, tmp_path / "cloth.npz"))
    assert loaded.ledger() == system.ledger()
    for each in (system, loaded):
        each.step(1e-3, 10)
    assert loaded.ledger() == system.ledger()


def test_version_one_model_files_read_their_single_dissipated_total(tmp_path: Path) -> None:
    system = scenes.chain(4)
    system.step(1e-3, 100)
    path = model_io.save(system, tmp_path / "chain.npz")
    with np.load(path) as archive:
        entries = {name: archive[name] for name in archive.files if name != "ledger"}
    entries["format_version"] = np.array(1)
    entries["dissipated"] = np.array(-2.5)
    np.savez(tmp_path / "old.npz", **entries)
    loaded = model_io.load(tmp_path / "old.npz")
    assert loaded.ledger().wind == 2.5 and loaded.dissipated == 0.0
    assert loaded.energy().total == pytest.approx(system.energy().mechanical - 2.5)
