"""The public Python API of ``msprings.System``.

Construction and defaults, zero-copy views of the C memory (and what writing through them does
to the next step), parameter setters, integrator switching, reset and copy, time keeping,
and the small containers the diagnostics return.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import math
import re
from typing import ContextManager

import numpy as np
import pytest

import msprings

DT = 1e-3
INTEGRATOR_NAMES = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler", "projective", "xpbd")
NO_GRAVITY = (0.0, 0.0, 0.0)

# A small non-planar network: a square with one diagonal and a node above it.
POSITIONS = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.0, 2.0, 2.0]]
SPRINGS = [[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]]

FLOAT_VIEWS_NODE3 = ("x", "v", "f", "external")
ALL_VIEWS = ("x", "v", "f", "external", "mass", "pinned", "springs", "rest", "k", "c")


def no_springs() -> np.ndarray:
    """An empty (0, 2) spring array."""
    return np.empty((0, 2), dtype=np.int64)


def data_pointer(array: np.ndarray) -> int:
    """Address of the first element of an array's buffer."""
    return int(array.__array_interface__["data"][0])


def initial_lengths(positions: np.ndarray, springs: np.ndarray) -> np.ndarray:
    """Length of every spring at the given positions."""
    positions = np.asarray(positions, dtype=np.float64)
    springs = np.asarray(springs)
    return np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)


def rich_scene(integrator: str = "symplectic_euler") -> msprings.System:
    """A 3x3 grid with diagonals, a moving pinned corner, damping, drag, energy loss and an
    external force: every term of a step is exercised."""
    grid = np.array([[i * 0.2, -j * 0.2, 0.01 * i * j] for j in range(3) for i in range(3)])
    springs = []
    for j in range(3):
        for i in range(3):
            node = 3 * j + i
            if i < 2:
                springs.append((node, node + 1))
            if j < 2:
                springs.append((node, node + 3))
            if i < 2 and j < 2:
                springs.append((node, node + 4))
    springs_array = np.array(springs)
    velocities = np.zeros_like(grid)
    velocities[0] = (0.05, 0.0, 0.0)
    velocities[4] = (0.0, 0.1, -0.2)
    s = msprings.System(
        grid,
        springs_array,
        mass=np.linspace(0.05, 0.13, 9),
        k=np.linspace(40.0, 60.0, len(springs)),
        c=0.03,
        rest=0.95 * initial_lengths(grid, springs_array),
        pinned=[0],
        velocities=velocities,
        drag=0.02,
        energy_loss=1e-3,
        integrator=integrator,
    )
    s.external[8] = (0.0, 0.0, 0.4)
    return s


def rich_scene_stepping(integrator: str) -> ContextManager[object]:
    """What stepping :func:`rich_scene` at ``DT`` must warn: explicit Euler is stable on a
    damped oscillator only for omega h < 2 zeta, which the scene's light damping puts below
    ``DT`` (a slow, deliberate growth over the few dozen steps these tests take); every other
    integrator is well inside its limit at ``DT`` and must not warn."""
    if integrator == "explicit_euler":
        return pytest.warns(msprings.StabilityWarning, match="explicit_euler")
    return contextlib.nullcontext()


def state_bits(s: msprings.System) -> tuple:
    """Everything a step changes, as exact bytes and floats, for bitwise comparison."""
    return (
        s.x.tobytes(),
        s.v.tobytes(),
        s.f.tobytes(),
        float(s.t).hex(),
        int(s.steps),
        float(s.dissipated).hex(),
    )


def one_free_node(mass: float = 2.0, **kwargs: object) -> msprings.System:
    """A single free node at (0.5, -0.25, 1) with no springs and no gravity unless given."""
    kwargs.setdefault("gravity", NO_GRAVITY)
    return msprings.System([[0.5, -0.25, 1.0]], no_springs(), mass=mass, **kwargs)


