"""Ready-made scenes (:mod:`msprings.scenes`): topology, defaults and physics.

Topology: spring counts follow the closed forms of each family (grid and lattice), the
families partition the springs and carry their own stiffness and damping, and every spring
of a family has the family's rest length.  Every builder starts at rest (no force with
gravity off).  Physics: a jelly cube with shear springs keeps its volume after a hard poke
while one without them collapses; a jelly dropped on the ground comes to rest on it; a
tablecloth drapes over its table; a flag streams and flaps in the wind and hangs down when it
stops; a hanging cloth without shear springs shears; a spring sphere keeps its shape on the
ground; a balloon floats and pulls its string taut.  Resolutions are small where the
property does not depend on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import msprings
from msprings import scenes

FAMILIES = ("structural", "shear", "bend")
NO_GRAVITY = (0.0, 0.0, 0.0)


# ---- helpers --------------------------------------------------------------------------


def enclosed_volume(x: np.ndarray, faces: np.ndarray) -> float:
    """Volume (m^3) enclosed by the closed triangle surface ``faces`` over positions ``x``,
    by the divergence theorem: the sum over triangles (a, b, c) of a . (b x c) / 6 (positive
    when the triangles face outwards)."""
    a, b, c = x[faces[:, 0]], x[faces[:, 1]], x[faces[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


def spring_lengths(s: msprings.System, indices: np.ndarray) -> np.ndarray:
    """Current lengths (m) of the springs ``indices`` of ``s``, from its positions."""
    pairs = s.springs[indices]
    return np.linalg.norm(s.x[pairs[:, 1]] - s.x[pairs[:, 0]], axis=1)


def stable_dt(s: msprings.System, fraction: float = 0.5) -> float:
    """A time step (s) of ``fraction`` of the system's critical step for its integrator."""
    return fraction * s.critical_dt()


def run_for(s: msprings.System, dt: float, seconds: float) -> None:
    """Steps ``s`` for ``seconds`` (rounded to whole steps of ``dt``)."""
    s.step(dt, max(1, int(round(seconds / dt))))


def grid_counts(rows: int, columns: int) -> dict[str, int]:
    """Closed-form spring counts of a rows x columns grid, per family."""
    return {
        "structural": rows * (columns - 1) + columns * (rows - 1),
        "shear": 2 * (rows - 1) * (columns - 1),
        "bend": rows * (columns - 2) + columns * (rows - 2),
    }


def lattice_counts(n: int) -> dict[str, int]:
    """Closed-form spring counts of an n x n x n lattice, per family."""
    return {
        "structural": 3 * n * n * (n - 1),
        "shear": 6 * n * (n - 1) ** 2 + 4 * (n - 1) ** 3,
        "bend": 3 * n * n * (n - 2),
    }


def assert_partition(s: msprings.System) -> None:
    """``s.families`` index sets are disjoint and together cover every spring exactly once."""
    assert s.families, "the scene names no spring families"
    everything = np.concatenate([np.asarray(indices) for indices in s.families.values()])
    assert np.array_equal(np.sort(everything), np.arange(s.n_springs))


def assert_no_duplicate_springs(s: msprings.System) -> None:
    """No spring joins a node to itself and no two springs join the same two nodes."""
    pairs = np.sort(np.asarray(s.springs), axis=1)
    assert np.all(pairs[:, 0] != pairs[:, 1])
    assert len(np.unique(pairs, axis=0)) == len(pairs)


# ---- spring counts and families -------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 40])
def test_square_cloth_spring_counts(n: int) -> None:
    s = scenes.cloth(n)
    assert s.n_nodes == n * n
    assert s.n_springs == 2 * n * (n - 1) + 2 * (n - 1) ** 2 + 2 * n * (n - 2)
    expected = {"structural": 2 * n * (n - 1), "shear": 2 * (n - 1) ** 2, "bend": 2 * n * (n - 2)}
    assert {name: len(indices) for name, indices in s.families.items()} == expected
    assert_partition(s)
    assert_no_duplicate_springs(s)


@pytest.mark.parametrize(("rows", "columns"), [(3, 7), (6, 4), (2, 5)])
def test_rectangular_cloth_spring_counts_and_layout(rows: int, columns: int) -> None:
    size = 3.0
    s = scenes.cloth(rows, columns, size=size)
    h = size / rows
    assert s.n_nodes == rows * columns
    assert {name: len(indices) for name, indices in s.families.items()} == grid_counts(rows, columns)
    assert s.n_springs == sum(grid_counts(rows, columns).values())
    assert_partition(s)
    # Node (i, j) = i * columns + j lies at (j h, 0, i h).
    i, j = np.divmod(np.arange(rows * columns), columns)
    np.testing.assert_allclose(s.x, np.column_stack([j * h, np.zeros(rows * columns), i * h]), atol=1e-12)
    assert s.n_faces == 2 * (rows - 1) * (columns - 1)
    assert s.uv is not None and s.uv.shape == (rows * columns, 2)


