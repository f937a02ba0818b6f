"""Errors that point the right way: a misspelt or misplaced scene keyword is named with the
keyword meant, and replacing a view of a system's memory says to write into it instead."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import msprings
from msprings import scenes


def test_pinned_for_pin_in_cloth_suggests_pin() -> None:
    with pytest.raises(TypeError, match=r"did you mean pin=\?"):
        scenes.cloth(20, pinned="corners")
    cloth = scenes.cloth(4, pinned=[0])  # pinned= still overrides pin=
    assert np.flatnonzero(cloth.pinned).tolist() == [0]


@pytest.mark.parametrize("call, meant", [
    (lambda: scenes.cloth(4, youngs=1e5, thickness=1e-3, density=100.0), "youngs_modulus"),
    (lambda: scenes.cloth(4, pinn="top"), "pin"),
    (lambda: scenes.tablecloth(4, intgrator="rk4"), "integrator"),
    (lambda: scenes.jelly_cube(3, densty=1000.0), "density"),
    (lambda: scenes.chain(3, pin="start"), "pinned"),
    (lambda: scenes.chain(3, anchr=None), "anchor"),
    (lambda: scenes.single_spring(streth=0.1), "stretch"),
    (lambda: scenes.pyramid(elevaton=1.0), "elevation"),
    (lambda: scenes.spring_sphere(1, stabilize="center"), "stabilise"),
    (lambda: scenes.spring_sphere(1, youngs_modulus=1e4, total_mas=1.0), "total_mass"),
    (lambda: scenes.balloon(1, lfit=0.5), "lift"),
])
def test_unknown_scene_keywords_suggest_the_closest(call, meant: str) -> None:
    with pytest.raises(TypeError, match=rf"did you mean {meant}=\?"):
        call()


def test_every_keyword_handed_on_is_still_taken() -> None:
    """Keywords a builder hands on (System's, from_mesh's and the options from_mesh sets)."""
    sphere = scenes.spring_sphere(1, strain_limit=0.1, threads=1, drag=0.2, integrator="rk4", density=500.0,
                                  youngs_modulus=1e4)
    assert sphere.strain_limit == 0.1 and sphere.drag == 0.2 and sphere.integrator == "rk4"
    cloth = scenes.cloth(4, gravity=(0.0, -1.0, 0.0), velocities=np.zeros((16, 3)), integrator="rk4")
    assert cloth.gravity.tolist() == [0.0, -1.0, 0.0]


def test_far_off_keywords_are_refused_without_a_guess() -> None:
    with pytest.raises(TypeError, match=r"cloth\(\) got an unexpected keyword argument 'zzz'$"):
        scenes.cloth(4, zzz=1)


def test_checked_builders_keep_their_signatures() -> None:
    assert "pin" in inspect.signature(scenes.cloth).parameters
    assert scenes.cloth.__doc__ and "pin" in scenes.cloth.__doc__


@pytest.mark.parametrize("name, unit_rows", [("x", "node"), ("v", "node"), ("f", "node"), ("external", "node"),
                                             ("mass", "node"), ("pinned", "node"), ("rest", "spring"),
                                             ("k", "spring"), ("c", "spring")])
def test_replacing_a_view_says_to_write_into_it(name: str, unit_rows: str) -> None:
    system = scenes.cloth(3)
    before = np.array(getattr(system, name))
    view = getattr(system, name)
    with pytest.raises(AttributeError, match=rf"s\.{name}\[:\] = \.\.\..*for one {unit_rows}"):
        setattr(system, name, np.zeros(view.shape, dtype=view.dtype))
    assert getattr(system, name).tobytes() == before.tobytes()


def test_replacing_x_with_the_wrong_shape_says_to_write_into_it() -> None:
    system = scenes.chain(11)
    with pytest.raises(AttributeError, match=r"s\.x\[:\] = "):
        system.x = np.zeros((11, 3))


def test_other_attribute_errors() -> None:
    system = scenes.chain(3)
    with pytest.raises(AttributeError, match="fixed when a system is built"):
        system.springs = np.zeros((2, 2), dtype=np.int32)
    with pytest.raises(AttributeError, match=r"did you mean gravity\?"):
        system.gravty = (0.0, 0.0, 0.0)
    with pytest.raises(AttributeError, match=r"no attribute 'zzz'$"):
        system.zzz = 1
    system.drag, system.gravity, system.families = 0.5, (0.0, -1.0, 0.0), {}
    assert system.drag == 0.5 and system.gravity.tolist() == [0.0, -1.0, 0.0]
    assert isinstance(system, msprings.System)


def test_replacing_a_view_of_a_system_not_initialised_is_an_attribute_error() -> None:
    """The hint needs no view to exist: a System whose __init__ never ran still gets the
    AttributeError with the way to write into the view."""
    bare = msprings.System.__new__(msprings.System)
    with pytest.raises(AttributeError, match=r"s\.x\[:\] = \.\.\."):
        bare.x = np.zeros((2, 3))
