"""The option table (``msprings._core.OPTIONS``): complete, and the one thing that drives the
option attributes, their checks and the model files.

Every settable attribute of a System is in the table and every row is an attribute with the
row's docstring; every option survives a model file with a non-default value; every option
refuses a value of the wrong type, NaN and values just outside the table's range with the
documented exception naming it, and changes nothing when it does; values at the table's
closed ends are accepted.  Options written through the table act on the physics: drag and
wind against the closed form of a node in linear drag, gravity set between steps booked as
the caller's work.
"""

from __future__ import annotations

import math
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msprings
from msprings import _core
from msprings import io as model_io

OPTIONS = {option.name: option for option in _core.OPTIONS}
KINDS = ("real", "real_or_none", "optional_real", "integer", "vector3", "integrator")

# The option entries of every model file written so far (formats 1 to 3): files written
# before must keep loading, so the table may grow but not rename these.
SAVED_OPTIONS = {
    "integrator", "gravity", "drag", "energy_loss", "strain_limit", "self_collision", "threads",
    "newton_max_iter", "newton_tol", "cg_max_iter", "cg_tol", "air_density", "drag_coefficient",
    "lift_coefficient", "wind", "gust", "gust_frequency", "gust_wavenumber",
}


def small_system() -> msprings.System:
    """Three nodes in a triangle, node 0 pinned, moved a little so the state is not at rest."""
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]], [[0, 1], [1, 2], [2, 0]],
                        mass=[1.0, 0.5, 0.8], k=40.0, c=0.1, pinned=[0], faces=[[0, 1, 2]])
    s.step(1e-3, 20)
    return s


def same(a: Any, b: Any) -> bool:
    """Equal values of an option: arrays bit for bit, everything else with ==."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).tobytes() == np.asarray(b).tobytes()
    return type(a) is type(b) and a == b


def other_value(option: Any, current: Any) -> Any:
    """A valid value of the option that differs from ``current``."""
    if option.kind == "integrator":
        return next(name for name in msprings.INTEGRATORS if name != current)
    if option.kind == "vector3":
        return current + np.array([0.5, 0.25, -0.125])
    if option.kind == "integer":
        return current + 1 if current < option.high else current - 1
    if option.kind == "optional_real" and current is None:
        return 0.25
    return current + 0.25


def snapshot(s: msprings.System) -> dict[str, Any]:
    """Everything a refused option must leave alone, read without handing out a writable
    view of s (that would record its energy): the recorded energy first, then every option,
    the clock, the ledger, and the state of a copy."""
    watched = s._watched_energy()
    duplicate = s.copy()
    return {
        "watched": np.float64(watched).tobytes(),
        "options": {name: np.asarray(getattr(s, name)).tobytes() for name in OPTIONS},
        "clock": (s.t, s.steps),
        "ledger": np.array(s._ledger(False)).tobytes(),
        "state": [np.array(getattr(duplicate, name)).tobytes() for name in ("x", "v", "f", "external")],
    }


def bad_values(option: Any) -> list[tuple[Any, type[Exception]]]:
    """Values of each wrong kind for the option, with the exception each must raise: a
    wrong type, NaN, and the values just outside the table's range."""
    if option.kind == "integrator":
        return [(3, TypeError), (None, TypeError), ("leapfrog", ValueError), ("rk4\0", ValueError)]
    if option.kind == "vector3":
        bad = [("up", TypeError), (object(), TypeError), ((0.0, 1.0), ValueError), (np.zeros((3, 1)), ValueError),
               ((0.0, math.nan, 0.0), ValueError)]
        bad += [((0.0, end, 0.0), ValueError) for end in (option.low, option.high)]  # +-inf: open ends
        return bad
    if option.kind == "integer":
        return [(2.0, TypeError), ("3", TypeError), (True, TypeError), (math.nan, TypeError),
                (option.low - 1, ValueError), (option.high + 1, ValueError), (2**70, ValueError)]
    bad: list[tuple[Any, type[Exception]]] = [("0.5", TypeError), (1j, TypeError), ([0.5], TypeError),
                                              (math.nan, ValueError)]
    if option.kind == "real":
        bad.append((None, TypeError))
    for end, is_open, outward in ((option.low, option.low_open, -math.inf), (option.high, option.high_open, math.inf)):
        bad.append((end if is_open else math.nextafter(end, outward), ValueError))
    return bad


def accepted_ends(option: Any) -> list[Any]:
    """The table's finite closed ends, which the option must accept."""
    if option.kind in ("integrator", "vector3"):
        return []
    return [end for end, is_open in ((option.low, option.low_open), (option.high, option.high_open)) if not is_open]


# ---- the table ------------------------------------------------------------------------


def test_table_rows_are_well_formed() -> None:
    assert len(OPTIONS) == len(_core.OPTIONS), "option names repeat"
    for option in _core.OPTIONS:
        assert isinstance(option, _core.Option) and isinstance(option, tuple)
        assert option.kind in KINDS, option
        assert option.doc and isinstance(option.doc, str)
        if option.kind == "integrator":
            assert (option.low, option.high, option.low_open, option.high_open) == (None, None, None, None)
            continue
        assert option.low < option.high, option
        assert isinstance(option.low_open, bool) and isinstance(option.high_open, bool)
        if option.kind == "integer":
            assert type(option.low) is int and type(option.high) is int and not option.low_open
        # an infinite end can never be reached: it is open
        assert option.low_open or math.isfinite(option.low)
        assert option.high_open or math.isfinite(option.high)