@pytest.mark.parametrize(("rows", "columns"), [(4, 4), (3, 6), (7, 2)])
def test_grid_springs_counts_and_lengths(rows: int, columns: int) -> None:
    pairs = scenes.grid_springs(rows, columns)
    assert list(pairs) == list(FAMILIES)
    assert {name: len(p) for name, p in pairs.items()} == grid_counts(rows, columns)
    i, j = np.divmod(np.arange(rows * columns), columns)
    grid = np.column_stack([i, j])
    for name, offset in (("structural", 1.0), ("shear", math.sqrt(2.0)), ("bend", 2.0)):
        if len(pairs[name]):
            steps = np.linalg.norm(grid[pairs[name][:, 1]] - grid[pairs[name][:, 0]], axis=1)
            np.testing.assert_allclose(steps, offset)


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_jelly_spring_counts(n: int) -> None:
    s = scenes.jelly_cube(n, ground=False)
    counts = lattice_counts(n)
    assert s.n_nodes == n**3
    assert {name: len(indices) for name, indices in s.families.items()} == counts
    assert s.n_springs == sum(counts.values())
    assert_partition(s)
    assert_no_duplicate_springs(s)
    assert {name: len(p) for name, p in scenes.lattice_springs(n).items()} == counts


def test_jelly_family_rest_lengths() -> None:
    """structural springs join axis neighbours (h), shear springs face diagonals (h sqrt 2,
    6 n (n-1)^2 of them) and body diagonals (h sqrt 3, 4 (n-1)^3), bend springs nodes two
    apart (2 h)."""
    n, size = 4, 1.5
    s = scenes.jelly_cube(n, size=size, ground=False)
    h = size / (n - 1)
    np.testing.assert_allclose(s.rest[s.families["structural"]], h, rtol=1e-12)
    np.testing.assert_allclose(s.rest[s.families["bend"]], 2 * h, rtol=1e-12)
    shear = s.rest[s.families["shear"]]
    face = np.isclose(shear, h * math.sqrt(2.0), rtol=1e-12)
    body = np.isclose(shear, h * math.sqrt(3.0), rtol=1e-12)
    assert np.all(face | body)
    assert face.sum() == 6 * n * (n - 1) ** 2
    assert body.sum() == 4 * (n - 1) ** 3
    # rest lengths are the initial lengths
    np.testing.assert_allclose(s.rest, spring_lengths(s, np.arange(s.n_springs)), rtol=1e-12)


def test_jelly_faces_enclose_the_cube_outwards() -> None:
    n, size = 5, 0.8
    s = scenes.jelly_cube(n, size=size, ground=False)
    assert s.n_faces == 6 * 2 * (n - 1) ** 2
    assert enclosed_volume(s.x, s.faces) == pytest.approx(size**3, rel=1e-12)
    # surface nodes only
    surface = np.unique(s.faces)
    assert len(surface) == n**3 - (n - 2) ** 3


@pytest.mark.parametrize("n", [2, 5, 11])
def test_chain_counts_and_layout(n: int) -> None:
    spacing = 0.3
    direction = np.array([1.0, -2.0, 2.0])
    s = scenes.chain(n, spacing, direction=direction)
    assert s.n_nodes == n and s.n_springs == n - 1
    assert np.array_equal(np.asarray(s.springs), np.column_stack([np.arange(n - 1), np.arange(1, n)]))
    np.testing.assert_allclose(s.x, np.arange(n)[:, None] * spacing * direction / 3.0, atol=1e-12)
    np.testing.assert_allclose(s.rest, spacing, rtol=1e-12)
    assert_partition(s)


