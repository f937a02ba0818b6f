"""The live controls of ``msprings.interact``, driven from Python without a browser.

Setting a slider's ``value`` is exactly what the browser does when a student moves it, so
these tests check that every control really changes the system, that a frame steps it, that
the picture and the ledger follow, and that a blow-up is caught, rolled back and explained.
"""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")
# These tests set play.value = True in plain Python and step by hand: no event loop, as warned.
pytestmark = pytest.mark.filterwarnings("ignore:Play does nothing here:RuntimeWarning")

import msprings  # noqa: E402
from msprings import scenes  # noqa: E402
from msprings.widgets import DISSIPATION_PARTS, ENERGY_BARS, WORK_PARTS, LiveControls  # noqa: E402


def test_import_msprings_does_not_import_widget_libraries() -> None:
    code = ("import sys, msprings; "
            "assert callable(msprings.interact); "
            "assert not {'ipywidgets', 'anywidget', 'msprings.widgets', 'msprings.plot.widgets'} & set(sys.modules), "
            "sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_msprings_widgets_is_the_module_msprings_plot_widgets_and_needs_no_matplotlib_or_plotly() -> None:
    code = ("import sys, msprings, msprings.widgets, msprings.plot.widgets; "
            "from msprings import scenes; "
            "assert msprings.widgets is msprings.plot.widgets is sys.modules['msprings.widgets']; "
            "from msprings.widgets import *; from msprings.widgets import __all__; "
            "assert all(globals()[name] is getattr(msprings.plot.widgets, name) for name in __all__); "
            "assert isinstance(msprings.interact(scenes.cloth(4)), LiveControls); "
            "assert not {'matplotlib', 'plotly'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_interact_returns_a_widget_with_the_controls() -> None:
    live = msprings.interact(scenes.cloth(8))
    assert isinstance(live, LiveControls)
    assert live.view in live.children
    assert set(live.stiffness) == set(live.damping) == {"structural", "shear", "bend"}
    assert [value for _label, value in live.integrator.options] == list(msprings.INTEGRATORS)
    # The canvas gets the topology once, as compact little-endian bytes.
    assert np.array_equal(np.frombuffer(live.view.springs, "<i4").reshape(-1, 2), live.system.springs)
    assert np.array_equal(np.frombuffer(live.view.faces, "<i4").reshape(-1, 3), live.system.faces)
    assert np.array_equal(np.frombuffer(live.view.pinned, np.uint8).astype(bool), live.system.pinned)


def test_the_breakdown_parts_are_the_ledger_fields() -> None:
    assert DISSIPATION_PARTS + WORK_PARTS == msprings.Ledger._fields
    for integrator in ("symplectic_euler", "projective"):  # projective books numerical too
        flag = scenes.flag(6, 8, integrator=integrator)
        flag.step(1e-3, 200)
        ledger = flag.ledger()
        assert flag.work != 0.0 and flag.dissipated > 0.0
        assert (ledger.numerical != 0.0) == (integrator == "projective")
        assert math.isclose(sum(getattr(ledger, name) for name in DISSIPATION_PARTS), flag.dissipated)
        assert math.isclose(sum(getattr(ledger, name) for name in WORK_PARTS), flag.work)


def test_a_system_without_families_gets_one_slider_for_all_springs() -> None:
    system = msprings.System([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1], [1, 2]], k=[10.0, 30.0], pinned=[0])
    live = msprings.interact(system)
    assert list(live.stiffness) == ["all"]
    live.stiffness["all"].value = 50.0
    assert np.allclose(system.k, 50.0)


def test_sliders_write_into_the_system() -> None:
    system = scenes.cloth(8)
    live = msprings.interact(system)
    shear = system.families["shear"]
    others = np.setdiff1d(np.arange(system.n_springs), shear)
    k_before = system.k[others].copy()
    live.stiffness["shear"].value = 900.0
    assert np.allclose(system.k[shear], 900.0)
    assert np.array_equal(system.k[others], k_before)
    # A damping ratio slider sets c = damping_for_ratio(zeta) on its family only, and keeps
    # zeta when k changes afterwards.
    live.damping["shear"].value = 0.5
    assert np.allclose(system.c[shear], system.damping_for_ratio(0.5)[shear])
    live.stiffness["shear"].value = 1600.0
    assert np.allclose(system.c[shear], system.damping_for_ratio(0.5)[shear])
    assert np.allclose(system.damping_ratio()[shear], 0.5)
    live.gravity.value = 3.5
    assert np.allclose(system.gravity, [0.0, -3.5, 0.0])
    live.integrator.value = "rk4"
    assert system.integrator == "rk4"
    assert "RK4" in live.critical.value


def test_damping_sliders_can_set_c_directly() -> None:
    system = scenes.chain(5)
    live = msprings.interact(system, damping="c")
    live.damping["structural"].value = 2.0
    assert np.allclose(system.c, 2.0)


def test_dt_and_steps_per_frame_set_how_far_a_frame_goes() -> None:
    system = scenes.single_spring()
    live = msprings.interact(system, dt=0.01, steps_per_frame=3)
    assert live.tick()
    assert system.steps == 3 and system.t == pytest.approx(0.03)
    live.dt.value = 0.02
    live.steps_per_frame.value = 5
    assert live.tick()
    assert system.steps == 8 and system.t == pytest.approx(0.13)


def test_wind_slider_only_where_the_wind_acts() -> None:
    assert msprings.interact(scenes.single_spring()).wind is None
    assert msprings.interact(scenes.cloth(6)).wind is None  # faces without air coefficients
    flag = scenes.flag(6, 8)
    live = msprings.interact(flag)
    direction = flag.wind / np.linalg.norm(flag.wind)
    live.wind.value = 7.0
    assert np.allclose(flag.wind, 7.0 * direction)
    dragged = scenes.single_spring(drag=0.5)
    live = msprings.interact(dragged)
    live.wind.value = 4.0
    assert np.allclose(dragged.wind, [4.0, 0.0, 0.0])


def test_a_frame_updates_the_picture_the_energy_bars_and_the_ledger() -> None:
    system = scenes.chain(6)
    live = msprings.interact(system, dt=0.005, steps_per_frame=4)
    frame = live.view.frame
    assert live.history.shape == (1, 1 + len(ENERGY_BARS))
    for count in range(1, 6):
        assert live.tick()
        assert live.history.shape == (1 + count, 1 + len(ENERGY_BARS))
        assert live.history[-1, 0] == pytest.approx(system.t)
    assert live.view.frame > frame
    energy = system.energy()
    assert live.view.energy == {name: getattr(energy, name) for name in ENERGY_BARS}
    assert np.allclose(live.history[-1, 1:], [getattr(energy, name) for name in ENERGY_BARS])
    assert energy.kinetic > 0 and energy.gravity < 0  # the chain is falling
    # The breakdown beside the bars lists the ledger's non-zero parts.
    ledger = system.ledger()
    assert f"dampers {ledger.dampers:.3g}" in live.breakdown.value  # a few J here
    assert f"<b>dissipated</b> {ledger.dissipated:.3g} J" in live.breakdown.value
    assert "drag" not in live.breakdown.value and "user" not in live.breakdown.value
    live.drag(5, system.x[5] + [0.0, 0.5, 0.0])
    live.release(5)
    live.tick()
    assert system.ledger().user != 0.0
    assert f"user {system.ledger().user:.3g}" in live.breakdown.value
    assert np.array_equal(np.frombuffer(live.view.positions, "<f4").reshape(-1, 3), system.x.astype(np.float32))
    assert np.allclose(np.frombuffer(live.view.strain, "<f4"), system.strain(), rtol=1e-6, atol=1e-7)
    assert live.view.status["time"] == system.t
    # The critical step shown is the one computed when the settings last changed.
    live.stiffness["structural"].value = 40.0
    assert live.view.status["critical"] == pytest.approx(system.critical_dt())
    assert f"{system.critical_dt():.3g} s" in live.critical.value


def test_crossing_the_critical_step_is_marked() -> None:
    system = scenes.single_spring()
    live = msprings.interact(system)
    critical = system.critical_dt("symplectic_euler")
    live.dt.value = 0.9 * critical
    assert "below it: stable" in live.critical.value and live.dt.style.handle_color == "#2e7d32"
    live.dt.value = 1.2 * critical
    assert "above it: unstable" in live.critical.value and live.dt.style.handle_color == "#c62828"
    assert f"{critical:.3g} s" in live.critical.value
    # RK4 is stable at that step: the verdict follows the integrator.
    live.integrator.value = "rk4"
    assert "below it: stable" in live.critical.value
    live.integrator.value = "implicit_euler"
    assert "stable at any dt" in live.critical.value


def test_a_blow_up_is_caught_rolled_back_and_explained() -> None:
    system = scenes.single_spring()
    live = msprings.interact(system, steps_per_frame=5)
    live.run(10)
    live.dt.value = 1.5 * system.critical_dt("symplectic_euler")
    live.play.value = True
    assert live.view.playing
    frames = 0
    before = system.t
    while live.tick():
        frames += 1
        before = system.t
        assert frames < 1000, "symplectic Euler above its critical step should blow up"
    assert not live.play.value and not live.view.playing
    assert "blew up" in live.message.value and "above its critical step" in live.message.value
    assert "blew up" in live.view.message and "<" not in live.view.message  # plain text for the canvas
    # Caught once a spring is stretched a hundredfold, before the numbers overflow: the
    # picture is the last sane frame, the system is where the frame's steps ended.
    assert np.all(np.isfinite(system.x)) and np.all(np.isfinite(system.v))
    assert system.t > before and np.abs(system.strain()).max() > 100
    shown = np.frombuffer(live.view.positions, "<f4").reshape(-1, 3)
    assert np.abs(shown).max() < 10 and all(value is not None for value in live.view.energy.values())
    # Play again clears the message.
    live.play.value = True
    assert live.message.value == "" and live.view.message == ""


def test_a_bad_value_written_through_a_view_pauses_with_the_reason() -> None:
    system = scenes.chain(4)
    live = msprings.interact(system)
    live.play.value = True
    system.k[1] = -5.0
    assert not live.tick()
    assert system.steps == 0 and not live.play.value
    assert "Cannot step" in live.message.value and "k" in live.view.message


def test_ticks_from_the_view_step_only_while_playing() -> None:
    system = scenes.single_spring()
    live = msprings.interact(system)
    live._on_view_message(live.view, {"type": "tick"}, [])
    assert system.steps == 0
    live.play.value = True
    live._on_view_message(live.view, {"type": "tick"}, [])
    assert system.steps == live.steps_per_frame.value
    live.view.playing = False  # the view's own pause reaches the button
    assert not live.play.value and live.play.description == "Play"


def test_dragging_a_node_holds_it_and_letting_go_frees_it() -> None:
    system = scenes.chain(4)
    live = msprings.interact(system, dt=0.005, steps_per_frame=4)
    live.run(3)
    target = [1.5, -0.5, 0.0]
    live._on_view_message(live.view, {"type": "drag", "node": 3, "position": target}, [])
    assert np.allclose(system.x[3], target) and np.all(system.v[3] == 0.0)
    assert np.allclose(np.frombuffer(live.view.positions, "<f4").reshape(-1, 3)[3], target)
    before = system.x.copy()
    live.run(5)
    assert np.allclose(system.x[3], target)  # held by the hand while playing
    assert not np.allclose(system.x[1], before[1])  # the rest moves on
    live._on_view_message(live.view, {"type": "release", "node": 3}, [])
    assert not system.pinned[3]
    live.run(5)
    assert not np.allclose(system.x[3], target)
    # A pinned anchor can be dragged too, and stays pinned after the release.
    live.drag(0, [0.0, 0.3, 0.0])
    live.release(0)
    assert system.pinned[0] and np.allclose(system.x[0], [0.0, 0.3, 0.0])
    with pytest.raises(ValueError, match="node"):
        live.drag(4, target)
    with pytest.raises(ValueError, match="position"):
        live.drag(1, [0.0, math.nan, 0.0])


def test_reset_restores_the_state_and_keeps_the_settings() -> None:
    system = scenes.cloth(6)
    x0 = system.x.copy()
    live = msprings.interact(system)
    live.stiffness["bend"].value = 800.0
    generation = live.view.generation
    live.drag(10, [1.0, 1.0, 1.0])
    live.run(10)
    live.play.value = True
    live.reset_button.click()
    assert not live.play.value
    assert system.t == 0.0 and system.steps == 0
    assert np.array_equal(system.x, x0) and not np.any(system.v)
    assert not system.pinned[10]
    assert np.allclose(system.k[system.families["bend"]], 800.0)
    assert live.history.shape[0] == 1 and live.history[0, 0] == 0.0
    assert live.view.generation == generation + 1
    live.step_button.click()
    assert system.steps == live.steps_per_frame.value


@pytest.mark.parametrize(
    ("options", "error", "name"),
    [
        ({"dt": -0.01}, ValueError, "dt"),
        ({"dt": math.inf}, ValueError, "dt"),
        ({"dt": "0.01"}, TypeError, "dt"),
        ({"integrator": "leapfrog"}, ValueError, "integrator"),
        ({"steps_per_frame": 0}, ValueError, "steps_per_frame"),
        ({"steps_per_frame": 2.5}, TypeError, "steps_per_frame"),
        ({"damping": "ratio"}, ValueError, "damping"),
        ({"fps": 0}, ValueError, "fps"),
        ({"fps": 120}, ValueError, "fps"),
        ({"azimuth": math.nan}, ValueError, "azimuth"),
        ({"elevation": "up"}, TypeError, "elevation"),
        ({"width": 100}, ValueError, "width"),
        ({"height": 400.0}, TypeError, "height"),
    ],
)
def test_bad_options_name_the_argument(options: dict, error: type, name: str) -> None:
    with pytest.raises(error, match=name):
        msprings.interact(scenes.single_spring(), **options)


def test_interact_needs_a_system() -> None:
    with pytest.raises(TypeError, match="system"):
        msprings.interact([[0, 0, 0]])
    with pytest.raises(TypeError, match="unexpected keyword"):
        msprings.interact(scenes.single_spring(), colour="red")