def anchored_pair(k: float = 50.0, mass: float = 2.0, **kwargs: object) -> msprings.System:
    """Node 0 pinned at the origin, node 1 free at (1, 0, 0), one spring at rest, no gravity."""
    kwargs.setdefault("gravity", NO_GRAVITY)
    return msprings.System(
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], k=k, mass=mass, pinned=[0], **kwargs
    )


# ---- construction --------------------------------------------------------------------


@pytest.mark.parametrize(
    "positions",
    [
        POSITIONS,
        tuple(tuple(p) for p in POSITIONS),
        np.array(POSITIONS, dtype=np.int64),
        np.array(POSITIONS, dtype=np.int32),
        np.array(POSITIONS, dtype=np.float32),
        np.asfortranarray(POSITIONS, dtype=np.float64),
    ],
    ids=["list", "tuple", "int64", "int32", "float32", "fortran"],
)
def test_positions_from_any_real_array_like_become_float64(positions: object) -> None:
    s = msprings.System(positions, SPRINGS)
    np.testing.assert_array_equal(s.x, np.asarray(positions).astype(np.float64))
    assert s.x.dtype == np.float64
    assert s.n_nodes == 4 and s.n_springs == 5


def test_float32_positions_are_widened_exactly() -> None:
    positions32 = np.array([[0.1, 0.2, 0.3], [1.7, -2.9, 1e-3]], dtype=np.float32)
    s = msprings.System(positions32, [[0, 1]])
    assert s.x.dtype == np.float64
    np.testing.assert_array_equal(s.x, positions32.astype(np.float64))
    expected_rest = initial_lengths(positions32.astype(np.float64), np.array([[0, 1]]))
    np.testing.assert_allclose(s.rest, expected_rest, rtol=1e-15)


@pytest.mark.parametrize(
    "springs",
    [
        SPRINGS,
        tuple(tuple(p) for p in SPRINGS),
        np.array(SPRINGS, dtype=np.int8),
        np.array(SPRINGS, dtype=np.uint16),
        np.array(SPRINGS, dtype=np.int64),
    ],
    ids=["list", "tuple", "int8", "uint16", "int64"],
)
def test_springs_from_any_integer_array_like_become_int32(springs: object) -> None:
    s = msprings.System(POSITIONS, springs)
    assert s.springs.dtype == np.int32
    np.testing.assert_array_equal(s.springs, np.asarray(SPRINGS))


def test_defaults() -> None:
    s = msprings.System(POSITIONS, SPRINGS)
    np.testing.assert_array_equal(s.mass, np.ones(4))
    np.testing.assert_array_equal(s.k, np.ones(5))
    np.testing.assert_array_equal(s.c, np.zeros(5))
    np.testing.assert_allclose(s.rest, initial_lengths(POSITIONS, SPRINGS), rtol=1e-15)
    np.testing.assert_array_equal(s.v, np.zeros((4, 3)))
    np.testing.assert_array_equal(s.external, np.zeros((4, 3)))
    np.testing.assert_array_equal(s.pinned, np.zeros(4, dtype=bool))
    np.testing.assert_array_equal(s.gravity, [0.0, -9.81, 0.0])
    assert s.drag == 0.0
    assert s.energy_loss == 0.0
    assert s.integrator == "symplectic_euler"
    assert s.t == 0.0 and s.steps == 0 and s.dissipated == 0.0


def test_default_rest_lengths_leave_a_fresh_system_without_gravity_force_free() -> None:
    s = msprings.System(POSITIONS, SPRINGS, k=1e3, gravity=NO_GRAVITY)
    np.testing.assert_allclose(s.update_forces(), 0.0, atol=1e-9)
    np.testing.assert_allclose(s.tension(), 0.0, atol=1e-9)
    np.testing.assert_allclose(s.strain(), 0.0, atol=1e-14)
    assert s.energy().spring == pytest.approx(0.0, abs=1e-20)
    before = s.x.copy()
    s.step(DT, 10)
    np.testing.assert_allclose(s.x, before, rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.v, 0.0, atol=1e-9)