def test_cloth_family_rest_lengths() -> None:
    n, size = 6, 3.0
    s = scenes.cloth(n, size=size)
    h = size / n
    np.testing.assert_allclose(s.rest[s.families["structural"]], h, rtol=1e-12)
    np.testing.assert_allclose(s.rest[s.families["shear"]], h * math.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(s.rest[s.families["bend"]], 2 * h, rtol=1e-12)


@pytest.mark.parametrize(
    "build",
    [
        lambda families: scenes.cloth(5, families=families),
        lambda families: scenes.flag(4, 6, families=families),
        lambda families: scenes.tablecloth(5, families=families),
        lambda families: scenes.jelly_cube(4, families=families, ground=False),
    ],
    ids=["cloth", "flag", "tablecloth", "jelly"],
)
@pytest.mark.parametrize("chosen", [("structural",), ("structural", "bend"), ("shear",), ()])
def test_families_are_selectable(build: Callable[[tuple[str, ...]], msprings.System],
                                 chosen: tuple[str, ...]) -> None:
    full = build(FAMILIES)
    s = build(chosen)
    assert set(s.families) == set(chosen)
    for name in chosen:
        assert len(s.families[name]) == len(full.families[name])
        np.testing.assert_allclose(np.sort(s.rest[s.families[name]]), np.sort(full.rest[full.families[name]]))
    assert s.n_springs == sum(len(full.families[name]) for name in chosen)
    if chosen:
        assert_partition(s)


@pytest.mark.parametrize(
    "build",
    [
        lambda k, c: scenes.cloth(5, k=k, c=c),
        lambda k, c: scenes.flag(4, 5, k=k, c=c),
        lambda k, c: scenes.tablecloth(5, k=k, c=c),
        lambda k, c: scenes.jelly_cube(4, k=k, c=c, ground=False),
    ],
    ids=["cloth", "flag", "tablecloth", "jelly"],
)
def test_per_family_stiffness_and_damping(build: Callable[[object, object], msprings.System]) -> None:
    k = {"structural": 1000.0, "shear": 200.0, "bend": 30.0}
    c = {"structural": 4.0, "shear": 0.5, "bend": 0.06}
    s = build(k, c)
    h = s.rest[s.families["structural"][0]]
    expected_rest = {"structural": 1.0, "shear": math.sqrt(2.0), "bend": 2.0}
    for name in FAMILIES:
        indices = s.families[name]
        assert np.all(s.k[indices] == k[name])
        assert np.all(s.c[indices] == c[name])
        if name != "shear":  # a lattice's shear family also holds body diagonals
            np.testing.assert_allclose(s.rest[indices], expected_rest[name] * h, rtol=1e-12)
    # a single number applies to every family
    uniform = build(123.0, 0.25)
    assert np.all(uniform.k == 123.0) and np.all(uniform.c == 0.25)


def test_jelly_default_damping_follows_per_family_stiffness() -> None:
    k = {"structural": 150.0, "shear": 60.0, "bend": 10.0}
    mass = 0.3
    s = scenes.jelly_cube(3, k=k, mass=mass, ground=False)
    for name in FAMILIES:
        np.testing.assert_allclose(s.c[s.families[name]], 0.9 * 2.0 * math.sqrt(mass * k[name]), rtol=1e-12)


def test_families_switch_springs_off_through_views() -> None:
    s = scenes.cloth(4)
    s.k[s.families["shear"]] = 0.0
    assert np.all(s.k[s.families["shear"]] == 0.0)
    assert np.all(s.k[s.families["structural"]] == 2500.0)
    assert np.all(s.k[s.families["bend"]] == 2500.0)


def test_every_builder_partitions_its_springs() -> None:
    builders = [
        scenes.single_spring(), scenes.chain(), scenes.cloth(4), scenes.flag(3, 4), scenes.tablecloth(4),
        scenes.jelly_cube(3), scenes.pyramid(),
    ]
    for s in builders:
        assert_partition(s)


def test_spring_sphere_partitions_its_springs() -> None:
    """The module promises ``s.families`` for its scenes; a sphere has structural (edge) and
    stabilising springs."""
    s = scenes.spring_sphere(1)
    assert_partition(s)


def test_balloon_partitions_its_springs() -> None:
    s = scenes.balloon(1)
    assert set(s.families) == {"structural", "stabilise", "string"}
    assert_partition(s)
    # the string's nodes below the sphere's lowest vertex, which is its last node: 9 springs
    assert len(s.families["string"]) == 9


# ---- every scene starts at rest -------------------------------------------------------


def _flag_still() -> msprings.System:
    s = scenes.flag(5, 7, gravity=NO_GRAVITY)
    s.gust = 0.0
    s.wind = (0.0, 0.0, 0.0)
    return s


REST_SCENES: dict[str, Callable[[], msprings.System]] = {
    "single_spring": lambda: scenes.single_spring(gravity=NO_GRAVITY),
    "chain": lambda: scenes.chain(gravity=NO_GRAVITY),
    "chain_both": lambda: scenes.chain(7, anchor="both", gravity=NO_GRAVITY),
    "cloth": lambda: scenes.cloth(gravity=NO_GRAVITY),
    "cloth_rectangular": lambda: scenes.cloth(5, 9, gravity=NO_GRAVITY),
    "flag": _flag_still,
    "tablecloth": lambda: scenes.tablecloth(12, gravity=NO_GRAVITY),
    "folding_cloth": lambda: scenes.folding_cloth(8, gravity=NO_GRAVITY),
    "jelly_cube": lambda: scenes.jelly_cube(5, gravity=NO_GRAVITY),
    "pyramid": lambda: scenes.pyramid(gravity=NO_GRAVITY),
    "spring_sphere": lambda: scenes.spring_sphere(2, gravity=NO_GRAVITY),
    "spring_sphere_opposite": lambda: scenes.spring_sphere(1, stabilise="opposite", bend_k=50.0,
                                                           gravity=NO_GRAVITY),
}


@pytest.mark.parametrize("name", list(REST_SCENES))
def test_scene_starts_at_rest(name: str) -> None:
    s = REST_SCENES[name]()
    assert np.all(s.v == 0.0)
    np.testing.assert_allclose(s.rest, s.lengths(), rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(s.tension(), 0.0, atol=1e-9)
    f = s.update_forces()
    np.testing.assert_allclose(f, 0.0, atol=1e-9)
    # and it stays put: one step later nothing has moved
    x0 = s.x.copy()
    s.step(1e-4)
    np.testing.assert_allclose(s.x, x0, atol=1e-12)


def test_balloon_starts_with_unstressed_springs() -> None:
    """The balloon's only initial force is its intentional buoyancy on the sphere nodes."""
    s = scenes.balloon(1, gravity=NO_GRAVITY)
    assert np.all(s.v == 0.0)
    np.testing.assert_allclose(s.tension(), 0.0, atol=1e-9)
    f = s.update_forces()
    np.testing.assert_allclose(f - s.external, 0.0, atol=1e-9)


def test_scenes_fall_under_gravity_at_g() -> None:
    """With gravity on, the force at rest on every free node is its weight."""
    for s in (scenes.chain(5), scenes.cloth(4), scenes.jelly_cube(3)):
        f = s.update_forces().copy()
        free = ~s.pinned
        np.testing.assert_allclose(f[free], s.mass[free, None] * np.array([0.0, -9.81, 0.0]), atol=1e-9)


# ---- the references' defaults ---------------------------------------------------------


def test_single_spring_defaults() -> None:
    s = scenes.single_spring()
    assert s.n_nodes == 2 and s.n_springs == 1
    assert list(np.flatnonzero(s.pinned)) == [0]
    np.testing.assert_allclose(s.x, [[0, 0, 0], [1, 0, 0]])
    assert s.mass[1] == 1.0 and s.k[0] == 20.0 and s.c[0] == 0.3 and s.rest[0] == 1.0
    np.testing.assert_allclose(s.gravity, [0.0, -9.81, 0.0])
    stretched = scenes.single_spring(2.0, stretch=0.5)
    assert stretched.rest[0] == 2.0 and stretched.lengths()[0] == pytest.approx(2.5)


def test_chain_defaults() -> None:
    s = scenes.chain()
    assert s.n_nodes == 11 and s.n_springs == 10
    assert np.all(s.mass == 1.0) and np.all(s.k == 5000.0) and np.all(s.c == 5.0)
    np.testing.assert_allclose(s.rest, 1.0)
    assert list(np.flatnonzero(s.pinned)) == [0]
    # A physical chain: at rest it hangs with its top spring stretched by the weight of the
    # ten nodes below, 98.1 N / 5000 N/m = 2 %, and the bottom one by 0.2 %.
    s.integrator = "implicit_euler"
    for _ in range(200):
        s.step(10.0)
    strain = s.strain()
    assert strain[0] == pytest.approx(10 * 9.81 / 5000.0, rel=1e-6)
    assert strain[-1] == pytest.approx(9.81 / 5000.0, rel=1e-6)
    # The references' soft chain stretches its top spring almost fivefold.
    soft = scenes.chain(k=20.0, c=0.3)
    assert soft.mass[1] * 10 * 9.81 / soft.k[0] == pytest.approx(4.905)


@pytest.mark.parametrize(
    ("anchor", "pinned"),
    [("start", [0]), ("end", [8]), ("both", [0, 8]), ("middle", [4]), (None, [])],
)
def test_chain_anchors(anchor: str | None, pinned: list[int]) -> None:
    s = scenes.chain(9, anchor=anchor)
    assert list(np.flatnonzero(s.pinned)) == pinned


def test_chain_pinned_overrides_anchor() -> None:
    s = scenes.chain(6, anchor="both", pinned=[2, 3])
    assert list(np.flatnonzero(s.pinned)) == [2, 3]


def test_cloth_defaults() -> None:
    s = scenes.cloth()
    assert s.n_nodes == 1600
    assert np.all(s.mass == 1.0) and np.all(s.k == 2500.0) and np.all(s.c == 1.0)
    np.testing.assert_allclose(s.rest[s.families["structural"]], 25.0 / 40.0, rtol=1e-12)
    np.testing.assert_allclose(s.x[:, 1], 0.0)
    assert list(np.flatnonzero(s.pinned)) == [0, 39]
    # the pins are the two corners of the first row
    np.testing.assert_allclose(s.x[[0, 39]], [[0.0, 0.0, 0.0], [39 * 0.625, 0.0, 0.0]], atol=1e-12)


@pytest.mark.parametrize(
    ("pin", "expected"),
    [("corners", [0, 6]), ("top", list(range(7))), ([3, 10, 34], [3, 10, 34]), (None, [])],
)
def test_cloth_pins(pin: object, expected: list[int]) -> None:
    s = scenes.cloth(5, 7, pin=pin)
    assert list(np.flatnonzero(s.pinned)) == expected


def test_cloth_pinned_overrides_pin() -> None:
    s = scenes.cloth(4, pin="top", pinned=[5])
    assert list(np.flatnonzero(s.pinned)) == [5]


def test_tablecloth_defaults() -> None:
    s = scenes.tablecloth(8)
    assert np.all(s.mass == 3.0) and np.all(s.k == 3000.0) and np.all(s.c == 8.0)
    assert not s.pinned.any()
    half_width = (s.x[:, 0].max() - s.x[:, 0].min()) / 2.0
    assert half_width == pytest.approx(12.5)
    table = s.colliders[0]
    assert table.kind == "cylinder"
    assert table.radius == pytest.approx(0.7 * half_width)
    np.testing.assert_allclose(table.axis, [0.0, 1.0, 0.0])
    top = table.center[1] + table.height / 2.0
    # the cloth starts flat, centred above the table and clear of it
    assert np.ptp(s.x[:, 1]) == 0.0 and s.x[0, 1] > top
    np.testing.assert_allclose(s.x[:, [0, 2]].mean(axis=0), table.center[[0, 2]], atol=1e-12)
    assert np.all(table.distance(s.x) > 0.0)
    assert any(c.kind == "plane" for c in s.colliders)


def test_flag_defaults() -> None:
    s = scenes.flag()
    assert np.all(s.k == 2500.0) and np.all(s.c == 0.7)
    rows, columns = 20, 30
    assert s.n_nodes == rows * columns
    # pinned along its left edge (the pole at x = 0), lying in the vertical x-y plane
    pinned = np.flatnonzero(s.pinned)
    assert list(pinned) == list(range(0, rows * columns, columns))
    np.testing.assert_allclose(s.x[pinned, 0], 0.0)
    np.testing.assert_allclose(s.x[:, 2], 0.0)
    assert np.ptp(s.x[:, 0]) == pytest.approx(3.0)
    assert s.drag_coefficient > 0.0
    assert np.asarray(s.wind)[0] > 0.0 and s.gust > 0.0


def test_jelly_defaults() -> None:
    s = scenes.jelly_cube()
    assert s.n_nodes == 1000
    assert np.all(s.mass == 0.5) and np.all(s.k == 150.0)
    np.testing.assert_allclose(s.c, 0.9 * 2.0 * math.sqrt(0.5 * 150.0), rtol=1e-12)
    assert np.ptp(s.x, axis=0) == pytest.approx([1.0, 1.0, 1.0])
    ground = s.colliders[0]
    assert ground.kind == "plane"
    assert np.all(ground.distance(s.x) > 0.0)
    assert not scenes.jelly_cube(3, ground=False).colliders


# ---- jelly: shear springs keep the volume ---------------------------------------------


def poke_jelly(s: msprings.System, n: int, speed: float, seconds: float = 4.0) -> list[float]:
    """Gives the jelly's last corner a velocity ``speed`` (m/s) along the body diagonal into
    the cube, steps it with gravity off for ``seconds`` and returns the enclosed volume (as a
    fraction of the initial volume) every 0.1 s."""
    volume = enclosed_volume(s.x, s.faces)
    s.v[n**3 - 1] = -speed / math.sqrt(3.0)
    dt = 2e-3
    ratios = []
    for _ in range(int(round(seconds / 0.1))):
        s.step(dt, 50)
        ratios.append(enclosed_volume(s.x, s.faces) / volume)
    return ratios


def test_jelly_with_shear_springs_keeps_its_volume_after_a_poke() -> None:
    n = 4
    s = scenes.jelly_cube(n, ground=False, gravity=NO_GRAVITY)
    ratios = poke_jelly(s, n, speed=30.0)
    assert np.all(np.isfinite(s.x))
    assert min(ratios) > 0.97 and max(ratios) < 1.03
    assert ratios[-1] == pytest.approx(1.0, abs=0.01)
    # it has settled back to its shape: every spring at its rest length
    assert np.abs(s.strain()).max() < 1e-3


@pytest.mark.parametrize(
    "build",
    [
        lambda n: scenes.jelly_cube(n, families=("structural", "bend"), ground=False, gravity=NO_GRAVITY),
        lambda n: scenes.jelly_cube(n, k={"structural": 150.0, "shear": 0.0, "bend": 150.0}, ground=False,
                                    gravity=NO_GRAVITY),
    ],
    ids=["no_shear_family", "shear_k_zero"],
)
def test_jelly_without_shear_springs_collapses_after_the_same_poke(
        build: Callable[[int], msprings.System]) -> None:
    n = 4
    s = build(n)
    ratios = poke_jelly(s, n, speed=30.0)
    assert min(ratios) < 0.8
    # and it does not spring back
    assert abs(ratios[-1] - 1.0) > 0.2


def test_jelly_without_shear_springs_yields_to_a_pure_shear_load() -> None:
    """Opposite tangential forces on opposite faces (no net force or torque) barely deform a
    cube with shear springs, which springs back when released, but fold one without them."""
    n, load = 4, 5.0
    results = {}
    for families in (FAMILIES, ("structural", "bend")):
        s = scenes.jelly_cube(n, families=families, ground=False, gravity=NO_GRAVITY)
        volume = enclosed_volume(s.x, s.faces)
        x = s.x
        faces = {
            "top": np.isclose(x[:, 1], x[:, 1].max()), "bottom": np.isclose(x[:, 1], x[:, 1].min()),
            "right": np.isclose(x[:, 0], x[:, 0].max()), "left": np.isclose(x[:, 0], x[:, 0].min()),
        }
        s.external[faces["top"], 0] += load / faces["top"].sum()
        s.external[faces["bottom"], 0] -= load / faces["bottom"].sum()
        s.external[faces["right"], 1] += load / faces["right"].sum()
        s.external[faces["left"], 1] -= load / faces["left"].sum()
        np.testing.assert_allclose(s.external.sum(axis=0), 0.0, atol=1e-12)
        s.step(2e-3, 500)
        loaded = enclosed_volume(s.x, s.faces) / volume
        s.external[:] = 0.0
        s.step(2e-3, 1500)
        results[families] = (loaded, enclosed_volume(s.x, s.faces) / volume, np.abs(s.strain()).max())
    loaded, released, strain = results[FAMILIES]
    assert loaded == pytest.approx(1.0, abs=0.01)
    assert released == pytest.approx(1.0, abs=1e-3) and strain < 1e-3
    loaded, released, _ = results[("structural", "bend")]
    assert abs(loaded - 1.0) > 0.2 and abs(released - 1.0) > 0.2


# ---- jelly dropped on the ground ------------------------------------------------------


def test_jelly_comes_to_rest_on_the_ground() -> None:
    n, size = 5, 1.0
    s = scenes.jelly_cube(n, size=size)
    ground = s.colliders[0]
    dt = 2e-3
    lowest, kinetic = [], []
    for _ in range(60):
        s.step(dt, 50)
        lowest.append(float(ground.distance(s.x).min()))
        kinetic.append(s.energy().kinetic)
    assert np.all(np.isfinite(s.x))
    assert min(lowest) >= -1e-9
    assert max(kinetic) > 10.0  # it did fall
    assert kinetic[-1] < 1e-8 * max(kinetic)
    heights = ground.distance(s.x)
    # its bottom layer rests on the ground, and it stands: the top is still about a side up
    bottom = np.arange(n**3).reshape(n, n, n)[:, 0, :].ravel()  # node (a, b, c) = a n^2 + b n + c, b along y
    assert np.all(heights[bottom] < 1e-6)
    assert heights.max() > 0.8 * size
    assert np.abs(s.x[:, [0, 2]].mean(axis=0)).max() < 1e-6  # no sideways drift


# ---- tablecloth -----------------------------------------------------------------------


def test_tablecloth_drapes_over_the_table() -> None:
    n = 20
    s = scenes.tablecloth(n)
    table = s.colliders[0]
    top = table.center[1] + table.height / 2.0
    spacing = 25.0 / (n - 1)
    gravity_start = s.energy().gravity
    dt = stable_dt(s, 0.3)
    inside_min = []
    for _ in range(20):
        run_for(s, dt, 1.0)
        inside_min.append(float(table.distance(s.x).min()))
    assert np.all(np.isfinite(s.x))
    # no node ever inside the table
    assert min(inside_min) >= -1e-6
    radial = np.hypot(s.x[:, 0] - table.center[0], s.x[:, 2] - table.center[2])
    on_top = (radial <= table.radius) & (s.x[:, 1] >= top) & (s.x[:, 1] <= top + spacing)
    # the rest hangs down the table's side, clear of its top
    hanging = (radial > table.radius) & (s.x[:, 1] < top - spacing)
    assert on_top.mean() > 0.25
    assert hanging.mean() > 0.4
    assert np.all(s.x[radial > table.radius + spacing, 1] < top)
    # every node is either on the top or beside the table
    assert np.all(on_top | (radial > table.radius))
    # the cloth stays whole and is above the ground
    assert np.abs(s.strain()).max() < 0.2
    assert s.colliders[1].distance(s.x).min() >= -1e-6
    energy = s.energy()
    assert energy.kinetic < 1e-3 * (gravity_start - energy.gravity)


# ---- flag -----------------------------------------------------------------------------


def test_flag_streams_flaps_and_hangs_when_the_wind_stops() -> None:
    rows, columns, width = 8, 12, 3.0
    s = scenes.flag(rows, columns, width=width)
    pole = np.flatnonzero(s.pinned)
    free_edge = np.arange(columns - 1, rows * columns, columns)
    dt = stable_dt(s, 0.5)
    run_for(s, dt, 2.0)
    edge_x, mean_z, normals = [], [], []
    for _ in range(40):
        run_for(s, dt, 0.05)
        assert np.all(np.isfinite(s.x)) and np.all(np.isfinite(s.v))
        edge_x.append(s.x[free_edge, 0].mean())
        mean_z.append(s.x[:, 2].mean())
        normals.append(s.vertex_normals())
    # streams in +x: the free edge is well downstream of the pole at every sample
    assert min(edge_x) > 0.6 * width
    # flaps: the cloth moves across the wind and its normals keep turning
    assert np.ptp(mean_z) > 0.05 * width
    turning = [np.degrees(np.arccos(np.clip(np.einsum("ij,ij->i", a, b), -1, 1))).mean()
               for a, b in zip(normals[:-1], normals[1:])]
    assert min(turning) > 2.0
    np.testing.assert_allclose(s.x[pole], scenes.flag(rows, columns, width=width).x[pole])
    streaming_edge_y = s.x[free_edge, 1].mean()

    s.wind = (0.0, 0.0, 0.0)
    s.gust = 0.0
    run_for(s, dt, 6.0)
    assert np.all(np.isfinite(s.x))
    # it hangs: the free edge drops below the bottom of the pole, well under where it flew
    assert s.x[free_edge, 1].mean() < s.x[pole, 1].min()
    assert s.x[free_edge, 1].mean() < streaming_edge_y - 0.3 * width


# ---- hanging cloth with and without shear springs -------------------------------------


def shear_angles(s: msprings.System, n: int) -> np.ndarray:
    """|angle - 90 deg| (degrees) between the row and column edges at every grid cell corner."""
    grid = s.x.reshape(n, n, 3)
    along_row = grid[:-1, 1:] - grid[:-1, :-1]
    along_column = grid[1:, :-1] - grid[:-1, :-1]
    cosine = np.einsum("ijk,ijk->ij", along_row, along_column) / (
        np.linalg.norm(along_row, axis=2) * np.linalg.norm(along_column, axis=2))
    return np.abs(np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0))) - 90.0)