def test_every_settable_attribute_is_in_the_table_and_every_row_is_one() -> None:
    s = small_system()
    settable = set()
    for name, attribute in vars(_core.System).items():
        if not isinstance(attribute, types.GetSetDescriptorType):
            continue
        try:
            setattr(s, name, getattr(s, name))
        except AttributeError:
            continue
        settable.add(name)
    assert settable == set(OPTIONS)
    for option in _core.OPTIONS:
        assert vars(_core.System)[option.name].__doc__ == option.doc


def test_model_files_keep_the_option_entries_of_earlier_files(tmp_path: Path) -> None:
    saved = model_io.save(small_system(), tmp_path / "small.npz")
    with np.load(saved, allow_pickle=False) as archive:
        entries = {key.removeprefix("option_") for key in archive.files if key.startswith("option_")}
    assert entries == set(OPTIONS) >= SAVED_OPTIONS


def test_constructor_options_are_the_table_options_with_their_checks() -> None:
    positions, springs = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]]
    for name, bad, error in (("gravity", (0.0, math.inf, 0.0), ValueError), ("drag", -1.0, ValueError),
                             ("energy_loss", "0.1", TypeError), ("integrator", "midpoint", ValueError)):
        with pytest.raises(error, match=name):
            msprings.System(positions, springs, **{name: bad})
        good = other_value(OPTIONS[name], getattr(msprings.System(positions, springs), name))
        assert same(getattr(msprings.System(positions, springs, **{name: good}), name), good)


# ---- every option, through the table ---------------------------------------------------


@pytest.mark.parametrize("name", list(OPTIONS))
def test_option_round_trips_through_a_model_file(tmp_path: Path, name: str) -> None:
    s = small_system()
    default = getattr(s, name)
    value = other_value(OPTIONS[name], default)
    setattr(s, name, value)
    assert same(getattr(s, name), value) and not same(value, default)
    loaded = model_io.load(model_io.save(s, tmp_path / f"{name}.npz"))
    assert same(getattr(loaded, name), value)
    for other in OPTIONS:
        assert same(getattr(loaded, other), getattr(s, other)), other


@pytest.mark.parametrize("name", list(OPTIONS))
def test_option_refuses_bad_values_and_changes_nothing(name: str) -> None:
    s = small_system()
    before = snapshot(s)
    for value, error in bad_values(OPTIONS[name]):
        with pytest.raises(error, match=name):
            setattr(s, name, value)
        assert snapshot(s) == before, (name, value)
    with pytest.raises(AttributeError, match=name):
        delattr(s, name)
    assert snapshot(s) == before


@pytest.mark.parametrize("name", list(OPTIONS))
def test_option_accepts_the_closed_ends_of_its_range(name: str) -> None:
    s = small_system()
    for end in accepted_ends(OPTIONS[name]):
        setattr(s, name, end)
        assert getattr(s, name) == end
        s.step(1e-4)


def test_none_turns_the_optional_options_off() -> None:
    s = small_system()
    for option in _core.OPTIONS:
        if option.kind in ("optional_real", "real_or_none"):
            setattr(s, option.name, 0.5)
            setattr(s, option.name, None)
            assert getattr(s, option.name) == (None if option.kind == "optional_real" else 0.0)


# ---- options act on the physics -------------------------------------------------------


def free_node(mass: float) -> msprings.System:
    return msprings.System([[0.0, 0.0, 0.0]], np.zeros((0, 2), dtype=int), mass=mass, integrator="rk4")


def test_drag_set_through_the_table_gives_the_closed_form_fall() -> None:
    """A node of mass m falling from rest in linear drag b: v(t) = -(g m / b)(1 - exp(-b t / m)),
    y(t) = -(g m / b)(t - (m / b)(1 - exp(-b t / m)))."""
    m, b, g, dt, steps = 2.0, 0.7, 9.81, 1e-3, 3000
    s = free_node(m)
    s.drag = b
    s.step(dt, steps)
    t = dt * steps
    decay = 1.0 - math.exp(-b * t / m)
    assert s.v[0, 1] == pytest.approx(-(g * m / b) * decay, rel=1e-10)
    assert s.x[0, 1] == pytest.approx(-(g * m / b) * (t - (m / b) * decay), rel=1e-10)
    assert abs(s.v[0, 1]) < 0.8 * g * t  # without drag it would be g t


def test_wind_set_through_the_table_drags_a_node_to_its_speed() -> None:
    """Without gravity, a node at rest in wind W with drag b: v(t) = W (1 - exp(-b t / m))."""
    m, b, dt, steps = 0.5, 0.3, 1e-3, 2000
    wind = np.array([1.5, 0.0, -0.5])
    s = free_node(m)
    s.gravity = (0.0, 0.0, 0.0)
    s.drag = b
    s.wind = wind
    s.step(dt, steps)
    np.testing.assert_allclose(s.v[0], wind * (1.0 - math.exp(-b * dt * steps / m)), rtol=1e-10, atol=0)


def test_gravity_set_mid_run_is_booked_as_the_callers_work() -> None:
    """Changing g from g1 to g2 at position x changes the gravitational energy -m g.x by
    -m (g2 - g1).x: the next step books exactly that as ledger.user, and the balance
    mechanical + dissipated - work does not jump."""
    m = 1.5
    s = msprings.System([[0.0, 2.0, 0.0], [1.0, 2.0, 0.0]], [[0, 1]], mass=m, k=30.0, pinned=[0])
    s.step(1e-3, 200)
    balance_before = s.energy().total
    x = s.copy().x[1].copy()
    g1, g2 = s.gravity, np.array([0.5, -20.0, 0.0])
    s.gravity = g2
    s.step(1e-3)
    expected = -m * float(np.dot(g2 - g1, x))
    assert s.ledger().user == pytest.approx(expected, rel=1e-12)
    assert abs(expected) > 1.0
    assert s.energy().total == pytest.approx(balance_before, abs=1e-3 * abs(expected))