def test_scalar_parameters_broadcast() -> None:
    s = msprings.System(POSITIONS, SPRINGS, mass=2.5, k=30.0, c=0.2, rest=0.7)
    np.testing.assert_array_equal(s.mass, np.full(4, 2.5))
    np.testing.assert_array_equal(s.k, np.full(5, 30.0))
    np.testing.assert_array_equal(s.c, np.full(5, 0.2))
    np.testing.assert_array_equal(s.rest, np.full(5, 0.7))


def test_per_item_parameters_are_kept_item_by_item() -> None:
    mass = (1.0, 2.0, 3.0, 4.0)
    k = np.arange(1, 6)  # integers, converted
    c = [0.0, 0.1, 0.2, 0.3, 0.4]
    rest = np.linspace(0.5, 1.5, 5, dtype=np.float32)
    s = msprings.System(POSITIONS, SPRINGS, mass=mass, k=k, c=c, rest=rest)
    np.testing.assert_array_equal(s.mass, mass)
    np.testing.assert_array_equal(s.k, k.astype(np.float64))
    np.testing.assert_array_equal(s.c, c)
    np.testing.assert_array_equal(s.rest, rest.astype(np.float64))


def test_scalar_and_equal_per_item_parameters_step_identically() -> None:
    scalar = msprings.System(POSITIONS, SPRINGS, mass=0.3, k=20.0, c=0.1, rest=1.1)
    per_item = msprings.System(
        POSITIONS, SPRINGS, mass=[0.3] * 4, k=[20.0] * 5, c=np.full(5, 0.1), rest=(1.1,) * 5
    )
    scalar.step(DT, 50)
    per_item.step(DT, 50)
    assert state_bits(scalar) == state_bits(per_item)


@pytest.mark.parametrize(
    "pinned", [[0, 2], (2, 0), np.array([0, 2], dtype=np.int64)], ids=["list", "tuple", "array"]
)
def test_pinned_indices_and_boolean_mask_are_the_same(pinned: object) -> None:
    mask = np.array([True, False, True, False])
    by_index = msprings.System(POSITIONS, SPRINGS, k=10.0, pinned=pinned)
    by_mask = msprings.System(POSITIONS, SPRINGS, k=10.0, pinned=mask)
    np.testing.assert_array_equal(by_index.pinned, mask)
    np.testing.assert_array_equal(by_mask.pinned, mask)
    by_index.step(DT, 20)
    by_mask.step(DT, 20)
    assert state_bits(by_index) == state_bits(by_mask)
    # pinned nodes ignored gravity and springs; free ones fell
    np.testing.assert_array_equal(by_mask.x[mask], np.asarray(POSITIONS)[mask])
    np.testing.assert_array_equal(by_mask.v[mask], 0.0)
    assert np.all(by_mask.v[~mask, 1] < 0.0)


def test_integrator_keyword_accepts_every_name() -> None:
    for name in INTEGRATOR_NAMES:
        assert msprings.System(POSITIONS, SPRINGS, integrator=name).integrator == name


def test_integrators_constant() -> None:
    assert isinstance(msprings.INTEGRATORS, tuple)
    assert len(msprings.INTEGRATORS) == 7
    assert set(msprings.INTEGRATORS) == set(INTEGRATOR_NAMES)


def test_system_without_springs() -> None:
    g = np.array([0.0, -9.81, 0.0])
    s = msprings.System([[0.0, 1.0, 0.0], [2.0, 3.0, 4.0]], no_springs(), mass=[1.0, 3.0])
    assert s.n_springs == 0
    assert s.springs.shape == (0, 2) and s.springs.dtype == np.int32
    for name in ("rest", "k", "c"):
        assert getattr(s, name).shape == (0,)
    for values in (s.lengths(), s.strain(), s.tension()):
        assert values.shape == (0,)
    assert s.energy().spring == 0.0
    s.step(DT, 10)
    np.testing.assert_allclose(s.v, np.tile(10 * DT * g, (2, 1)), rtol=1e-13)


def test_repr_names_the_node_and_spring_counts() -> None:
    positions = np.array([[i, 0.0, 0.0] for i in range(7)])
    springs = [[i, i + 1] for i in range(5)]
    text = repr(msprings.System(positions, springs))
    assert re.search(r"\b7\b", text), text
    assert re.search(r"\b5\b", text), text
    assert "System" in text