def test_hanging_cloth_without_shear_springs_shears_and_sags() -> None:
    n = 8
    hung = {}
    for families in (FAMILIES, ("structural", "bend")):
        s = scenes.cloth(n, families=families, drag=3.0)  # drag lets it settle
        run_for(s, 0.005, 15.0)
        assert np.all(np.isfinite(s.x))
        assert s.energy().kinetic < 10.0
        hung[families] = (shear_angles(s, n).max(), s.strain().max(), s.x[:, 1].min())
    angle, strain, lowest = hung[FAMILIES]
    angle_free, strain_free, lowest_free = hung[("structural", "bend")]
    assert angle < 5.0 and angle_free > 10.0 and angle_free > 5.0 * angle
    assert strain_free > 1.5 * strain
    assert lowest_free < lowest - 0.5


# ---- spring sphere --------------------------------------------------------------------


def test_spring_sphere_keeps_its_shape_on_the_ground() -> None:
    subdivisions, radius = 2, 0.5
    results = {}
    for stabilise in ("center", None):
        s = scenes.spring_sphere(subdivisions, radius=radius, stabilise=stabilise)
        ground = s.add_plane()
        volume = enclosed_volume(s.x, s.faces)
        assert volume == pytest.approx(4.0 / 3.0 * math.pi * radius**3, rel=0.1)
        dt = stable_dt(s, 0.8)
        ratios = []
        for _ in range(30):
            run_for(s, dt, 0.1)
            ratios.append(enclosed_volume(s.x, s.faces) / volume)
            assert ground.distance(s.x).min() >= -1e-9
        assert np.all(np.isfinite(s.x))
        results[stabilise] = (min(ratios), ratios[-1], s.energy().kinetic)
    lowest, final, kinetic = results["center"]
    assert lowest > 0.95 and final == pytest.approx(1.0, abs=0.02)
    assert kinetic < 1e-3
    _, final, _ = results[None]
    assert final < 0.5  # without stabilising springs it folds flat


