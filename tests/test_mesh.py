"""Triangle meshes: OBJ reading and writing, the icosphere, edge topology, conversion of a
mesh into a spring network, and per-frame OBJ export.

The icosphere has closed forms for everything countable (``V = 10 * 4**s + 2``,
``E = 30 * 4**s``, ``F = 20 * 4**s``, Euler characteristic 2); a closed surface's volume
follows from the divergence theorem; a converted mesh starts with every spring at its rest
length, so with gravity off no node feels a force.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import msprings
from msprings import mesh
from msprings.mesh import Mesh, MeshWarning

NO_GRAVITY = (0.0, 0.0, 0.0)


def write(path: Path, text: str) -> Path:
    """Writes ``text`` to ``path`` and returns it."""
    path.write_text(text, encoding="utf-8")
    return path


def grid(cells: int) -> tuple[np.ndarray, np.ndarray]:
    """A flat square sheet of ``cells x cells`` unit squares in the x-z plane, each split into
    two triangles: (cells + 1)^2 vertices, 2 cells^2 faces."""
    side = cells + 1
    i, j = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    vertices = np.stack([i.ravel(), np.zeros(side * side), j.ravel()], axis=1).astype(np.float64)
    faces = []
    for a in range(cells):
        for b in range(cells):
            p, q, r, s = a * side + b, (a + 1) * side + b, (a + 1) * side + b + 1, a * side + b + 1
            faces.extend([(p, s, r), (p, r, q)])
    return vertices, np.array(faces, dtype=np.int64)


def edge_face_counts(faces: np.ndarray) -> dict[tuple[int, int], int]:
    """How many triangles use each edge (a direct count, independent of the module)."""
    counts: dict[tuple[int, int], int] = {}
    for a, b, c in faces.tolist():
        for i, j in ((a, b), (b, c), (c, a)):
            key = (min(i, j), max(i, j))
            counts[key] = counts.get(key, 0) + 1
    return counts


# ---- OBJ reading ------------------------------------------------------------------------

SQUARE_PYRAMID = """\
# a comment line
mtllib scene.mtl
o pyramid
g sides
v 0 0 0
v 1 0 0
v 1 0 1
v 0 0 1
v 0.5 1 0.5   # apex
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vt 0.5 0.5
vn 0 -1 0
vn 0 1 0
usemtl stone
s 1
f 1 2 5
f 2/2 3/3 5/5
f 3//2 4//2 5//2
f 4/4/1 1/1/1 5/5/2
s off
f 1/1/1 4/4/1 3/3/1 2/2/1
"""


def test_msprings_mesh_gives_every_public_name_from_its_modules() -> None:
    from msprings.mesh import _export, _geometry, _material, _obj, _repair, _solid, _springs

    homes = {module.__name__ for module in (_export, _geometry, _material, _obj, _repair, _solid, _springs)}
    for name in mesh.__all__:
        value = getattr(mesh, name)
        assert getattr(value, "__module__", None) in homes, name
    assert mesh.MAX_SUBDIVISIONS == _geometry.MAX_SUBDIVISIONS


def test_obj_face_forms_and_ignored_statements(tmp_path: Path) -> None:
    loaded = mesh.load_obj(write(tmp_path / "pyramid.obj", SQUARE_PYRAMID))
    assert loaded.vertices.dtype == np.float64 and loaded.faces.dtype == np.int64
    np.testing.assert_array_equal(
        loaded.vertices, [[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1], [0.5, 1, 0.5]]
    )
    # The quad base is split into a fan around its first corner.
    np.testing.assert_array_equal(
        loaded.faces, [[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4], [0, 3, 2], [0, 2, 1]]
    )
    # uv from the first corner naming one: vertices 1, 2, 4 in face 2, vertices 3, 0 in face 4.
    np.testing.assert_array_equal(loaded.uv, [[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]])
    # normals: vertices 2, 3, 4 take vn 2 (face 3), vertices 0 takes vn 1 (face 4), vertex 1
    # is first named with a normal in the base (vn 1).
    np.testing.assert_array_equal(loaded.normals, [[0, -1, 0], [0, -1, 0], [0, 1, 0], [0, 1, 0], [0, 1, 0]])


def test_obj_polygons_are_fan_triangulated(tmp_path: Path) -> None:
    angles = np.arange(6) * math.pi / 3
    text = "".join(f"v {math.cos(a)!r} {math.sin(a)!r} 0\n" for a in angles) + "f 1 2 3 4 5 6\nf 1 2 3 4\n"
    loaded = mesh.load_obj(write(tmp_path / "hexagon.obj", text))
    np.testing.assert_array_equal(loaded.faces, [[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5], [0, 1, 2], [0, 2, 3]])
    # The fan covers the hexagon exactly: its area is 3 sqrt(3) / 2 for unit radius.
    area = 0.5 * np.linalg.norm(mesh.face_normals(loaded.vertices, loaded.faces[:4]), axis=1).sum()
    assert area == pytest.approx(1.5 * math.sqrt(3.0), rel=1e-14)
    assert loaded.uv is None and loaded.normals is None


def test_obj_negative_indices_count_back_from_the_elements_defined_so_far(tmp_path: Path) -> None:
    text = (
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvn 0 0 1\n"
        "f -3/-3/-1 -2/-2/-1 -1/-1/-1\n"
        "v 1 1 0\nvt 1 1\n"
        "f -3/-3 -1/-1 -2/-2\n"
    )
    loaded = mesh.load_obj(write(tmp_path / "relative.obj", text))
    np.testing.assert_array_equal(loaded.faces, [[0, 1, 2], [1, 3, 2]])
    np.testing.assert_array_equal(loaded.uv, [[0, 0], [1, 0], [0, 1], [1, 1]])
    # Vertex 3 is named by no corner with a normal: it gets its area-weighted normal (+z here).
    np.testing.assert_array_equal(loaded.normals, np.tile([0.0, 0.0, 1.0], (4, 1)))


def test_obj_seam_keeps_the_first_texture_coordinate(tmp_path: Path) -> None:
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0.25 0\nvt 0.75 0\nvt 0 1\nvt 1 1\nvt 0.5 0.5\n" \
           "f 1/1 2/2 3/3\nf 2/5 4/4 3/5\n"
    loaded = mesh.load_obj(write(tmp_path / "seam.obj", text))
    np.testing.assert_array_equal(loaded.uv, [[0.25, 0], [0.75, 0], [0, 1], [1, 1]])


def test_obj_extra_vertex_values_windows_newlines_and_forward_references(tmp_path: Path) -> None:
    text = "f 1 2 3\r\nv 0 0 0 1.0\r\nv 1 0 0 0.2 0.4 0.6\r\nv 0 1 0\r\nvt 0.5\r\n"
    loaded = mesh.load_obj(write(tmp_path / "colours.obj", text))
    np.testing.assert_array_equal(loaded.vertices, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(loaded.faces, [[0, 1, 2]])
    assert loaded.uv is None


MALFORMED = [
    ("v 0 0 0\nv 1 0 x\n", 2, "not a number"),
    ("v 0 0 0\nv 1 0\n", 2, "needs 3 to 6 numbers"),
    ("v 0 0 0\n\n\nv nan 0 0\n", 4, "non-finite"),
    ("v 0 0 0\nv 1e999 0 0\n", 2, "non-finite"),
    ("vt\n", 1, "needs 1 to 3 numbers"),
    ("vn 0 0\n", 1, "needs 3 numbers"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", 4, "at least 3 corners"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", 4, "index 0"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\n# note\nf 1 2 4\n", 5, "out of range"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf -4 -2 -1\n", 4, "relative vertex index -4"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1 2/1 3/1\n", 4, "texture coordinate"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//2 2//1 3//1\n", 5, "normal index 2 is out of range"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1/1/1 2 3\n", 4, "is not v, v/vt"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1// 2 3\n", 4, "empty normal"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf a b c\n", 4, "not an integer"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1.5 2 3\n", 4, "not an integer"),
]


@pytest.mark.parametrize(("text", "line", "what"), MALFORMED)
def test_malformed_obj_names_the_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    with pytest.raises(ValueError, match=f"line {line}\\b") as caught:
        mesh.load_obj(write(tmp_path / "bad.obj", text))
    assert what in str(caught.value)


def test_obj_that_is_not_utf8_raises_value_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.obj"
    path.write_bytes(b"v 0 0 0\n\xff\xfe\x80 1 2\n")
    with pytest.raises(ValueError, match="UTF-8"):
        mesh.load_obj(path)


FUZZ_WORDS = ["v", "vt", "vn", "f", "o", "g", "s", "l", "usemtl", "#", "mtllib", "vp"]
FUZZ_TOKENS = ["1", "2", "3", "-1", "-2", "0", "7", "1/1", "2//1", "3/1/1", "-1/-1/-1", "/", "//", "1/", "/1",
               "1/2/3/4", "nan", "inf", "-inf", "1e400", "0.5", "-0", "x", "", "\x00", "１", "99999999999999999999",
               "9" * 5000, "1e-320", "#", "\\", "+2", "0x1", "1_0"]


def fuzz_text(rng: np.random.Generator) -> bytes:
    """Random bytes, lines of OBJ-like keywords and tokens, or a valid file (the pyramid)
    with some of its tokens replaced, lines dropped or repeated."""
    kind = rng.random()
    if kind < 0.2:
        return rng.integers(0, 256, size=int(rng.integers(0, 200)), dtype=np.uint8).tobytes()
    if kind < 0.5:
        lines = []
        for _ in range(int(rng.integers(0, 15))):
            word = FUZZ_WORDS[int(rng.integers(len(FUZZ_WORDS)))]
            tokens = [FUZZ_TOKENS[int(rng.integers(len(FUZZ_TOKENS)))] for _ in range(int(rng.integers(0, 7)))]
            lines.append(" ".join([word, *tokens]))
    else:
        lines = []
        for line in SQUARE_PYRAMID.splitlines():
            roll = rng.random()
            if roll < 0.02:
                continue
            tokens = line.split()
            if roll < 0.06 and tokens:
                tokens[int(rng.integers(len(tokens)))] = FUZZ_TOKENS[int(rng.integers(len(FUZZ_TOKENS)))]
            lines.append(" ".join(tokens))
            if roll > 0.97:
                lines.append(lines[-1])
    separator = ["\n", "\r\n", "\r"][int(rng.integers(3))]
    return separator.join(lines).encode("utf-8")


def test_fuzzed_obj_input_only_ever_raises_value_error(tmp_path: Path) -> None:
    rng = np.random.default_rng(20240917)
    path = tmp_path / "fuzz.obj"
    with_faces = rejected = 0
    for _ in range(400):
        path.write_bytes(fuzz_text(rng))
        try:
            loaded = mesh.load_obj(path)
        except ValueError:
            rejected += 1
            continue
        with_faces += loaded.n_faces > 0
        n = loaded.vertices.shape[0]
        assert loaded.vertices.shape == (n, 3) and np.all(np.isfinite(loaded.vertices))
        assert loaded.faces.ndim == 2 and loaded.faces.shape[1] == 3
        assert loaded.faces.size == 0 or (loaded.faces.min() >= 0 and loaded.faces.max() < n)
        assert loaded.uv is None or loaded.uv.shape == (n, 2)
        assert loaded.normals is None or loaded.normals.shape == (n, 3)
    # Both outcomes must actually occur for the fuzzing to mean anything.
    assert with_faces > 20 and rejected > 20


# ---- OBJ writing ------------------------------------------------------------------------


@pytest.mark.parametrize(("with_uv", "with_normals"), [(True, True), (True, False), (False, True), (False, False)])
def test_save_then_load_is_exact(tmp_path: Path, with_uv: bool, with_normals: bool) -> None:
    rng = np.random.default_rng(7)
    sphere = mesh.icosphere(1)
    # Awkward doubles over many magnitudes: every bit has to survive the text.
    vertices = sphere.vertices * 10.0 ** rng.integers(-300, 300, size=(sphere.n_vertices, 1)) + rng.normal(
        size=(sphere.n_vertices, 3)) / 3.0
    uv = rng.random((sphere.n_vertices, 2)) if with_uv else None
    normals = rng.normal(size=(sphere.n_vertices, 3)) if with_normals else None
    path = mesh.save_obj(tmp_path / "exact.obj", vertices, sphere.faces, uv=uv, normals=normals)
    loaded = mesh.load_obj(path)
    np.testing.assert_array_equal(loaded.vertices, vertices)
    np.testing.assert_array_equal(loaded.faces, sphere.faces)
    for saved, read in ((uv, loaded.uv), (normals, loaded.normals)):
        if saved is None:
            assert read is None
        else:
            np.testing.assert_array_equal(read, saved)


def test_save_keeps_loose_vertices_and_their_attributes(tmp_path: Path) -> None:
    vertices = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5]])
    normals = np.array([[0.0, 0, 1], [0, 0, 1], [0, 0, 1], [1, 0, 0]])
    uv = np.array([[0.0, 0], [1, 0], [0, 1], [0.3, 0.7]])
    loaded = mesh.load_obj(mesh.save_obj(tmp_path / "loose.obj", vertices, [[0, 1, 2]], uv=uv, normals=normals))
    np.testing.assert_array_equal(loaded.vertices, vertices)
    np.testing.assert_array_equal(loaded.normals, normals)
    np.testing.assert_array_equal(loaded.uv, uv)


def test_save_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="vertices"):
        mesh.save_obj(tmp_path / "a.obj", [[0, 0, np.nan]], [])
    with pytest.raises(ValueError, match="faces\\[0\\]"):
        mesh.save_obj(tmp_path / "a.obj", [[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]])
    with pytest.raises(ValueError, match="uv"):
        mesh.save_obj(tmp_path / "a.obj", [[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], uv=[[0, 0]])
    with pytest.raises(TypeError, match="faces"):
        mesh.save_obj(tmp_path / "a.obj", [[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.0, 1.0, 2.0]])
    assert not (tmp_path / "a.obj").exists()


# ---- icosphere and topology --------------------------------------------------------------


@pytest.mark.parametrize("subdivisions", [0, 1, 2, 3])
def test_icosphere_is_a_closed_outward_sphere(subdivisions: int) -> None:
    center, radius = np.array([0.3, -1.0, 2.0]), 0.7
    sphere = mesh.icosphere(subdivisions, radius=radius, center=center)
    n_vertices, n_faces = sphere.n_vertices, sphere.n_faces
    edges = mesh.unique_edges(sphere.faces)
    assert n_vertices == 10 * 4**subdivisions + 2
    assert n_faces == 20 * 4**subdivisions
    assert len(edges) == 30 * 4**subdivisions == 3 * n_faces // 2
    assert n_vertices - len(edges) + n_faces == 2
    # Closed: every edge is shared by exactly two triangles (counted directly).
    assert set(edge_face_counts(sphere.faces).values()) == {2}
    adjacency = mesh.interior_edge_opposites(sphere.faces)
    np.testing.assert_array_equal(adjacency.edges, edges)
    assert adjacency.nonmanifold.shape == (0, 2)
    # On the sphere, outward: each face normal points away from the centre.
    np.testing.assert_allclose(np.linalg.norm(sphere.vertices - center, axis=1), radius, rtol=1e-14)
    normals = mesh.face_normals(sphere.vertices, sphere.faces)
    centroids = sphere.vertices[sphere.faces].mean(axis=1) - center
    assert np.all(np.einsum("ij,ij->i", normals, centroids) > 0)
    np.testing.assert_allclose(sphere.normals, (sphere.vertices - center) / radius, atol=1e-15)
    # The inscribed polyhedron's volume is below the sphere's and approaches it.
    volume = mesh.enclosed_volume(sphere.vertices, sphere.faces)
    sphere_volume = 4.0 / 3.0 * math.pi * radius**3
    assert 0 < volume < sphere_volume
    assert volume > sphere_volume * (1.0 - 2.0 / 4**subdivisions)
    assert np.all((sphere.uv >= 0) & (sphere.uv <= 1))


def test_icosahedron_volume_closed_form() -> None:
    # A regular icosahedron of circumradius 1 has edge a = 4 / sqrt(10 + 2 sqrt 5) and
    # volume 5 (3 + sqrt 5) a^3 / 12.
    sphere = mesh.icosphere(0)
    lengths = np.linalg.norm(np.diff(sphere.vertices[mesh.unique_edges(sphere.faces)], axis=1)[:, 0], axis=1)
    a = 4.0 / math.sqrt(10.0 + 2.0 * math.sqrt(5.0))
    np.testing.assert_allclose(lengths, a, rtol=1e-14)
    assert mesh.enclosed_volume(sphere.vertices, sphere.faces) == pytest.approx(5 * (3 + math.sqrt(5)) * a**3 / 12,
                                                                                rel=1e-14)


@pytest.mark.parametrize("cells", [1, 2, 5])
def test_grid_edge_counts(cells: int) -> None:
    vertices, faces = grid(cells)
    edges = mesh.unique_edges(faces)
    # cells x (cells + 1) edges along each axis plus one diagonal per square.
    assert len(edges) == 2 * cells * (cells + 1) + cells * cells
    assert np.all(edges[:, 0] < edges[:, 1])
    assert np.array_equal(edges, np.unique(edges, axis=0))
    counts = edge_face_counts(faces)
    assert {tuple(e) for e in edges.tolist()} == set(counts)
    adjacency = mesh.interior_edge_opposites(faces)
    # Boundary: 4 cells edges, each in one triangle; all the others are interior.
    assert len(adjacency.edges) == len(edges) - 4 * cells
    for (i, j), (p, q) in zip(adjacency.edges.tolist(), adjacency.opposites.tolist()):
        assert counts[(i, j)] == 2
        touching = [set(face) for face in faces.tolist() if i in face and j in face]
        assert sorted([p, q]) == sorted(next(iter(face - {i, j})) for face in touching)
    assert len(mesh.unique_edges(np.zeros((0, 3), dtype=np.int64))) == 0


def test_nonmanifold_edges_are_detected() -> None:
    # Three triangles hinged on the edge (0, 1), plus one ordinary neighbour of the first.
    faces = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4], [1, 5, 2]])
    adjacency = mesh.interior_edge_opposites(faces)
    np.testing.assert_array_equal(adjacency.nonmanifold, [[0, 1]])
    np.testing.assert_array_equal(adjacency.edges, [[1, 2]])
    np.testing.assert_array_equal(adjacency.opposites, [[0, 5]])


# ---- conversion to springs ----------------------------------------------------------------


def test_from_mesh_spring_families_and_order() -> None:
    sphere = mesh.icosphere(2)
    n = sphere.n_vertices
    edges = mesh.unique_edges(sphere.faces)
    opposites = mesh.interior_edge_opposites(sphere.faces).opposites

    plain, counts = mesh.from_mesh(sphere.vertices, sphere.faces, return_counts=True)
    assert counts == {"structural": len(edges), "bend": 0, "stabilise": 0}
    np.testing.assert_array_equal(plain.springs, edges)

    system, counts = mesh.from_mesh(sphere.vertices, sphere.faces, k=30.0, c=0.5, bend_k=3.0, bend_c=0.1,
                                    stabilise="center", stabilise_k=7.0, return_counts=True)
    # Closed mesh: every edge is interior, so one bending spring per edge; one spoke per vertex.
    assert counts == {"structural": 480, "bend": 480, "stabilise": n}
    assert system.n_nodes == n + 1 and system.n_springs == 480 + 480 + n
    springs = system.springs
    np.testing.assert_array_equal(springs[:480], edges)
    np.testing.assert_array_equal(springs[480:960], opposites)
    np.testing.assert_array_equal(springs[960:], np.stack([np.arange(n), np.full(n, n)], axis=1))
    np.testing.assert_array_equal(system.k, np.repeat([30.0, 3.0, 7.0], [480, 480, n]))
    np.testing.assert_array_equal(system.c, np.repeat([0.5, 0.1, 0.5], [480, 480, n]))
    np.testing.assert_allclose(system.x[n], sphere.vertices.mean(axis=0), atol=1e-15)
    np.testing.assert_array_equal(system.faces, sphere.faces)

    opposite, counts = mesh.from_mesh(sphere.vertices, sphere.faces, stabilise="opposite", return_counts=True)
    # The icosphere is centrally symmetric: vertices pair up with their antipodes.
    assert counts["stabilise"] == n // 2
    pairs = opposite.springs[480:]
    np.testing.assert_allclose(sphere.vertices[pairs[:, 0]], -sphere.vertices[pairs[:, 1]], atol=1e-15)
    assert set(pairs.ravel().tolist()) == set(range(n))


def test_from_mesh_opposite_on_an_open_sheet_joins_each_vertex_once_to_its_farthest() -> None:
    vertices, faces = grid(3)
    system, counts = mesh.from_mesh(vertices, faces, stabilise="opposite", return_counts=True)
    pairs = system.springs[counts["structural"]:]
    distance = np.linalg.norm(vertices[:, None] - vertices[None], axis=2)
    partners: dict[int, set[int]] = {}
    for i, j in pairs.tolist():
        partners.setdefault(i, set()).add(j)
        partners.setdefault(j, set()).add(i)
    for i in range(len(vertices)):
        assert max(distance[i, j] for j in partners[i]) == distance[i].max()
    assert len(vertices) / 2 <= counts["stabilise"] <= len(vertices)
    assert len({tuple(p) for p in pairs.tolist()}) == len(pairs)


def farthest_pairs(vertices: np.ndarray) -> set[tuple[int, int]]:
    """Each vertex with the vertex farthest from it (the lowest index on a tie), by all pairs."""
    difference = vertices[:, None, :] - vertices[None, :, :]
    distance2 = np.einsum("ijk,ijk->ij", difference, difference)
    farthest = np.argmax(distance2 == distance2.max(axis=1, keepdims=True), axis=1)
    return {(min(i, int(j)), max(i, int(j))) for i, j in enumerate(farthest) if i != j}


@pytest.mark.parametrize("shape", ["jittered sphere", "box", "flat ellipsoid", "bumpy blob", "grid with centre"])
def test_opposite_springs_join_each_vertex_to_its_farthest_as_all_pairs_would(shape: str) -> None:
    # The search prunes by bounds over leaves of 32 vertices: thousands of vertices on shapes it
    # finds easy (round) and hard (flat, boxy, a vertex at the centre, exact ties).
    rng = np.random.default_rng(11)
    if shape == "grid with centre":
        vertices, faces = grid(10)      # 121 vertices; the middle one is the centroid, and ties abound
    else:
        sphere = mesh.icosphere(4)
        faces, unit = sphere.faces, sphere.vertices
        if shape == "jittered sphere":
            vertices = unit * rng.uniform(0.97, 1.03, size=(len(unit), 1))
        elif shape == "box":
            vertices = np.clip(unit * 1.6, -1.0, 1.0) + rng.normal(scale=1e-3, size=unit.shape)
        elif shape == "flat ellipsoid":
            vertices = unit * (3.0, 1.0, 0.05)
        else:
            vertices = unit * (1.0 + 0.3 * np.sin(3 * unit[:, :1]) * np.cos(2 * unit[:, 1:2]))
    system, counts = mesh.from_mesh(vertices, faces, stabilise="opposite", return_counts=True)
    found = {tuple(pair) for pair in system.springs[counts["structural"]:].tolist()}
    assert found == farthest_pairs(vertices)


@pytest.mark.parametrize("stabilise", [None, "center", "opposite"])
def test_converted_mesh_starts_at_rest(stabilise: str | None) -> None:
    sphere = mesh.icosphere(2, radius=0.4, center=(1.0, 2.0, -0.5))
    system = mesh.from_mesh(sphere.vertices, sphere.faces, mass=0.02, k=100.0, c=0.3, bend_k=10.0,
                            stabilise=stabilise, uv=sphere.uv, gravity=NO_GRAVITY)
    assert np.all(np.abs(system.strain()) < 1e-14)
    forces = system.update_forces()
    assert np.abs(forces).max() < 1e-12
    system.step(1e-3, 10)
    assert np.abs(system.x[: sphere.n_vertices] - sphere.vertices).max() < 1e-12
    assert system.uv.shape == (system.n_nodes, 2)
    np.testing.assert_array_equal(system.uv[: sphere.n_vertices], sphere.uv)


def test_from_mesh_passes_masses_pins_and_options() -> None:
    vertices, faces = grid(2)
    masses = np.linspace(0.1, 0.9, len(vertices))
    system = mesh.from_mesh(vertices, faces, mass=masses, pinned=[0, 2], integrator="rk4", drag=0.2,
                            drag_coefficient=1.1, wind=(1.0, 0.0, 0.0), strain_limit=0.05, self_collision=0.01)
    np.testing.assert_array_equal(system.mass, masses)
    np.testing.assert_array_equal(np.flatnonzero(system.pinned), [0, 2])
    assert (system.integrator, system.drag, system.drag_coefficient, system.strain_limit, system.self_collision) == (
        "rk4", 0.2, 1.1, 0.05, 0.01)
    np.testing.assert_array_equal(system.wind, [1.0, 0.0, 0.0])
    with pytest.raises(TypeError, match="colour"):
        mesh.from_mesh(vertices, faces, colour="red")
    with pytest.raises(ValueError, match="stabilise"):
        mesh.from_mesh(vertices, faces, stabilise="inside")
    with pytest.raises(ValueError, match="k must be a scalar"):
        mesh.from_mesh(vertices, faces, k=[1.0, 2.0])


def test_stabilised_jelly_keeps_its_volume_while_a_plain_one_collapses() -> None:
    """Dropped on the ground and poked on top, a converted ball with a centre node keeps its
    volume; without stabilising springs its dome folds in (edge lengths allow a mirrored
    cap) and it flattens under its own weight."""
    sphere = mesh.icosphere(2, radius=0.5, center=(0.0, 0.51, 0.0))
    n = sphere.n_vertices
    initial = mesh.enclosed_volume(sphere.vertices, sphere.faces)
    top = sphere.vertices[:, 1] > 0.96
    volumes = {}
    for stabilise in (None, "center"):
        ball = mesh.from_mesh(sphere.vertices, sphere.faces, mass=0.01, k=50.0, c=0.05, stabilise=stabilise,
                              drag=0.01)
        ball.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), friction=0.5)
        ball.v[:n][top] = (0.0, -3.0, 0.0)
        ball.step(1e-3, 2500)
        assert ball.x[:, 1].min() >= 0.0
        volumes[stabilise] = mesh.enclosed_volume(ball.x[:n], sphere.faces) / initial
    assert abs(volumes["center"] - 1.0) < 0.05
    assert volumes[None] < 0.2


def test_bad_meshes_raise_or_warn() -> None:
    vertices = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0], [0, 0, 1], [0, 0, -1]])
    with pytest.raises(ValueError, match=r"faces\[1\] = \(0, 2, 0\) repeats a vertex"):
        mesh.from_mesh(vertices, [[0, 1, 2], [0, 2, 0]])
    with pytest.raises(ValueError, match=r"faces\[1\] = \(0, 1, 3\) is degenerate"):
        mesh.from_mesh(vertices, [[0, 1, 2], [0, 1, 3]])
    with pytest.raises(ValueError, match=r"faces\[0\] and faces\[2\] are the same triangle"):
        mesh.from_mesh(vertices, [[0, 1, 2], [0, 1, 4], [2, 1, 0]])
    with pytest.raises(ValueError, match=r"faces\[1\] = \(0, 1, 6\) refers to a vertex outside 0..5"):
        mesh.from_mesh(vertices, [[0, 1, 2], [0, 1, 6]])
    with pytest.raises(ValueError, match="vertices"):
        mesh.from_mesh([[0.0, 0.0, np.inf], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    with pytest.warns(MeshWarning, match="non-manifold"):
        system, counts = mesh.from_mesh(vertices, [[0, 1, 2], [1, 0, 4], [0, 1, 5]], bend_k=1.0,
                                        return_counts=True)
    assert isinstance(system, msprings.System)
    assert counts == {"structural": 7, "bend": 0, "stabilise": 0}


def test_mesh_dataclass_validates() -> None:
    built = Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    assert built.vertices.dtype == np.float64 and built.faces.dtype == np.int64
    with pytest.raises(ValueError, match="uv"):
        Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]], uv=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="out"):
        Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]])
    with pytest.raises(ValueError, match="subdivisions"):
        mesh.icosphere(-1)
    with pytest.raises(ValueError, match="radius"):
        mesh.icosphere(1, radius=0.0)


# ---- normals and frame export ------------------------------------------------------------


def test_nbytes_counts_every_array_the_system_shares() -> None:
    sphere = mesh.icosphere(2)
    system = mesh.from_mesh(sphere.vertices, sphere.faces, uv=sphere.uv, stabilise="center")
    n, m, f = system.n_nodes, system.n_springs, len(sphere.faces)
    # x, v, f, external (float64 n x 3); mass (float64), pinned (bool); springs (int32 m x 2);
    # rest, k, c (float64); faces (int32 F x 3); uv (float64 n x 2).
    expected = 4 * 24 * n + 9 * n + 8 * m + 24 * m + 12 * f + 16 * n
    assert system.nbytes == expected
    assert msprings.System([[0.0, 0, 0]], np.zeros((0, 2), dtype=int)).nbytes == 4 * 24 + 9


def test_vertex_normals_match_the_core() -> None:
    vertices, faces = grid(4)
    rng = np.random.default_rng(3)
    vertices = vertices + rng.normal(scale=0.2, size=vertices.shape)
    system = msprings.System(vertices, mesh.unique_edges(faces), faces=faces)
    np.testing.assert_allclose(mesh.vertex_normals(vertices, faces), system.vertex_normals(), atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(mesh.vertex_normals(vertices, faces), axis=1), 1.0, rtol=1e-15)


def test_export_obj_frames_round_trips(tmp_path: Path) -> None:
    sphere = mesh.icosphere(1, radius=0.3, center=(0.0, 1.0, 0.0))
    system = mesh.from_mesh(sphere.vertices, sphere.faces, mass=0.01, k=20.0, bend_k=2.0, uv=sphere.uv)
    system.v[:, 0] = np.linspace(-1.0, 1.0, system.n_nodes)
    frames = []
    for _ in range(4):
        frames.append(system.x.copy())
        system.step(1e-3, 25)
    paths = mesh.export_obj_frames(tmp_path / "out", frames, system.faces, uv=system.uv)
    assert [p.name for p in paths] == [f"frame_{i:04d}.obj" for i in range(4)]
    for path, frame in zip(paths, frames):
        loaded = mesh.load_obj(path)
        np.testing.assert_array_equal(loaded.vertices, frame)
        np.testing.assert_array_equal(loaded.faces, sphere.faces)
        np.testing.assert_array_equal(loaded.uv, sphere.uv)
        np.testing.assert_allclose(np.linalg.norm(loaded.normals, axis=1), 1.0, rtol=1e-15)
        np.testing.assert_array_equal(loaded.normals, mesh.vertex_normals(frame, sphere.faces))
        # Outward: a normal agrees with the direction from the ball's centre.
        assert np.all(np.einsum("ij,ij->i", loaded.normals, frame - frame.mean(axis=0)) > 0)
    # A (T, n, 3) trajectory array works the same, with another prefix and no normals.
    again = mesh.export_obj_frames(tmp_path / "out", np.stack(frames), system.faces, prefix="ball", normals=False)
    assert [p.name for p in again] == [f"ball_{i:04d}.obj" for i in range(4)]
    assert mesh.load_obj(again[2]).normals is None
    np.testing.assert_array_equal(mesh.load_obj(again[2]).vertices, frames[2])
    with pytest.raises(ValueError, match="frames\\[1\\]"):
        mesh.export_obj_frames(tmp_path / "bad", [frames[0], frames[0][:-1]], system.faces)