def test_counts_and_clock_are_read_only() -> None:
    s = msprings.System(POSITIONS, SPRINGS)
    for name in ("t", "steps", "dissipated", "n_nodes", "n_springs"):
        with pytest.raises(AttributeError):
            setattr(s, name, 1)
    assert s.t == 0.0 and s.steps == 0 and s.n_nodes == 4 and s.n_springs == 5


# ---- zero-copy views -------------------------------------------------------------------


def test_views_have_the_documented_dtype_shape_and_flags() -> None:
    s = msprings.System(POSITIONS, SPRINGS)
    expected = {
        "x": (np.float64, (4, 3), True),
        "v": (np.float64, (4, 3), True),
        "f": (np.float64, (4, 3), True),
        "external": (np.float64, (4, 3), True),
        "mass": (np.float64, (4,), True),
        "pinned": (np.bool_, (4,), True),
        "springs": (np.int32, (5, 2), False),
        "rest": (np.float64, (5,), True),
        "k": (np.float64, (5,), True),
        "c": (np.float64, (5,), True),
    }
    for name, (dtype, shape, writeable) in expected.items():
        view = getattr(s, name)
        assert isinstance(view, np.ndarray), name
        assert view.dtype == dtype, name
        assert view.shape == shape, name
        assert view.flags.c_contiguous, name
        assert view.flags.writeable == writeable, name
        assert view.flags.aligned, name


@pytest.mark.parametrize("name", ALL_VIEWS)
def test_each_access_aliases_the_same_memory(name: str) -> None:
    s = msprings.System(POSITIONS, SPRINGS)
    first = getattr(s, name)
    second = getattr(s, name)
    assert np.shares_memory(first, second)
    assert data_pointer(first) == data_pointer(second)


def test_views_of_different_arrays_do_not_overlap() -> None:
    s = msprings.System(POSITIONS, SPRINGS)
    views = [getattr(s, name) for name in ALL_VIEWS]
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            assert not np.shares_memory(a, b)


def test_external_force_written_through_the_view_drives_the_next_step() -> None:
    s = one_free_node(mass=2.0)
    force = np.array([3.0, -1.0, 0.5])
    s.external[0] = force
    np.testing.assert_array_equal(s.external[0], force)
    s.step(DT)
    np.testing.assert_allclose(s.v[0], force / 2.0 * DT, rtol=1e-15)
    np.testing.assert_allclose(s.x[0], [0.5, -0.25, 1.0] + force / 2.0 * DT * DT, rtol=1e-15)


def test_mass_written_through_the_view_is_used() -> None:
    s = one_free_node(mass=2.0)
    s.mass[0] = 8.0
    s.external[0] = (4.0, 0.0, 0.0)
    s.step(DT)
    np.testing.assert_allclose(s.v[0], [4.0 / 8.0 * DT, 0.0, 0.0], rtol=1e-15)


def test_velocity_written_through_the_view_moves_the_node() -> None:
    s = one_free_node()
    s.v[0] = (0.0, 0.3, -0.6)
    s.step(DT)
    expected = np.array([0.5, -0.25, 1.0]) + DT * np.array([0.0, 0.3, -0.6])
    np.testing.assert_allclose(s.x[0], expected, rtol=1e-15)
    np.testing.assert_array_equal(s.v[0], [0.0, 0.3, -0.6])


def test_position_written_through_the_view_stretches_the_spring() -> None:
    s = anchored_pair(k=50.0, mass=2.0)
    s.x[1] = (1.1, 0.0, 0.0)
    s.step(DT)
    np.testing.assert_allclose(s.v[1], [-50.0 * 0.1 / 2.0 * DT, 0.0, 0.0], rtol=1e-12, atol=1e-18)