def test_spring_sphere_counts() -> None:
    for subdivisions in (0, 1, 2):
        s = scenes.spring_sphere(subdivisions, stabilise="center")
        vertices = 10 * 4**subdivisions + 2
        assert s.n_nodes == vertices + 1  # plus the centre node
        assert s.n_springs == 30 * 4**subdivisions + vertices
        assert s.n_faces == 20 * 4**subdivisions


# ---- balloon --------------------------------------------------------------------------


def test_balloon_floats_on_a_taut_string() -> None:
    string_length = 1.5
    s = scenes.balloon(1, string_length=string_length)
    string = s.families["string"]
    sphere = np.unique(np.asarray(s.springs)[np.concatenate([s.families["structural"], s.families["stabilise"]])])
    anchor = np.flatnonzero(s.pinned)
    assert len(anchor) == 1
    np.testing.assert_allclose(s.x[anchor[0]], 0.0)
    # net buoyancy on the sphere: lift (1 N) beyond its weight
    weight = s.mass[sphere].sum() * 9.81
    assert s.external[sphere, 1].sum() == pytest.approx(weight + 1.0, rel=1e-12)
    volume = enclosed_volume(s.x, s.faces)
    dt = stable_dt(s, 0.8)
    run_for(s, dt, 3.0)  # the string's first bounces die down
    while s.t < 5.0:
        run_for(s, dt, 0.02)
        assert np.all(s.tension()[string] > 0.0)
        assert np.all(s.strain()[string] > 0.0)
        assert s.x[sphere, 1].min() > 0.9 * string_length
    centre = s.x[sphere].mean(axis=0)
    assert np.hypot(centre[0], centre[2]) < 0.05 * string_length  # straight above the anchor
    assert enclosed_volume(s.x, s.faces) / volume == pytest.approx(1.0, abs=0.02)


