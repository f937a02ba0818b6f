"""The lab bench of ``msprings.interact``: force and motion arrows, ruler, stopwatch,
reference lines, period and amplitude readout, trace, mass swap with a mystery mass,
gravity presets and the last sane frame after a blow-up, driven from Python.

Every number the student reads is checked against physics: the forces in the arrows add up
to m a (and to what the integrator does with them), the period against 2 pi sqrt(m / k),
the equilibrium against m g / k.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")
# These tests set play.value = True in plain Python and step by hand: no event loop, as warned.
pytestmark = pytest.mark.filterwarnings("ignore:Play does nothing here:RuntimeWarning")

import msprings  # noqa: E402
from msprings import scenes  # noqa: E402
from msprings.plot._lab import ARROWS, GRAVITY_PRESETS, SHOW, node_forces, measure_oscillation  # noqa: E402

ALL_ON = {name: True for name in SHOW}


def arrows_of(live) -> np.ndarray:
    return np.frombuffer(live.view.arrows, "<f4").reshape(-1, len(ARROWS), 3)


def test_forces_in_the_arrows_add_up_to_m_a_and_to_what_a_step_does() -> None:
    system = scenes.chain(6, integrator="symplectic_euler")
    system.step(1e-3, 700)  # falling and swinging: springs, dampers and gravity all at work
    forces = node_forces(system)
    free = ~system.pinned
    parts = forces["spring"] + forces["damper"] + forces["gravity"] + forces["other"]
    assert np.allclose(parts, forces["net"])
    # Nothing but springs, dampers and gravity acts on the chain: "other" is round-off.
    assert np.abs(forces["other"]).max() < 1e-9 * np.abs(forces["net"]).max()
    assert np.allclose(forces["gravity"][free], system.mass[free, None] * system.gravity)
    assert np.allclose(system.mass[free, None] * forces["acceleration"][free], forces["net"][free])
    # Symplectic Euler: v1 = v0 + dt a(x0, v0), so the arrow's acceleration is what the step does.
    v0, dt = system.v.copy(), 1e-6
    system.step(dt)
    assert np.allclose((system.v - v0)[free], dt * forces["acceleration"][free], rtol=1e-6, atol=1e-9)
    # The spring force on the first free node is k (l - L) along each of its springs.
    n0, n1, n2 = system.x[0], system.x[1], system.x[2]
    forces = node_forces(system)
    lengths = system.lengths()
    expected = (system.k[0] * (lengths[0] - system.rest[0]) * (n0 - n1) / lengths[0]
                + system.k[1] * (lengths[1] - system.rest[1]) * (n2 - n1) / lengths[1])
    assert np.allclose(forces["spring"][1], expected)


@pytest.mark.parametrize("integrator", msprings.INTEGRATORS)
def test_showing_the_arrows_does_not_change_the_motion(integrator: str) -> None:
    # The arrows evaluate the forces between frames; every integrator steps on bit for bit.
    shown = msprings.interact(scenes.cloth(6, integrator=integrator), show={"net": True, "acceleration": True})
    plain = msprings.interact(scenes.cloth(6, integrator=integrator))
    shown.run(10)
    plain.run(10)
    assert np.array_equal(shown.system.x, plain.system.x) and np.array_equal(shown.system.v, plain.system.v)
    assert shown.system.ledger() == plain.system.ledger()
    assert len(shown.view.arrows) > 0 and plain.view.arrows == b""


def test_other_forces_hold_wind_and_contacts() -> None:
    flag = scenes.flag(5, 6)
    flag.step(1e-3, 100)
    forces = node_forces(flag)
    assert np.abs(forces["other"]).max() > 1e-3  # the wind pushes
    assert np.allclose(forces["spring"] + forces["damper"] + forces["gravity"] + forces["other"], forces["net"])


def test_the_view_gets_the_arrows_of_a_sample_with_round_units() -> None:
    system = scenes.cloth(12)
    live = msprings.interact(system, show={"net": True, "velocity": True})
    live.run(5)
    sample = np.frombuffer(live.view.arrow_nodes, "<i4")
    assert 10 <= len(sample) <= 24 and not np.any(system.pinned[sample])
    # Spread over the cloth, not bunched: every quarter of the grid has some.
    rows, columns = sample // 12, sample % 12
    for low_row in (0, 6):
        for low_column in (0, 6):
            inside = (rows >= low_row) & (rows < low_row + 6) & (columns >= low_column) & (columns < low_column + 6)
            assert np.any(inside)
    block = arrows_of(live)
    forces = node_forces(system)
    for column, name in enumerate(ARROWS):
        assert np.allclose(block[:, column], forces[name][sample], rtol=1e-5, atol=1e-5)
    units = live.view.lab["units"]
    for group, columns_of in (("force", slice(0, 5)), ("velocity", slice(5, 6)), ("acceleration", slice(6, 7))):
        unit = units[group]
        mantissa = unit / 10 ** math.floor(math.log10(unit))
        assert round(mantissa, 6) in (1.0, 2.0, 5.0)
        largest = np.linalg.norm(block[:, columns_of], axis=2).max()
        assert largest <= 3.0 * unit  # no arrow longer than three units (120 px)
    # Arrows off: nothing new is computed for them, the flags say so.
    for name in ARROWS:
        live.show[name].value = False
    assert not any(live.view.lab["show"][name] for name in ARROWS)


def test_period_and_amplitude_readout_match_the_closed_form() -> None:
    m, k = 0.1, 10.0
    system = scenes.lab_spring(mass=m, k=k, c=0.0)
    live = msprings.interact(system, dt=1e-3, steps_per_frame=10, integrator="velocity_verlet")
    assert live.lab.measurement() == (None, None)
    assert "after two full swings" in live.readout.value
    live.run(200)  # 2 s: three periods
    period, amplitude = live.lab.measurement()
    assert period == pytest.approx(2 * math.pi * math.sqrt(m / k), rel=2e-3)
    # Let go at rest length, it swings m g / k either side of its equilibrium.
    assert amplitude == pytest.approx(m * 9.81 / k, rel=5e-3)
    assert f"{period:.3f} s" in live.readout.value
    assert live.view.lab["period"] == period and live.view.lab["amplitude"] == amplitude


def test_measure_oscillation_on_a_sampled_sine() -> None:
    t = np.linspace(0.0, 5.0, 400)
    x = np.column_stack([np.zeros_like(t), 0.3 + 0.05 * np.sin(2 * np.pi * t / 1.3 + 0.4), np.zeros_like(t)])
    period, amplitude, displacement = measure_oscillation(t, x)
    assert period == pytest.approx(1.3, rel=1e-3) and amplitude == pytest.approx(0.05, rel=2e-3)
    assert np.allclose(displacement, 0.05 * np.sin(2 * np.pi * t / 1.3 + 0.4), atol=1e-3)
    assert measure_oscillation(t[:50], x[:50])[:2] == (None, None)  # less than a cycle
    assert measure_oscillation(t, np.zeros((400, 3)))[:2] == (None, None)  # no motion


def test_the_trace_is_the_measured_node_displacement() -> None:
    live = msprings.interact(scenes.lab_spring(c=0.0), dt=1e-3, steps_per_frame=10, show={"trace": True})
    live.run(120)
    trace = np.frombuffer(live.view.trace, "<f4").reshape(-1, 2)
    assert len(trace) == 120 and trace[-1, 0] == pytest.approx(live.system.t)
    assert np.abs(trace[:, 1]).max() == pytest.approx(0.0981, rel=0.02)
    live.show["trace"].value = False
    assert live.view.trace == b""


def test_swapping_masses_changes_the_period_as_the_square_root_of_the_mass() -> None:
    system = scenes.lab_spring(c=0.0)
    live = msprings.interact(system, dt=1e-3, steps_per_frame=10, integrator="velocity_verlet")
    assert list(live.masses.options) == ["50 g", "100 g", "250 g", "mystery"]
    periods = {}
    for name, mass in (("50 g", 0.05), ("250 g", 0.25)):
        live.reset()
        live.masses.value = name
        assert system.mass[1] == pytest.approx(mass) and live.mass.value == pytest.approx(mass)
        live.run(250)
        periods[name] = live.lab.measurement()[0]
    assert periods["250 g"] / periods["50 g"] == pytest.approx(math.sqrt(5.0), rel=3e-3)
    # The slider sets the mass too, and a value that is no preset unselects the buttons.
    live.mass.value = 0.17
    assert system.mass[1] == pytest.approx(0.17) and live.masses.value is None


def test_a_browsers_late_answers_to_a_quick_run_of_swaps_leave_the_last_one() -> None:
    # A cell swaps three masses in turn; after it has run, the browser's slider sends back
    # its rounding of each value it was sent (0.05 -> 0.0501 kg ...).  The last swap stands.
    system = scenes.lab_spring()
    live = msprings.interact(system)
    for name in ("50 g", "250 g", "100 g"):
        live.masses.value = name
    live.run(3)
    records = len(live.lab._records)
    for answer in (10 ** -1.30, 10 ** -0.60, 10 ** -1.0):  # on the slider's steps of 0.01 in log10
        live.mass.value = answer
        assert system.mass[1] == 0.1 and live.masses.value == "100 g"
    assert len(live.lab._records) == records  # not taken for a change: the readout goes on
    # A student's own move of the slider is a change.
    live.mass.value = 0.16
    assert system.mass[1] == 0.16 and live.masses.value is None


def test_the_mystery_mass_is_hidden_and_can_be_measured() -> None:
    secret = 0.1734
    system = scenes.lab_spring(c=0.0)
    live = msprings.interact(system, dt=1e-3, steps_per_frame=10, integrator="velocity_verlet",
                             mystery_mass=secret, show=ALL_ON)
    live.masses.value = "mystery"
    live.run(250)
    assert system.mass[1] == secret
    assert live.mass.disabled and not live.mass.readout and "?" in live.mass.description

    def states(widget) -> str:
        parts = [json.dumps(widget.get_state(), default=lambda value: repr(value)[:200])]
        for child in getattr(widget, "children", ()):
            parts.append(states(child))
        return " ".join(parts)

    page = states(live) + json.dumps(live.view.lab)
    for shown in ("0.1734", "0.173", "173.4", "173 g"):
        assert shown not in page
    # Measured as a student would: k from a known mass's period, then m = k T^2 / (4 pi^2).
    period = live.lab.measurement()[0]
    measured = 10.0 * period**2 / (4 * math.pi**2)
    assert measured == pytest.approx(secret, rel=5e-3)
    assert live.reveal()["mass"] == secret
    assert "0.1734 kg" in live.lab.revealed.value
    # Back to a labelled mass: the slider is usable again.
    live.masses.value = "100 g"
    assert system.mass[1] == pytest.approx(0.1) and not live.mass.disabled


def test_gravity_presets_move_the_equilibrium_by_m_g_over_k() -> None:
    m, k = 0.1, 10.0
    system = scenes.lab_spring(mass=m, k=k)
    live = msprings.interact(system, show={"equilibrium": True, "rest": True}, mystery_gravity=13.7)
    assert live.planet.value == "Earth"
    heights = {}
    for planet, g in GRAVITY_PRESETS.items():
        live.planet.value = planet
        assert np.allclose(system.gravity, [0.0, -g, 0.0]) and live.gravity.value == g
        heights[planet] = live.view.lab["lines"]["equilibrium"]
        assert live.view.lab["lines"]["rest"] == pytest.approx(-0.3)
        assert heights[planet] == pytest.approx(-0.3 - m * g / k, abs=1e-7)
    assert heights["Earth"] - heights["Jupiter"] == pytest.approx(m * (24.79 - 9.81) / k, abs=1e-7)
    live.gravity.value = 5.0
    assert live.planet.value is None
    live.planet.value = "Planet X"
    assert np.allclose(system.gravity, [0.0, -13.7, 0.0])
    assert live.gravity.disabled and "13.7" not in json.dumps(live.gravity.get_state())
    # Exact in Python; on the page only as closely as the ruler reads it (half a division).
    assert live.lab.lines()["equilibrium"] == pytest.approx(-0.3 - m * 13.7 / k, abs=1e-7)
    assert live.view.lab["lines"]["equilibrium"] == pytest.approx(-0.3 - m * 13.7 / k,
                                                                  abs=live.lab.ruler_length / 200 + 1e-9)
    assert live.reveal()["gravity"] == 13.7
    live.planet.value = "Moon"
    assert not live.gravity.disabled and np.allclose(system.gravity, [0.0, -1.62, 0.0])


def test_a_browsers_late_answers_to_a_quick_run_of_planets_leave_the_last_one() -> None:
    system = scenes.lab_spring()
    live = msprings.interact(system)
    for planet in ("Moon", "Jupiter", "Earth"):
        live.planet.value = planet
    for answer in (1.6200000000000001, 24.790000000000003, 9.81):  # the slider's answers, late
        live.gravity.value = answer
    assert np.allclose(system.gravity, [0.0, -9.81, 0.0]) and live.planet.value == "Earth"
    live.gravity.value = 3.0  # a student's own move
    assert np.allclose(system.gravity, [0.0, -3.0, 0.0]) and live.planet.value is None


def test_stopwatch_counts_simulated_time() -> None:
    live = msprings.interact(scenes.lab_spring(), dt=0.01, steps_per_frame=3)
    live.run(2)
    live.stopwatch_button.value = True
    assert live.stopwatch_button.description == "Stop"
    live.run(10)
    live.stopwatch_button.value = False
    assert live.lab.stopwatch == pytest.approx(0.3)
    live.run(5)
    assert live.lab.stopwatch == pytest.approx(0.3)  # stopped
    assert live.view.lab["stopwatch"] == {"time": pytest.approx(0.3), "running": False}
    live.stopwatch_button.value = True
    live.run(1)
    assert live.lab.stopwatch == pytest.approx(0.33)
    live.stopwatch_reset.click()
    live.run(2)
    assert live.lab.stopwatch == pytest.approx(0.06)
    assert "0.06 s" in live.lab.watch_label.value


def test_choosing_the_measured_node_moves_the_bench_without_changing_masses() -> None:
    system = scenes.chain(5, mass=0.2)
    system.mass[2] = 30.0
    live = msprings.interact(system, show={"rest": True})
    assert live.node.value == 4  # the free end
    masses = system.mass.copy()
    live.node.value = 2
    assert np.array_equal(system.mass, masses)
    assert live.mass.value == 30.0 and live.masses.value is None
    assert live.view.lab["node"] == 2 and live.view.lab["lines"]["rest"] == 0.0
    live.mass.value = 20.0
    assert system.mass[2] == 20.0 and np.array_equal(np.delete(system.mass, 2), np.delete(masses, 2))


def test_the_equilibrium_line_gives_up_rather_than_freeze_or_mislead() -> None:
    from msprings.plot._lab import equilibrium

    start = time.perf_counter()
    assert equilibrium(scenes.cloth(40)) is None  # one implicit step of a large cloth takes seconds
    assert equilibrium(scenes.cloth(20), budget=0.0) is None  # out of time
    assert time.perf_counter() - start < 3.0
    hanging = equilibrium(scenes.cloth(12))
    assert hanging is not None and hanging[:, 1].min() < -5.0  # it hangs from its corners
    # A long implicit step would drop the tablecloth through the table: no line at all.
    assert equilibrium(scenes.tablecloth(6)) is None
    # On a ground plane, the jelly rests on the ground.
    resting = equilibrium(scenes.jelly_cube(3))
    assert resting is not None and resting[:, 1].min() == pytest.approx(0.0, abs=0.05)


def test_lowest_point_and_the_ruler() -> None:
    system = scenes.lab_spring(c=0.0)
    live = msprings.interact(system, dt=1e-3, steps_per_frame=10, show={"lowest": True, "ruler": True})
    live.run(60)
    assert live.view.lab["lines"]["lowest"] == pytest.approx(-0.3 - 2 * 0.0981, abs=2e-3)
    assert live.view.lab["ruler_length"] == 0.5  # a round length a bit longer than the 30 cm spring
    top = live.view.ruler
    assert top[0] > 0.0 and top[1] == 0.0  # beside the spring, level with its stand
    live.view.ruler = [0.2, 0.1, 0.0]  # what a drag in the view does
    assert live.view.ruler == [0.2, 0.1, 0.0]
    live.reset()
    assert live.view.lab["lines"]["lowest"] is None


def test_a_blow_up_shows_the_last_sane_frame_and_a_clear_message() -> None:
    system = scenes.lab_spring()
    live = msprings.interact(system, steps_per_frame=5)
    live.run(10)
    live.dt.value = 1.5 * system.critical_dt("symplectic_euler")
    live.play.value = True
    frames = 0
    while live.tick():
        frames += 1
        assert frames < 2000
    assert not live.play.value
    assert "blew up" in live.message.value and "last sane frame" in live.message.value
    # The bars read finite energies of a recognisable state, not 3e306 J or "overflow".
    energy = live.view.energy
    assert all(value is not None and abs(value) < 2.0 for value in energy.values())  # the spring holds 0.3 J
    positions = np.frombuffer(live.view.positions, "<f4").reshape(-1, 3)
    assert np.all(np.isfinite(positions)) and np.abs(positions).max() < 10.0
    assert live.view.lab["blown_up"] and live.view.arrows == b""
    live.reset()
    assert not live.view.lab["blown_up"] and live.message.value == ""


@pytest.mark.parametrize("build", [scenes.single_spring, scenes.lab_spring, scenes.chain, scenes.cloth, scenes.flag,
                                   scenes.tablecloth, scenes.jelly_cube, scenes.pyramid, scenes.spring_sphere,
                                   scenes.balloon])
def test_every_scene_gets_the_bench(build) -> None:
    small = {scenes.cloth: {"n": 6}, scenes.flag: {"rows": 4, "columns": 5}, scenes.tablecloth: {"n": 6},
             scenes.jelly_cube: {"n": 3}, scenes.spring_sphere: {"subdivisions": 1},
             scenes.balloon: {"subdivisions": 1}}.get(build, {})
    system = build(**small)
    live = msprings.interact(system, show=ALL_ON)
    assert live.run(3)
    block = arrows_of(live)
    assert len(block) == len(np.frombuffer(live.view.arrow_nodes, "<i4")) > 0
    assert np.all(np.isfinite(block))
    assert not system.pinned[live.node.value]
    assert set(live.view.lab["lines"]) == {"rest", "equilibrium", "lowest"}


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"node": 2}, ValueError, "node"),
        ({"node": 1.0}, TypeError, "node"),
        ({"show": {"speed": True}}, ValueError, "show"),
        ({"show": {"net": "yes"}}, TypeError, "show"),
        ({"show": ["net"]}, TypeError, "show"),
        ({"mystery_mass": -1.0}, ValueError, "mystery_mass"),
        ({"mystery_mass": "heavy"}, TypeError, "mystery_mass"),
        ({"mystery_gravity": math.inf}, ValueError, "mystery_gravity"),
    ],
)
def test_bad_bench_options_name_the_argument(options: dict, error: type, name: str) -> None:
    system = scenes.lab_spring()
    before = system.mass.copy()
    with pytest.raises(error, match=name):
        msprings.interact(system, integrator="rk4", **options)
    # Refused before anything is touched.
    assert np.array_equal(system.mass, before) and system.integrator == "symplectic_euler"


def test_the_arrows_hold_the_push_of_a_floor_on_a_resting_mass() -> None:
    # 100 g on a 10 N/m spring, resting on a floor 5 cm below rest length (its equilibrium
    # would be 9.8 cm below): the spring holds 0.5 N, the floor pushes up the other 0.481 N.
    system = scenes.lab_spring()
    system.add_plane((0.0, -0.35, 0.0), (0.0, 1.0, 0.0))
    live = msprings.interact(system, show={"net": True, "other": True, "gravity": True, "acceleration": True})
    live.run(300)
    assert system.x[1, 1] == pytest.approx(-0.35) and np.abs(system.v[1]).max() < 1e-12
    forces = node_forces(system)
    assert np.abs(forces["net"][1]).max() < 1e-9 and np.abs(forces["acceleration"][1]).max() < 1e-8
    assert forces["other"][1] == pytest.approx([0.0, 0.981 - 0.5, 0.0], abs=1e-9)
    parts = forces["spring"] + forces["damper"] + forces["gravity"] + forces["other"]
    assert np.allclose(parts, forces["net"])
    page = arrows_of(live)[0]
    assert np.abs(page[ARROWS.index("net")]).max() < 1e-6
    assert page[ARROWS.index("other")] == pytest.approx([0.0, 0.481, 0.0], abs=1e-6)


def test_the_arrows_hold_the_friction_on_a_sliding_mass() -> None:
    # Two 100 g nodes sliding at 1 m/s on a floor with friction 0.5: the floor holds their
    # weight and slows them with mu m g = 0.49 N, as the step itself does.
    system = msprings.System([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]], [[0, 1]], mass=0.1, k=10.0, rest=0.1)
    system.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), friction=0.5)
    system.v[:] = [1.0, 0.0, 0.0]
    dt = 1e-4
    forces = node_forces(system, dt)
    assert np.allclose(forces["net"], [[-0.5 * 0.981, 0.0, 0.0]] * 2, atol=1e-9)
    assert np.allclose(forces["other"], [[-0.5 * 0.981, 0.981, 0.0]] * 2, atol=1e-9)
    v0 = system.v.copy()
    system.step(dt)
    assert np.allclose(0.1 * (system.v - v0) / dt, forces["net"], atol=1e-9)
    # Lifted off the floor, nothing but gravity acts and "other" is zero again.
    system.x[:, 1] = 0.5
    assert np.abs(node_forces(system, dt)["other"]).max() < 1e-12


def test_a_mystery_is_not_given_away_by_the_page() -> None:
    secret, planet = 0.1734, 13.37
    system = scenes.lab_spring()
    live = msprings.interact(system, mystery_mass=secret, mystery_gravity=planet, show=ALL_ON)
    honest = dict(live.view.energy)
    assert honest["gravity"] == pytest.approx(-0.1 * 9.81 * 0.3)  # without a mystery: exact
    assert live.view.status["critical"] == pytest.approx(system.critical_dt())
    assert f"{system.critical_dt():.3g}" in live.critical.value

    def page() -> str:
        def states(widget) -> str:
            parts = [json.dumps(widget.get_state(), default=lambda value: repr(value)[:200])]
            return " ".join(parts + [states(child) for child in getattr(widget, "children", ())])
        return states(live) + json.dumps(live.view.lab) + json.dumps(live.view.status) + json.dumps(live.view.energy)

    def coarse(values) -> bool:
        values = np.asarray([value for value in values if value is not None], dtype=float)
        largest = np.abs(values).max()
        if largest == 0:
            return True
        steps = [s for s in (1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1.0) if s >= largest / 20 * (1 - 1e-6)]
        return np.allclose(values / steps[0], np.round(values / steps[0]), atol=1e-6)

    for mystery in ("mass", "planet"):
        if mystery == "mass":
            live.masses.value = "mystery"
        else:
            live.masses.value = "100 g"
            live.planet.value = "Planet X"
        for _ in range(5):
            live.run(7)
            shown = page()
            assert live.view.status["critical"] is None and live.view.status["hidden"] and "?" in live.critical.value
            critical = system.critical_dt()
            assert f"{critical:.3g}" not in shown and f"{critical:.4f}" not in shown
            assert "0.1734" not in shown and "13.37" not in shown
            energy = live.view.energy
            assert coarse(energy.values())
            history = np.frombuffer(live.view.history, "<f4").reshape(-1, 6)
            assert all(coarse(row[1:]) for row in history[-5:])
            # The gravity arrow is rounded to a tenth of the force unit in the key.
            unit = live.view.lab["units"]["force"]
            gravity = arrows_of(live)[0, ARROWS.index("gravity")]
            assert np.allclose(gravity / (0.1 * unit), np.round(gravity / (0.1 * unit)), atol=1e-4)
            tick = live.lab.ruler_length / 100
            for height in live.view.lab["lines"].values():
                assert height is None or abs(height / tick - round(height / tick)) < 1e-6
            for point in live.view.lab["extent"]:
                assert np.allclose(np.asarray(point) / tick, np.round(np.asarray(point) / tick), atol=1e-6)
        # What m g gives away: m from the gravity energy and the node's height, g from the arrow.
        y = np.frombuffer(live.view.positions, "<f4").reshape(-1, 3)[1, 1]
        if mystery == "mass":
            guessed = energy["gravity"] / (9.81 * y)
            assert abs(guessed / secret - 1) > 0.01
        else:
            guessed = -gravity[1] / 0.1
            assert abs(guessed / planet - 1) > 0.01
    live.planet.value = "Earth"
    assert live.view.status["critical"] == pytest.approx(system.critical_dt()) and not live.view.status["hidden"]
    assert live.view.energy["gravity"] == pytest.approx(system.energy().gravity)
    assert live.lab.reveal() == {"mass": secret, "gravity": planet}


def test_the_mystery_mass_moves_with_the_measured_node() -> None:
    system = scenes.chain(5, 0.1, mass=0.1, k=50.0, c=0.1)
    live = msprings.interact(system, mystery_mass=0.5)
    assert live.node.value == 4
    live.masses.value = "mystery"
    assert np.allclose(system.mass, [0.1, 0.1, 0.1, 0.1, 0.5])
    live.node.value = 2
    assert np.allclose(system.mass, [0.1, 0.1, 0.5, 0.1, 0.1])
    assert live.masses.value == "mystery" and live.mass.disabled
    live.masses.value = "250 g"
    assert np.allclose(system.mass, [0.1, 0.1, 0.25, 0.1, 0.1]) and not live.mass.disabled


@pytest.mark.parametrize("c", [0.3, 0.1, 0.05])
def test_the_readout_gives_the_damped_period_and_clears_when_the_motion_stops(c: float) -> None:
    m, k = 0.1, 10.0
    system = scenes.lab_spring(mass=m, k=k, c=c)
    live = msprings.interact(system, dt=1e-3, steps_per_frame=20, integrator="rk4")
    zeta = c / (2 * math.sqrt(k * m))
    damped = 2 * math.pi / (math.sqrt(k / m) * math.sqrt(1 - zeta**2))
    live.run(80)  # 1.6 s: two full swings
    period, amplitude = live.lab.measurement()
    assert period == pytest.approx(damped, rel=0.01)
    # The amplitude is that of the last swing, not of the first: A0 exp(-zeta w t) from the
    # start of that swing (at most 1.5 periods ago) to now.
    def swing(t: float) -> float:
        return 0.0981 * math.exp(-zeta * math.sqrt(k / m) * t)
    assert swing(system.t) < amplitude < swing(system.t - 1.5 * damped)
    seen = []
    for _ in range(int(60 / (live.dt.value * 20))):
        live.tick()
        seen.append(live.lab.measurement()[0])
        if seen[-1] is None:
            break
    assert all(value == pytest.approx(damped, rel=0.01) for value in seen[:-1])
    assert seen[-1] is None  # the motion died away: no stale readout
    assert "after two full swings" in live.readout.value


def test_the_rest_line_is_at_rest_length_whatever_the_start() -> None:
    system = scenes.lab_spring(stretch=0.05)
    live = msprings.interact(system, show={"rest": True, "equilibrium": True})
    lines = live.lab.lines()
    assert lines["rest"] == pytest.approx(-0.30, abs=1e-6)
    assert lines["equilibrium"] == pytest.approx(-0.30 - 0.1 * 9.81 / 10.0, abs=1e-6)
    assert live.view.lab["lines"]["rest"] == pytest.approx(-0.30, abs=1e-6)
    # A model started with its springs at rest keeps its starting positions as the rest line.
    chain = msprings.interact(scenes.chain(4, 0.1), show={"rest": True})
    assert chain.lab.lines()["rest"] == pytest.approx(float(chain.system.x[chain.node.value, 1]), abs=1e-9)


@pytest.mark.parametrize("damping", ["zeta", "c"])
def test_the_damping_slider_stays_true_after_a_mass_swap(damping: str) -> None:
    system = scenes.lab_spring()
    live = msprings.interact(system, damping=damping)
    slider = live.damping["structural"]
    live.masses.value = "250 g"
    if damping == "zeta":
        assert system.damping_ratio()[0] == pytest.approx(slider.value)
        assert system.c[0] == pytest.approx(2 * slider.value * math.sqrt(10.0 * 0.25))
    else:
        assert system.c[0] == pytest.approx(slider.value)
    live.mass.value = 0.05
    if damping == "zeta":
        assert system.damping_ratio()[0] == pytest.approx(slider.value)


def test_a_pinned_node_cannot_be_the_measured_node() -> None:
    with pytest.raises(ValueError, match="node 0 is pinned"):
        msprings.interact(scenes.lab_spring(), node=0)
    live = msprings.interact(scenes.chain(5, 0.1, anchor="both"))
    assert (live.node.min, live.node.max) == (1, 3)
    live.node.value = 2
    live.node.value = 3
    assert live.node.value == 3
    system = scenes.cloth(4)
    pinned = np.flatnonzero(system.pinned)
    live = msprings.interact(system)
    live.node.value = int(pinned[0])
    assert not system.pinned[live.node.value]


def test_arrow_units_shrink_again_when_the_motion_dies_down() -> None:
    system = scenes.lab_spring(c=0.3)
    live = msprings.interact(system, show={"velocity": True, "net": True})
    live.run(12)
    fast = live.view.lab["units"]["velocity"]
    assert fast >= 0.3  # the mass passes equilibrium at about 1 m/s
    live.run(300)  # 10 s: the motion has died away
    slow = live.view.lab["units"]["velocity"]
    assert 1e-3 * fast <= slow < fast / 3
    speed = np.linalg.norm(arrows_of(live)[0, ARROWS.index("velocity")])
    assert speed < 3 * slow  # the arrows are within three units again


def test_the_equilibrium_line_is_solved_briefly_and_once_per_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from msprings.plot import _lab

    calls = []
    solve = _lab.equilibrium

    def counted(system, **options):
        calls.append(options.get("budget"))
        return solve(system, **options)

    monkeypatch.setattr(_lab, "equilibrium", counted)
    live = msprings.interact(scenes.lab_spring(), show={"equilibrium": True})
    first = live.view.lab["lines"]["equilibrium"]
    live.stiffness["structural"].value = 20.0
    assert live.view.lab["lines"]["equilibrium"] == pytest.approx(-0.3 - 0.1 * 9.81 / 20.0, abs=1e-6)
    solved = len(calls)
    live.stiffness["structural"].value = 10.0  # a setting seen before: no new solve
    assert live.view.lab["lines"]["equilibrium"] == pytest.approx(first)
    assert len(calls) == solved
    assert calls and all(budget is not None and budget <= 0.25 for budget in calls)


def test_a_catch_up_frame_records_the_motion_in_between() -> None:
    # Playing behind the clock, one frame may step many frames' worth: the trace still gets
    # the measured node every steps_per_frame steps, as frame-by-frame playing records it.
    caught_up = msprings.interact(scenes.lab_spring())
    framed = msprings.interact(scenes.lab_spring())
    per_frame = caught_up.steps_per_frame.value
    assert caught_up._advance(30 * per_frame)
    framed.run(30)
    assert np.array_equal(caught_up.system.x, framed.system.x) and np.array_equal(caught_up.system.v, framed.system.v)
    assert np.allclose(np.asarray(caught_up.lab._records), np.asarray(framed.lab._records), rtol=0, atol=1e-12)
    assert len(caught_up.lab._records) == 30
    assert caught_up.lab._lowest == pytest.approx(framed.lab._lowest, abs=1e-12)