def test_stiffness_written_through_the_view_is_used() -> None:
    s = anchored_pair(k=50.0, mass=2.0)
    s.x[1, 0] = 1.1
    s.k[0] = 80.0
    s.step(DT)
    np.testing.assert_allclose(s.v[1], [-80.0 * 0.1 / 2.0 * DT, 0.0, 0.0], rtol=1e-12, atol=1e-18)


def test_rest_length_written_through_the_view_is_used() -> None:
    s = anchored_pair(k=50.0, mass=2.0)
    s.rest[0] = 1.3  # now compressed by 0.3: pushes node 1 outwards
    s.step(DT)
    np.testing.assert_allclose(s.v[1], [50.0 * 0.3 / 2.0 * DT, 0.0, 0.0], rtol=1e-12, atol=1e-18)


def test_damping_written_through_the_view_is_used() -> None:
    s = anchored_pair(k=50.0, mass=2.0)
    s.c[0] = 4.0
    s.v[1] = (0.5, 0.0, 0.0)  # moving away along the spring: the damper pulls back with c * 0.5
    s.step(DT)
    np.testing.assert_allclose(s.v[1], [0.5 - 4.0 * 0.5 / 2.0 * DT, 0.0, 0.0], rtol=1e-12)


def test_pin_flag_written_through_the_view_is_used() -> None:
    s = one_free_node(mass=2.0, gravity=(0.0, -9.81, 0.0))
    start = s.x.copy()
    s.external[0] = (1.0, 0.0, 0.0)
    s.pinned[0] = True
    s.step(DT, 5)
    np.testing.assert_array_equal(s.x, start)
    np.testing.assert_array_equal(s.v, 0.0)
    s.pinned[0] = False
    s.step(DT)
    np.testing.assert_allclose(s.v[0], [0.5 * DT, -9.81 * DT, 0.0], rtol=1e-14)


def test_pinned_node_moves_only_with_its_own_velocity() -> None:
    s = anchored_pair(k=50.0, mass=2.0, gravity=(0.0, -9.81, 0.0))
    s.external[0] = (100.0, 100.0, 100.0)
    s.v[0] = (0.0, 0.2, 0.0)
    s.step(DT, 3)
    np.testing.assert_array_equal(s.v[0], [0.0, 0.2, 0.0])
    np.testing.assert_allclose(s.x[0], [0.0, 3 * DT * 0.2, 0.0], rtol=1e-14)


def test_springs_view_is_read_only() -> None:
    s = msprings.System(POSITIONS, SPRINGS)
    with pytest.raises(ValueError):
        s.springs[0, 0] = 3
    springs = s.springs
    with pytest.raises(ValueError):
        springs[:] = 0
    with pytest.raises(ValueError):
        springs.setflags(write=True)
    np.testing.assert_array_equal(s.springs, SPRINGS)