def test_balloon_string_tension_balances_the_lift() -> None:
    """At equilibrium the tie pulls the sphere down with the lift, and each string link below
    carries one string node's weight less."""
    lift, mass, string_nodes = 1.0, 0.002, 10
    s = scenes.balloon(1, lift=lift, mass=mass, string_nodes=string_nodes, integrator="implicit_euler")
    s.step(0.01, 400)
    assert s.energy().kinetic < 1e-6
    tension = s.tension()[s.families["string"]]
    # string_nodes - 1 springs from the anchor up to the sphere's lowest vertex (the string's
    # last node); between them string_nodes - 2 free nodes: the spring tied to the sphere
    # carries the lift, and each one further down one node's weight less
    assert len(tension) == string_nodes - 1
    expected = lift - mass * 9.81 * np.arange(string_nodes - 1)
    np.testing.assert_allclose(np.sort(tension)[::-1], expected, rtol=0.01, atol=0.0)


# ---- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: scenes.cloth(0), ValueError, "n"),
        (lambda: scenes.cloth(1), ValueError, "n"),
        (lambda: scenes.cloth(-3), ValueError, "n"),
        (lambda: scenes.cloth(4, 0), ValueError, "columns"),
        (lambda: scenes.cloth(4, size=0.0), ValueError, "size"),
        (lambda: scenes.cloth(4, size=-1.0), ValueError, "size"),
        (lambda: scenes.cloth(4, size=float("nan")), ValueError, "size"),
        (lambda: scenes.cloth(2.5), TypeError, "n"),
        (lambda: scenes.cloth("4"), TypeError, "n"),
        (lambda: scenes.cloth(4, families=("structural", "shearing")), ValueError, "shearing"),
        (lambda: scenes.cloth(4, pin="bottom"), ValueError, "bottom"),
        (lambda: scenes.cloth(4, k={"structural": 1.0, "shear": 1.0}), ValueError, "bend"),
        (lambda: scenes.cloth(4, c={"structural": 1.0, "bend": 1.0}), ValueError, "shear"),
        (lambda: scenes.chain(1), ValueError, "n"),
        (lambda: scenes.chain(0), ValueError, "n"),
        (lambda: scenes.chain(5, 0.0), ValueError, "spacing"),
        (lambda: scenes.chain(5, -2.0), ValueError, "spacing"),
        (lambda: scenes.chain(5, anchor="top"), ValueError, "anchor"),
        (lambda: scenes.chain(5, direction=(0.0, 0.0, 0.0)), ValueError, "direction"),
        (lambda: scenes.flag(0, 5), ValueError, "rows"),
        (lambda: scenes.flag(5, 1), ValueError, "columns"),
        (lambda: scenes.flag(4, 5, width=-1.0), ValueError, "width"),
        (lambda: scenes.flag(4, 5, families=("bending",)), ValueError, "bending"),
        (lambda: scenes.tablecloth(0), ValueError, "n"),
        (lambda: scenes.tablecloth(4, size=0.0), ValueError, "size"),
        (lambda: scenes.tablecloth(4, table_radius=-1.0), ValueError, "table_radius"),
        (lambda: scenes.tablecloth(4, k={"shear": 1.0, "bend": 1.0}), ValueError, "structural"),
        (lambda: scenes.jelly_cube(0), ValueError, "n"),
        (lambda: scenes.jelly_cube(1), ValueError, "n"),
        (lambda: scenes.jelly_cube(3.0), TypeError, "n"),
        (lambda: scenes.jelly_cube(3, size=0.0), ValueError, "size"),
        (lambda: scenes.jelly_cube(3, size=-0.5), ValueError, "size"),
        (lambda: scenes.jelly_cube(3, families=("diagonal",)), ValueError, "diagonal"),
        (lambda: scenes.jelly_cube(3, k={"structural": 1.0, "bend": 1.0}), ValueError, "shear"),
        (lambda: scenes.pyramid(0.0), ValueError, "size"),
        (lambda: scenes.pyramid(1.0, height=-1.0), ValueError, "height"),
        (lambda: scenes.single_spring(0.0), ValueError, "length"),
        (lambda: scenes.spring_sphere(1, radius=0.0), ValueError, "radius"),
        (lambda: scenes.spring_sphere(1, stabilise="inside"), ValueError, "stabilise"),
        (lambda: scenes.balloon(1, radius=-0.3), ValueError, "radius"),
        (lambda: scenes.balloon(1, string_nodes=1), ValueError, "string_nodes"),
        (lambda: scenes.balloon(1, string_length=0.0), ValueError, "string_length"),
        (lambda: scenes.grid_springs(3, 3, families=("shear", "twist")), ValueError, "twist"),
        (lambda: scenes.lattice_springs(3, families=("flex",)), ValueError, "flex"),
    ],
)
def test_bad_input(call: Callable[[], object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_bad_system_options_are_passed_on_and_refused() -> None:
    with pytest.raises(ValueError, match="mass"):
        scenes.cloth(3, mass=-1.0)
    with pytest.raises(ValueError, match="k"):
        scenes.chain(3, k=-5.0)
    with pytest.raises(TypeError):
        scenes.jelly_cube(3, colour="red")
