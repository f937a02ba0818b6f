"""Bad input is refused with the right exception, a message naming the argument, and no change.

Constructor arguments, ``step`` arguments, option setters, and parameters corrupted through the
writable views (checked at the next ``step``) are all covered.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import msprings

DT = 1e-3
INTEGRATOR_NAMES = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler")
SOLVER_OPTIONS = ("newton_max_iter", "newton_tol", "cg_max_iter", "cg_tol", "strain_limit")

# A unit square in the xy plane with one diagonal; node 0 is pinned in the valid setup.
POSITIONS = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
SPRINGS = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
N_NODES, N_SPRINGS = len(POSITIONS), len(SPRINGS)

VIEW_NAMES = ("x", "v", "f", "external", "mass", "pinned", "springs", "rest", "k", "c")


def valid_arguments(**overrides: Any) -> dict[str, Any]:
    """Keyword arguments of a valid System; ``overrides`` replace or add entries."""
    arguments: dict[str, Any] = {
        "positions": POSITIONS.copy(),
        "springs": SPRINGS.copy(),
        "mass": np.array([1.0, 0.5, 0.7, 0.9]),
        "k": np.full(N_SPRINGS, 30.0),
        "c": np.full(N_SPRINGS, 0.1),
        "rest": np.full(N_SPRINGS, 0.9),
        "pinned": [0],
        "velocities": np.zeros((N_NODES, 3)),
        "gravity": (0.0, -9.81, 0.0),
        "drag": 0.01,
        "energy_loss": 0.0,
        "integrator": "symplectic_euler",
    }
    arguments.update(overrides)
    return arguments


def build(**overrides: Any) -> msprings.System:
    """A System from :func:`valid_arguments` with ``overrides`` applied."""
    arguments = valid_arguments(**overrides)
    return msprings.System(arguments.pop("positions"), arguments.pop("springs"), **arguments)


def stepped_system() -> msprings.System:
    """A valid system that has moved, so that its state is not all zeros."""
    s = build()
    s.external[3] = (0.2, 0.0, -0.1)
    s.step(DT, 25)
    return s


def snapshot(s: msprings.System) -> dict[str, Any]:
    """Every observable piece of a system, as exact bytes or plain values."""
    state: dict[str, Any] = {name: getattr(s, name).tobytes() for name in VIEW_NAMES}
    state["t"] = float(s.t).hex()
    state["steps"] = int(s.steps)
    state["dissipated"] = float(s.dissipated).hex()
    state["integrator"] = s.integrator
    state["gravity"] = np.asarray(s.gravity).tobytes()
    state["drag"] = float(s.drag).hex()
    state["energy_loss"] = float(s.energy_loss).hex()
    for name in SOLVER_OPTIONS:
        state[name] = repr(getattr(s, name))
    return state


def assert_unchanged(s: msprings.System, before: dict[str, Any]) -> None:
    """Fails naming the first piece of state that differs from ``before``."""
    after = snapshot(s)
    for name, value in before.items():
        assert after[name] == value, f"{name} changed"


# ---- constructor -----------------------------------------------------------------------

not_numeric_objects = np.empty((N_NODES, 3), dtype=object)
not_numeric_objects[:] = [[object() for _ in range(3)] for _ in range(N_NODES)]

BAD_CONSTRUCTION = [
    # shapes
    ("positions (n, 2)", {"positions": POSITIONS[:, :2]}, ValueError, "positions"),
    ("positions 1-D", {"positions": POSITIONS.ravel()}, ValueError, "positions"),
    ("positions (n, 3, 1)", {"positions": POSITIONS[:, :, None]}, ValueError, "positions"),
    ("no nodes", {"positions": np.zeros((0, 3)), "springs": np.zeros((0, 2), int),
                  "mass": 1.0, "k": 1.0, "c": 0.0, "rest": None, "pinned": None,
                  "velocities": None}, ValueError, "positions"),
    ("springs (m, 3)", {"springs": np.array([[0, 1, 2], [1, 2, 3]])}, ValueError, "springs"),
    ("springs 1-D", {"springs": np.array([0, 1])}, ValueError, "springs"),
    ("mass too short", {"mass": [1.0, 1.0, 1.0]}, ValueError, "mass"),
    ("mass too long", {"mass": np.ones(N_NODES + 1)}, ValueError, "mass"),
    ("mass (n, 1)", {"mass": np.ones((N_NODES, 1))}, ValueError, "mass"),
    ("k too short", {"k": np.ones(N_SPRINGS - 1)}, ValueError, r"\bk\b"),
    ("k too long", {"k": np.ones(N_SPRINGS + 2)}, ValueError, r"\bk\b"),
    ("c wrong length", {"c": np.ones(N_SPRINGS + 1)}, ValueError, r"\bc\b"),
    ("rest wrong length", {"rest": np.ones(2)}, ValueError, "rest"),
    ("velocities (n, 2)", {"velocities": np.zeros((N_NODES, 2))}, ValueError, "velocities"),
    ("velocities (n-1, 3)", {"velocities": np.zeros((N_NODES - 1, 3))}, ValueError, "velocities"),
    ("gravity of 2", {"gravity": (0.0, -9.81)}, ValueError, "gravity"),
    # dtypes
    ("positions as numeric strings", {"positions": POSITIONS.astype(str)}, TypeError, "positions"),
    ("positions complex", {"positions": POSITIONS.astype(complex)}, TypeError, "positions"),
    ("positions objects", {"positions": not_numeric_objects}, TypeError, "positions"),
    ("springs fractional", {"springs": SPRINGS + 0.5}, TypeError, "springs"),
    ("springs strings", {"springs": SPRINGS.astype(str)}, TypeError, "springs"),
    ("velocities strings", {"velocities": np.zeros((N_NODES, 3)).astype(str)}, TypeError,
     "velocities"),
    ("mass complex", {"mass": np.ones(N_NODES, dtype=complex)}, TypeError, "mass"),
    # non-finite values
    ("positions nan", {"positions": np.where(np.eye(4, 3) > 0, np.nan, POSITIONS)}, ValueError,
     "positions"),
    ("positions inf", {"positions": POSITIONS + [[0, 0, 0], [0, np.inf, 0], [0, 0, 0], [0, 0, 0]]},
     ValueError, "positions"),
    ("velocities nan", {"velocities": np.full((N_NODES, 3), np.nan)}, ValueError, "velocities"),
    ("velocities -inf", {"velocities": [[0, 0, 0], [0, 0, 0], [0, 0, -np.inf], [0, 0, 0]]},
     ValueError, "velocities"),
    ("mass nan", {"mass": [1.0, np.nan, 1.0, 1.0]}, ValueError, "mass"),
    ("mass inf", {"mass": np.inf}, ValueError, "mass"),
    ("k nan", {"k": [30.0, 30.0, np.nan, 30.0, 30.0]}, ValueError, r"\bk\b"),
    ("k inf", {"k": np.inf}, ValueError, r"\bk\b"),
    ("c nan", {"c": np.nan}, ValueError, r"\bc\b"),
    ("c inf", {"c": [0.0, 0.0, 0.0, 0.0, np.inf]}, ValueError, r"\bc\b"),
    ("rest nan", {"rest": [np.nan, 1.0, 1.0, 1.0, 1.0]}, ValueError, "rest"),
    ("rest inf", {"rest": np.inf}, ValueError, "rest"),
    ("gravity nan", {"gravity": (0.0, np.nan, 0.0)}, ValueError, "gravity"),
    ("gravity inf", {"gravity": (np.inf, 0.0, 0.0)}, ValueError, "gravity"),
    # topology
    ("spring to node n", {"springs": np.vstack([SPRINGS, [[1, N_NODES]]]),
                          "k": 30.0, "c": 0.1, "rest": 0.9}, ValueError, "springs"),
    ("spring to node -1", {"springs": np.vstack([SPRINGS, [[-1, 2]]]),
                           "k": 30.0, "c": 0.1, "rest": 0.9}, ValueError, "springs"),
    ("spring index wrapping in int32", {"springs": np.array([[0, 2**32 + 1]], dtype=np.int64),
                                        "k": 30.0, "c": 0.1, "rest": 0.9}, ValueError, "springs"),
    ("spring from a node to itself", {"springs": np.vstack([SPRINGS, [[2, 2]]]),
                                      "k": 30.0, "c": 0.1, "rest": 0.9}, ValueError, "springs"),
    # signs
    ("zero mass on a free node", {"mass": [1.0, 0.0, 1.0, 1.0]}, ValueError, "mass"),
    ("negative mass on a free node", {"mass": [1.0, 1.0, -2.0, 1.0]}, ValueError, "mass"),
    ("negative mass everywhere", {"mass": -1.0}, ValueError, "mass"),
    ("negative mass on a pinned node", {"mass": [-1.0, 1.0, 1.0, 1.0]}, ValueError, "mass"),
    ("negative k", {"k": [30.0, -1.0, 30.0, 30.0, 30.0]}, ValueError, r"\bk\b"),
    ("negative c", {"c": -0.1}, ValueError, r"\bc\b"),
    ("negative rest", {"rest": [0.9, 0.9, 0.9, -0.9, 0.9]}, ValueError, "rest"),
    # pins
    ("pinned index n", {"pinned": [0, N_NODES]}, ValueError, "pinned"),
    ("pinned index far out", {"pinned": [N_NODES + 10]}, ValueError, "pinned"),
    ("pinned mask too short", {"pinned": np.array([True, False, False])}, ValueError, "pinned"),
    ("pinned mask too long", {"pinned": np.zeros(N_NODES + 1, dtype=bool)}, ValueError, "pinned"),
    # options
    ("negative drag", {"drag": -0.1}, ValueError, "drag"),
    ("nan drag", {"drag": np.nan}, ValueError, "drag"),
    ("negative energy_loss", {"energy_loss": -0.01}, ValueError, "energy_loss"),
    ("energy_loss of 1", {"energy_loss": 1.0}, ValueError, "energy_loss"),
    ("energy_loss above 1", {"energy_loss": 1.5}, ValueError, "energy_loss"),
    ("nan energy_loss", {"energy_loss": np.nan}, ValueError, "energy_loss"),
]


@pytest.mark.parametrize(
    ("overrides", "error", "pattern"),
    [case[1:] for case in BAD_CONSTRUCTION],
    ids=[case[0] for case in BAD_CONSTRUCTION],
)
def test_bad_constructor_argument_is_refused(
    overrides: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        build(**overrides)


def test_valid_arguments_build() -> None:
    """The baseline the bad cases deviate from is itself accepted."""
    s = build()
    assert s.n_nodes == N_NODES and s.n_springs == N_SPRINGS


@pytest.mark.parametrize("name", ["leapfrog", "", "RK4 ", "verlet"])
def test_unknown_integrator_name_in_constructor_lists_the_valid_names(name: str) -> None:
    with pytest.raises(ValueError, match="integrator") as caught:
        build(integrator=name)
    for valid in INTEGRATOR_NAMES:
        assert valid in str(caught.value)


def test_zero_mass_is_allowed_on_a_pinned_node() -> None:
    s = build(mass=[0.0, 1.0, 1.0, 1.0], pinned=[0])
    anchor = s.x[0].copy()
    s.step(DT, 50)
    np.testing.assert_array_equal(s.x[0], anchor)
    assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
    assert all(math.isfinite(value) for value in s.energy())
    # the same mass as a boolean mask
    mask = np.array([True, False, False, False])
    assert build(mass=[0.0, 1.0, 1.0, 1.0], pinned=mask).steps == 0


# ---- step arguments ------------------------------------------------------------------

BAD_STEP = [
    ("dt zero", (0.0,), ValueError, r"\bdt\b"),
    ("dt negative", (-1e-3,), ValueError, r"\bdt\b"),
    ("dt nan", (math.nan,), ValueError, r"\bdt\b"),
    ("dt inf", (math.inf,), ValueError, r"\bdt\b"),
    ("dt -inf", (-math.inf,), ValueError, r"\bdt\b"),
    ("dt string", ("0.001",), TypeError, r"\bdt\b"),
    ("dt None", (None,), TypeError, r"\bdt\b"),
    ("n zero", (DT, 0), ValueError, r"\bn\b"),
    ("n negative", (DT, -5), ValueError, r"\bn\b"),
    ("n float", (DT, 2.0), TypeError, r"\bn\b"),
    ("n fractional", (DT, 1.5), TypeError, r"\bn\b"),
    ("n string", (DT, "3"), TypeError, r"\bn\b"),
]


@pytest.mark.parametrize(
    ("arguments", "error", "pattern"),
    [case[1:] for case in BAD_STEP],
    ids=[case[0] for case in BAD_STEP],
)
def test_bad_step_argument_changes_nothing(
    arguments: tuple, error: type[Exception], pattern: str
) -> None:
    s = stepped_system()
    before = snapshot(s)
    with pytest.raises(error, match=pattern):
        s.step(*arguments)
    assert_unchanged(s, before)
    s.step(DT, 2)
    assert s.steps == before["steps"] + 2


# ---- setters ---------------------------------------------------------------------------

BAD_SETTER = [
    ("integrator", "leapfrog", ValueError),
    ("integrator", "Symplectic_Euler", ValueError),
    ("drag", -0.5, ValueError),
    ("drag", math.nan, ValueError),
    ("drag", math.inf, ValueError),
    ("energy_loss", -0.1, ValueError),
    ("energy_loss", 1.0, ValueError),
    ("energy_loss", math.nan, ValueError),
    ("gravity", (0.0, math.nan, 0.0), ValueError),
    ("gravity", (0.0, 0.0, -math.inf), ValueError),
    ("gravity", (0.0, -9.81), ValueError),
    ("gravity", np.zeros((3, 1)), ValueError),
    ("newton_max_iter", 0, ValueError),
    ("newton_max_iter", -2, ValueError),
    ("newton_max_iter", 2**40, ValueError),
    ("newton_max_iter", 3.0, TypeError),
    ("newton_max_iter", "3", TypeError),
    ("cg_max_iter", 0, ValueError),
    ("cg_max_iter", 2.5, TypeError),
    ("newton_tol", 0.0, ValueError),
    ("newton_tol", -1e-8, ValueError),
    ("newton_tol", math.nan, ValueError),
    ("newton_tol", "1e-8", TypeError),
    ("cg_tol", 0.0, ValueError),
    ("cg_tol", -1.0, ValueError),
    ("cg_tol", math.nan, ValueError),
    ("cg_tol", 1j, TypeError),
    ("strain_limit", -0.1, ValueError),
    ("strain_limit", math.nan, ValueError),
    ("strain_limit", "0.1", TypeError),
]


@pytest.mark.parametrize(("name", "value", "error"), BAD_SETTER)
def test_bad_setter_value_changes_nothing(name: str, value: object, error: type[Exception]) -> None:
    s = stepped_system()
    before = snapshot(s)
    with pytest.raises(error, match=name):
        setattr(s, name, value)
    assert_unchanged(s, before)


def test_unknown_integrator_setter_lists_the_valid_names() -> None:
    s = stepped_system()
    s.integrator = "rk4"
    with pytest.raises(ValueError) as caught:
        s.integrator = "midpoint"
    for valid in INTEGRATOR_NAMES:
        assert valid in str(caught.value)
    assert s.integrator == "rk4"


def test_limits_of_the_option_ranges_are_accepted() -> None:
    s = stepped_system()
    s.drag = 0.0
    s.energy_loss = 0.0
    s.energy_loss = 0.999
    assert s.energy_loss == 0.999 and s.drag == 0.0
    s.newton_max_iter = 1
    s.cg_max_iter = 1
    s.newton_tol = 1e-300
    s.cg_tol = 1e-300
    s.strain_limit = 0.0
    assert (s.newton_max_iter, s.cg_max_iter, s.newton_tol, s.cg_tol) == (1, 1, 1e-300, 1e-300)
    assert s.strain_limit == 0.0
    s.strain_limit = None
    assert s.strain_limit is None


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
def test_bad_step_is_refused_by_every_integrator(integrator: str) -> None:
    s = stepped_system()
    s.integrator = integrator
    before = snapshot(s)
    for arguments in ((0.0,), (math.nan,), (DT, 0)):
        with pytest.raises(ValueError):
            s.step(*arguments)
        assert_unchanged(s, before)
    s.k[0] = -1.0
    with pytest.raises(ValueError, match=r"\bk\b"):
        s.step(DT)
    s.k[0] = 30.0
    assert_unchanged(s, before)


# ---- values corrupted through the views --------------------------------------------------


def _set(view: str, index: tuple, value: float) -> Callable[[msprings.System], None]:
    """A function writing ``value`` at ``index`` of ``getattr(s, view)``."""

    def write(s: msprings.System) -> None:
        getattr(s, view)[index] = value

    return write


CORRUPTIONS = [
    ("k negative", _set("k", (0,), -1.0), _set("k", (0,), 30.0), r"\bk\b"),
    ("k nan", _set("k", (4,), math.nan), _set("k", (4,), 30.0), r"\bk\b"),
    ("c negative", _set("c", (2,), -0.5), _set("c", (2,), 0.1), r"\bc\b"),
    ("rest nan", _set("rest", (0,), math.nan), _set("rest", (0,), 0.9), "rest"),
    ("rest negative", _set("rest", (3,), -1.0), _set("rest", (3,), 0.9), "rest"),
    ("mass zero on a free node", _set("mass", (1,), 0.0), _set("mass", (1,), 0.5), "mass"),
    ("mass negative on a free node", _set("mass", (2,), -3.0), _set("mass", (2,), 0.7), "mass"),
    ("mass inf", _set("mass", (3,), math.inf), _set("mass", (3,), 0.9), "mass"),
    ("x nan", _set("x", (0, 0), math.nan), _set("x", (0, 0), 0.0), r"\bx\b|position"),
    ("x inf on a free node", _set("x", (2, 1), -math.inf), _set("x", (2, 1), 1.0),
     r"\bx\b|position"),
    ("v inf", _set("v", (1, 2), math.inf), _set("v", (1, 2), 0.0), r"\bv\b|velocit"),
    ("v nan on a pinned node", _set("v", (0, 1), math.nan), _set("v", (0, 1), 0.0),
     r"\bv\b|velocit"),
    ("external nan", _set("external", (3, 0), math.nan), _set("external", (3, 0), 0.0),
     "external"),
]


@pytest.mark.parametrize(
    ("corrupt", "repair", "pattern"),
    [case[1:] for case in CORRUPTIONS],
    ids=[case[0] for case in CORRUPTIONS],
)
def test_value_corrupted_through_a_view_is_refused_at_the_next_step(
    corrupt: Callable[[msprings.System], None],
    repair: Callable[[msprings.System], None],
    pattern: str,
) -> None:
    s = stepped_system()
    corrupt(s)
    before = snapshot(s)
    for n in (1, 10):
        with pytest.raises(ValueError, match=pattern):
            s.step(DT, n)
        assert_unchanged(s, before)
    repair(s)
    s.step(DT, 3)
    assert s.steps == before["steps"] + 3
    assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
    assert math.isclose(s.t, float.fromhex(before["t"]) + 3 * DT, rel_tol=1e-12)


def test_unpinning_a_massless_node_is_refused_at_the_next_step() -> None:
    s = build(mass=[0.0, 1.0, 1.0, 1.0], pinned=[0])
    s.step(DT, 5)
    s.pinned[0] = False
    before = snapshot(s)
    with pytest.raises(ValueError, match="mass"):
        s.step(DT)
    assert_unchanged(s, before)
    s.mass[0] = 2.0
    s.step(DT)
    assert s.steps == 6


def test_refused_step_leaves_energy_and_diagnostics_as_they_were() -> None:
    s = stepped_system()
    energy = s.energy()
    lengths = s.lengths()
    s.k[1] = -5.0
    with pytest.raises(ValueError):
        s.step(DT, 100)
    s.k[1] = 30.0
    assert s.energy() == energy
    np.testing.assert_array_equal(s.lengths(), lengths)


def test_collider_sizes_and_a_bool_step_name_their_argument() -> None:
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]])
    before = (s.x.copy(), s.t, len(s.colliders))
    with pytest.raises(ValueError, match="radius = nan must be a finite length"):
        s.add_sphere((0, 0, 0), np.nan)
    with pytest.raises(ValueError, match="height = -1.0 must be a finite length"):
        s.add_cylinder((0, 0, 0), 1.0, -1.0)
    with pytest.raises(ValueError, match="lower = .* must be below upper"):
        s.add_box((1, 1, 1), (0, 0, 0))
    with pytest.raises(ValueError, match="upper = .* must be finite"):
        s.add_box((0, 0, 0), (1, np.inf, 1))
    with pytest.raises(TypeError, match="dt must be a number of seconds, not bool"):
        s.step(True)
    assert np.array_equal(s.x, before[0]) and s.t == before[1] and len(s.colliders) == before[2]


# ---- scene builders -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mass", "k"])
def test_pyramid_refuses_a_negative_mass_or_stiffness_by_name(name: str) -> None:
    from msprings import scenes

    with pytest.raises(ValueError, match=f"{name} = -1.0 must be finite and >= 0"):
        scenes.pyramid(**{name: -1.0})
    with pytest.raises(ValueError, match="elevation = nan must be finite"):
        scenes.pyramid(elevation=np.nan)


@pytest.mark.parametrize("name", ["mass", "k"])
def test_sphere_balloon_and_jelly_refuse_a_negative_mass_or_stiffness_by_name(name: str) -> None:
    from msprings import scenes

    for builder in (scenes.spring_sphere, scenes.balloon):
        with pytest.raises(ValueError, match=f"{name} = -2.0 must be finite and >= 0"):
            builder(0, **{name: -2.0})
    with pytest.raises(ValueError, match=f"{name} = -2.0 must be finite and >= 0"):
        scenes.jelly_cube(2, **{name: -2.0})


@pytest.mark.parametrize("rows, columns, name", [(-1, 3, "rows"), (0, 3, "rows"), (3, -4, "columns"), (3, 0, "columns")])
def test_grid_springs_refuses_counts_below_one(rows: int, columns: int, name: str) -> None:
    from msprings import scenes

    with pytest.raises(ValueError, match=f"{name} = -?[0-9]+ must be >= 1"):
        scenes.grid_springs(rows, columns)
    with pytest.raises(TypeError, match="rows must be an integer"):
        scenes.grid_springs(2.5, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [-2, 0])
def test_lattice_springs_refuses_a_side_below_one(n: int) -> None:
    from msprings import scenes

    with pytest.raises(ValueError, match=f"n = {n} must be >= 1"):
        scenes.lattice_springs(n)
    # the smallest valid lattice: one node and no springs
    assert all(len(pairs) == 0 for pairs in scenes.lattice_springs(1).values())


# ---- mesh helpers ---------------------------------------------------------------------


def _octahedron() -> tuple[np.ndarray, np.ndarray]:
    vertices = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    faces = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    return vertices, faces


VERTEX_FACE_HELPERS = ("face_normals", "vertex_normals", "enclosed_volume", "element_sizes")


@pytest.mark.parametrize("helper", VERTEX_FACE_HELPERS)
def test_mesh_helpers_check_vertices_and_faces_by_name(helper: str) -> None:
    from msprings import mesh

    function = getattr(mesh, helper)
    vertices, faces = _octahedron()
    with pytest.raises(ValueError, match=r"vertices must have shape \(n, 3\), got \(6, 2\)"):
        function(vertices[:, :2], faces)
    bad = vertices.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"vertices\[3\] is not finite"):
        function(bad, faces)
    with pytest.raises(ValueError, match=r"faces\[2\] = \(1, 3, 6\) refers to a vertex outside 0..5"):
        function(vertices, np.vstack([faces[:2], [[1, 3, 6]]]))
    with pytest.raises(ValueError, match=r"faces must have shape \(rows, 3\)"):
        function(vertices, faces[:, :2])
    with pytest.raises(TypeError, match="faces must contain integer vertex indices"):
        function(vertices, faces.astype(float))
    assert mesh.enclosed_volume(vertices, faces) == pytest.approx(4.0 / 3.0)


@pytest.mark.parametrize("helper", ["unique_edges", "interior_edge_opposites"])
def test_topology_helpers_check_faces_by_name(helper: str) -> None:
    from msprings import mesh

    function = getattr(mesh, helper)
    _, faces = _octahedron()
    with pytest.raises(ValueError, match=r"faces\[1\] = \(2, -1, 4\) holds a negative vertex index"):
        function(np.vstack([faces[:1], [[2, -1, 4]]]))
    with pytest.raises(ValueError, match=r"faces must have shape \(rows, 3\)"):
        function(faces.ravel()[:10])
    assert len(mesh.unique_edges(faces)) == 12


def _tetrahedron() -> tuple[np.ndarray, np.ndarray]:
    return np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float), np.array([[0, 1, 2, 3]])


def test_tetrahedron_helpers_check_nodes_and_tets_by_name() -> None:
    from msprings import mesh

    nodes, tets = _tetrahedron()
    for call in (lambda x, t: mesh.tetrahedron_volumes(x, t), lambda x, t: mesh.tetrahedron_stiffness(x, t, 1e5)):
        with pytest.raises(ValueError, match=r"nodes must have shape \(n, 3\)"):
            call(nodes.ravel(), tets)
        with pytest.raises(ValueError, match=r"tets\[0\] = \(0, 1, 2, 4\) refers to a node outside 0..3"):
            call(nodes, [[0, 1, 2, 4]])
        with pytest.raises(ValueError, match=r"tets must have shape \(rows, 4\)"):
            call(nodes, [[0, 1, 2]])
    with pytest.raises(ValueError, match=r"tets\[0\] = \(0, -1, 2, 3\) holds a negative node index"):
        mesh.boundary_faces([[0, -1, 2, 3]])
    assert mesh.tetrahedron_volumes(nodes, tets)[0] == pytest.approx(1.0 / 6.0)
    assert len(mesh.boundary_faces(tets)) == 4


def test_material_helpers_refuse_negative_values_by_name() -> None:
    from msprings import mesh

    vertices, faces = _octahedron()
    edges = mesh.unique_edges(faces)
    with pytest.raises(ValueError, match="total = -1.0 must be finite and >= 0"):
        mesh.lumped_masses(vertices, faces, -1.0)
    with pytest.raises(ValueError, match="total = nan must be finite and >= 0"):
        mesh.lumped_masses(vertices, faces, np.nan)
    with pytest.raises(ValueError, match="modulus = -1.0 must be finite and >= 0"):
        mesh.spring_stiffness(vertices, faces, edges, -1)
    with pytest.raises(ValueError, match=r"edges lacks the edge \(2, 1\) of faces\[1\]"):
        mesh.spring_stiffness(vertices, faces, [[0, 2]], 1.0)
    with pytest.raises(ValueError, match=r"edges\[0\] = \(0, 6\) refers to a node outside 0..5"):
        mesh.spring_stiffness(vertices, faces, [[0, 6]], 1.0)
    with pytest.raises(ValueError, match="thickness = 0.0 must be finite and > 0"):
        mesh.spring_stiffness(vertices, faces, edges, 1.0, thickness=0.0)
    nodes, tets = _tetrahedron()
    with pytest.raises(ValueError, match="youngs_modulus = -1.0 must be finite and >= 0"):
        mesh.tetrahedron_stiffness(nodes, tets, -1.0)
    with pytest.raises(ValueError, match="factor = 0.0 must be finite and > 0"):
        mesh.tetrahedron_stiffness(nodes, tets, 1.0, 0.0)
    # the valid calls still give the closed forms: equal masses summing to the total, and
    # k = E t A / L^2 with A the two adjacent triangles' area (sqrt(3)/2 each) and L^2 = 2: sqrt(3) at E = 2
    np.testing.assert_allclose(mesh.lumped_masses(vertices, faces, 6.0), np.ones(6))
    np.testing.assert_allclose(mesh.spring_stiffness(vertices, faces, edges, 2.0), np.full(12, math.sqrt(3)))


# ---- colliders ------------------------------------------------------------------------


@pytest.mark.parametrize("make", ["system", "ensemble"])
def test_collider_vectors_are_named_as_the_method_names_them(make: str) -> None:
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]])
    target: Any = s if make == "system" else msprings.Ensemble([s, s.copy()])
    before = s.x.copy()
    with pytest.raises(ValueError, match=r"point must have shape \(3,\), got \(2,\)"):
        target.add_plane((1.0, 2.0))
    with pytest.raises(ValueError, match=r"normal must have shape \(3,\), got \(2,\)"):
        target.add_plane((0, 0, 0), (1.0, 2.0))
    with pytest.raises(ValueError, match=r"point = \(nan, 0.0, 0.0\) must be finite"):
        target.add_plane((np.nan, 0.0, 0.0))
    with pytest.raises(ValueError, match="the normal must be a non-zero vector"):
        target.add_plane((0, 0, 0), (0, 0, 0))
    with pytest.raises(ValueError, match=r"velocity must have shape \(3,\)"):
        target.add_plane(velocity=(1.0,))
    with pytest.raises(ValueError, match=r"center must have shape \(3,\)"):
        target.add_sphere((1.0, 2.0), 1.0)
    with pytest.raises(ValueError, match=r"axis must have shape \(3,\)"):
        target.add_cylinder((0, 0, 0), 1.0, 1.0, (0.0, 1.0))
    with pytest.raises(ValueError, match=r"center = \(0.0, inf, 0.0\) must be finite"):
        target.add_cylinder((0, np.inf, 0), 1.0, 1.0)
    assert len(s.colliders) == 0 and np.array_equal(s.x, before)