def test_views_keep_their_system_alive() -> None:
    velocities = np.arange(12, dtype=np.float64).reshape(4, 3) * 0.1
    s = msprings.System(POSITIONS, SPRINGS, k=[1.0, 2.0, 3.0, 4.0, 5.0], velocities=velocities)
    s.step(DT, 3)
    x, v, k, springs = s.x, s.v, s.k, s.springs
    expected_x, expected_v = x.copy(), v.copy()
    del s
    gc.collect()
    # fresh allocations of the same size must not land on the memory the views still use
    others = [msprings.System(POSITIONS, SPRINGS, k=7.0) for _ in range(20)]
    for other in others:
        other.x[:] = -1.0
        other.v[:] = -2.0
    np.testing.assert_array_equal(x, expected_x)
    np.testing.assert_array_equal(v, expected_v)
    np.testing.assert_array_equal(k, [1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(springs, SPRINGS)
    x[0, 0] = 42.0
    assert x[0, 0] == 42.0
    v[1] = (1.0, 2.0, 3.0)
    np.testing.assert_array_equal(v[1], [1.0, 2.0, 3.0])


# ---- options and integrators -------------------------------------------------------------


def test_integrator_switching_between_steps_uses_each_method() -> None:
    """One free falling node: each method's one-step update of (y, v_y) is known exactly."""
    g = -9.81
    s = msprings.System([[0.0, 0.0, 0.0]], no_springs())
    order = ["symplectic_euler", "explicit_euler", "rk4", "implicit_euler", "velocity_verlet",
             "explicit_euler", "implicit_euler", "rk4", "symplectic_euler", "velocity_verlet"]
    expected_dy = {
        "explicit_euler": lambda v0: DT * v0,
        "symplectic_euler": lambda v0: DT * (v0 + DT * g),
        "velocity_verlet": lambda v0: DT * v0 + 0.5 * DT * DT * g,
        "rk4": lambda v0: DT * v0 + 0.5 * DT * DT * g,
        # backward Euler with a constant force: v' = v + h g, x' = x + h v'
        "implicit_euler": lambda v0: DT * (v0 + DT * g),
    }
    for name in order:
        s.integrator = name
        assert s.integrator == name
        y0, v0 = float(s.x[0, 1]), float(s.v[0, 1])
        s.step(DT)
        assert s.x[0, 1] - y0 == pytest.approx(expected_dy[name](v0), rel=1e-9, abs=1e-15)
        assert s.v[0, 1] == pytest.approx(v0 + DT * g, rel=1e-13)
    assert s.steps == len(order)


def test_integrator_set_by_name_matches_construction_with_it() -> None:
    for name in INTEGRATOR_NAMES:
        built = rich_scene(name)
        switched = rich_scene("symplectic_euler")
        switched.integrator = name
        with rich_scene_stepping(name):
            built.step(DT, 30)
        with rich_scene_stepping(name):
            switched.step(DT, 30)
        assert state_bits(built) == state_bits(switched), name


def test_gravity_setter() -> None:
    s = one_free_node(mass=3.0)
    s.gravity = [0.0, 0.0, -1.62]
    gravity = s.gravity
    assert isinstance(gravity, np.ndarray)
    assert gravity.dtype == np.float64 and gravity.shape == (3,)
    np.testing.assert_array_equal(gravity, [0.0, 0.0, -1.62])
    gravity[2] = 100.0  # a copy: the system is not affected
    np.testing.assert_array_equal(s.gravity, [0.0, 0.0, -1.62])
    s.step(DT)
    np.testing.assert_allclose(s.v[0], [0.0, 0.0, -1.62 * DT], rtol=1e-15)
    np.testing.assert_allclose(s.update_forces()[0], [0.0, 0.0, -1.62 * 3.0], rtol=1e-15)


def test_drag_setter() -> None:
    s = one_free_node(mass=2.0, velocities=[[1.0, -2.0, 0.0]])
    s.drag = 0.5
    assert s.drag == 0.5
    s.step(DT)
    v0 = np.array([1.0, -2.0, 0.0])
    np.testing.assert_allclose(s.v[0], v0 - DT * 0.5 * v0 / 2.0, rtol=1e-14)
    # rectangle rule at the step start: power drag |v0|^2 over one step
    assert s.dissipated == pytest.approx(0.5 * float(v0 @ v0) * DT, rel=1e-12)


def test_energy_loss_setter() -> None:
    v0 = np.array([2.0, 0.0, -1.0])
    s = one_free_node(mass=3.0, velocities=[v0])
    s.energy_loss = 0.25
    assert s.energy_loss == 0.25
    s.step(DT)
    np.testing.assert_allclose(s.v[0], 0.75 * v0, rtol=1e-15)
    np.testing.assert_allclose(s.x[0], np.array([0.5, -0.25, 1.0]) + DT * v0, rtol=1e-15)
    removed = 0.5 * 3.0 * float(v0 @ v0) * (1.0 - 0.75**2)
    assert s.dissipated == pytest.approx(removed, rel=1e-12)
    energy = s.energy()
    initial_kinetic = 0.5 * 3.0 * float(v0 @ v0)
    assert energy.kinetic + energy.dissipated == pytest.approx(initial_kinetic, rel=1e-12)


# ---- reset and copy --------------------------------------------------------------------


def test_reset_restores_the_initial_state_and_keeps_the_parameters() -> None:
    s = rich_scene()
    x0, v0 = s.x.copy(), s.v.copy()
    s.step(DT, 40)
    first_run = state_bits(s)
    s.k[0] = 99.0
    s.external[3] = (0.1, 0.2, 0.3)
    s.gravity = (0.0, -1.0, 0.0)
    s.drag = 0.07
    s.integrator = "rk4"
    s.newton_max_iter = 3
    s.strain_limit = 0.25
    s.step(DT, 5)
    s.reset()
    np.testing.assert_array_equal(s.x, x0)
    np.testing.assert_array_equal(s.v, v0)
    assert s.t == 0.0 and s.steps == 0 and s.dissipated == 0.0
    assert s.k[0] == 99.0
    np.testing.assert_array_equal(s.external[3], [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(s.gravity, [0.0, -1.0, 0.0])
    assert s.drag == 0.07 and s.integrator == "rk4"
    assert s.newton_max_iter == 3 and s.strain_limit == 0.25
    # with the original parameters back, the first run repeats bit for bit
    s.k[0] = rich_scene().k[0]
    s.external[3] = 0.0
    s.gravity = (0.0, -9.81, 0.0)
    s.drag = 0.02
    s.integrator = "symplectic_euler"
    s.strain_limit = None
    s.step(DT, 40)
    assert state_bits(s) == first_run


@pytest.mark.parametrize("integrator", ["velocity_verlet", "implicit_euler"])
@pytest.mark.parametrize("how", ["copy", "deepcopy"])
def test_copies_are_independent_and_equal(how: str, integrator: str) -> None:
    original = rich_scene(integrator)
    original.newton_max_iter = 7
    original.newton_tol = 1e-11
    original.cg_max_iter = 300
    original.cg_tol = 1e-6
    original.strain_limit = 0.3
    original.step(DT, 25)
    before = state_bits(original)
    duplicate = original.copy() if how == "copy" else copy.deepcopy(original)
    assert type(duplicate) is type(original)
    assert state_bits(duplicate) == before
    for name in ALL_VIEWS:
        a, b = getattr(original, name), getattr(duplicate, name)
        np.testing.assert_array_equal(a, b)
        assert not np.shares_memory(a, b), name
    for name in ("integrator", "drag", "energy_loss", "n_nodes", "n_springs", "newton_max_iter",
                 "newton_tol", "cg_max_iter", "cg_tol", "strain_limit"):
        assert getattr(duplicate, name) == getattr(original, name), name
    np.testing.assert_array_equal(duplicate.gravity, original.gravity)

    duplicate.step(DT, 10)
    duplicate.k[:] = 1.0
    duplicate.external[:] = 5.0
    duplicate.gravity = (1.0, 1.0, 1.0)
    duplicate.integrator = "explicit_euler"
    duplicate.newton_tol = 1e-3
    duplicate.strain_limit = None
    assert state_bits(original) == before
    assert original.k[0] != 1.0 and original.external[0, 0] == 0.0
    assert original.integrator == integrator
    assert original.newton_tol == 1e-11 and original.strain_limit == 0.3

    # stepping both the same way gives the same result
    twin = original.copy() if how == "copy" else copy.deepcopy(original)
    original.step(DT, 15)
    twin.step(DT, 15)
    assert state_bits(original) == state_bits(twin)


def test_reset_of_a_copy_goes_back_to_the_original_initial_state() -> None:
    s = rich_scene()
    x0 = s.x.copy()
    s.step(DT, 10)
    duplicate = s.copy()
    duplicate.reset()
    np.testing.assert_array_equal(duplicate.x, x0)
    assert s.steps == 10


# ---- time keeping and stepping -------------------------------------------------------------


def test_time_and_step_count_advance() -> None:
    s = rich_scene()
    s.step(DT, 1000)
    assert s.steps == 1000
    assert math.isclose(s.t, 1000 * DT, rel_tol=1e-12)
    s.step(2.5e-3, 4)
    s.step(5e-4)
    assert s.steps == 1005
    assert math.isclose(s.t, 1000 * DT + 4 * 2.5e-3 + 5e-4, rel_tol=1e-12)
    assert isinstance(s.steps, int) and isinstance(s.t, float)


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
def test_step_n_equals_n_single_steps_bitwise(integrator: str) -> None:
    batched = rich_scene(integrator)
    single = rich_scene(integrator)
    with rich_scene_stepping(integrator):
        assert batched.step(DT, 37) is None
    with rich_scene_stepping(integrator):
        for _ in range(37):
            single.step(DT)
    assert state_bits(batched) == state_bits(single)
    assert batched.energy() == single.energy()


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
def test_f_holds_the_force_at_the_start_of_the_last_step(integrator: str) -> None:
    s = rich_scene(integrator)
    with rich_scene_stepping(integrator):
        s.step(DT, 7)
    probe = s.copy()
    expected = probe.update_forces().copy()
    s.step(DT)
    np.testing.assert_array_equal(s.f, expected)


def test_update_forces_returns_the_f_view_with_weight_and_external_force() -> None:
    g = np.array([0.0, -9.81, 0.0])
    s = msprings.System([[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]], no_springs(), mass=[3.0, 0.5])
    s.external[1] = (1.0, 2.0, -3.0)
    forces = s.update_forces()
    assert isinstance(forces, np.ndarray)
    assert np.shares_memory(forces, s.f)
    assert data_pointer(forces) == data_pointer(s.f)
    np.testing.assert_allclose(forces[0], 3.0 * g, rtol=1e-15)
    np.testing.assert_allclose(forces[1], 0.5 * g + np.array([1.0, 2.0, -3.0]), rtol=1e-15)
    assert s.steps == 0 and s.t == 0.0


# ---- diagnostics containers -------------------------------------------------------------


def test_energy_is_a_named_tuple_with_a_consistent_ledger() -> None:
    # node 0: pinned (excluded from kinetic and gravity); node 1: free, 0.5 m below its rest length
    s = msprings.System(
        [[0.0, 3.0, 0.0], [0.0, 1.5, 0.0]],
        [[0, 1]],
        mass=[5.0, 2.0],
        k=10.0,
        rest=1.0,
        pinned=[0],
        velocities=[[1.0, 1.0, 1.0], [0.3, 0.0, 0.4]],
    )
    energy = s.energy()
    assert isinstance(energy, msprings.Energy)
    assert isinstance(energy, tuple)
    assert energy._fields[:4] == ("kinetic", "spring", "gravity", "dissipated")
    assert energy.kinetic == pytest.approx(0.5 * 2.0 * 0.25, rel=1e-14)
    assert energy.spring == pytest.approx(0.5 * 10.0 * 0.25, rel=1e-14)
    assert energy.gravity == pytest.approx(2.0 * 9.81 * 1.5, rel=1e-14)
    assert energy.dissipated == 0.0
    mechanical = energy.kinetic + energy.spring + energy.gravity
    assert energy.mechanical == pytest.approx(mechanical, rel=1e-15)
    assert energy.total == pytest.approx(energy.mechanical + energy.dissipated, rel=1e-15)
    np.testing.assert_allclose(s.momentum(), [0.6, 0.0, 0.8], rtol=1e-15)

    damped = rich_scene()
    damped.step(DT, 50)
    energy = damped.energy()
    assert energy.dissipated == damped.dissipated > 0.0
    assert energy.work == damped.work
    assert energy.total == pytest.approx(energy.mechanical + energy.dissipated - energy.work, rel=1e-15)


def test_copy_keeps_the_last_calls_start_energy():
    """What a recording reads of the last step call (the energy it started from) goes with a copy."""
    s = msprings.System([[0.0, 0.0, 0.0], [1.2, 0.0, 0.0]], [[0, 1]], k=40.0, rest=1.0, pinned=[0])
    s._keep_start_energy(True)
    s.step(1e-3, 3)
    s._keep_start_energy(False)
    start = s._start_energy()
    assert start is not None and start[1] == pytest.approx(0.5 * 40.0 * 0.2**2)
    assert s.copy()._start_energy() == start
