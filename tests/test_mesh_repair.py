"""Mesh repair: each defect that made the converter refuse a real model (a repeated triangle, a
zero-area face, a face on a repeated vertex, duplicated vertices along a seam, stray
vertices) reproduced on a small mesh, fixed by ``mesh.repair`` into a mesh that converts and
steps; the merge against a brute-force reference; OBJ files that are empty or damaged; and
the warning for a solid that is not closed.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from msprings import mesh
from msprings.mesh import OpenMeshWarning, RepairReport


def closed_sphere() -> tuple[np.ndarray, np.ndarray]:
    sphere = mesh.icosphere(2, radius=0.5, center=(0.0, 1.0, 0.0))
    return sphere.vertices, sphere.faces


def converts_and_steps(vertices: np.ndarray, faces: np.ndarray) -> None:
    """The repaired ball converts to a solid without warnings, starts at rest, and falls
    freely at g for a few steps (no spring force: its shape is unchanged)."""
    ball = mesh.from_mesh(vertices, faces, mass=0.01, k=50.0, stabilise="center")
    ball.update_forces()
    assert np.abs(ball.f + ball.mass[:, None] * (0.0, 9.81, 0.0)).max() < 1e-9
    start = ball.x.copy()
    ball.step(1e-3, 100)
    drop = start[:, 1] - ball.x[:, 1]
    # Symplectic Euler: x_n = x_0 - g h^2 n (n + 1) / 2.
    np.testing.assert_allclose(drop, 9.81 * 1e-6 * 100 * 101 / 2, rtol=1e-9)


def test_a_repeated_triangle_in_any_order_or_orientation_is_dropped() -> None:
    vertices, faces = closed_sphere()
    copies = np.array([faces[10], faces[10][::-1]])
    broken = np.concatenate([faces[:11], copies, faces[11:], [np.roll(faces[40], 1)]])
    with pytest.raises(ValueError, match=r"faces\[10\] and faces\[11\] are the same triangle.*mesh.repair"):
        mesh.from_mesh(vertices, broken)
    fixed_vertices, fixed_faces, report = mesh.repair(vertices, broken)
    assert (report.repeated_faces, report.degenerate_faces, report.merged_vertices) == (3, 0, 0)
    assert report.unused_vertices == 0 and report.boundary_edges == 0 and report.changed
    np.testing.assert_array_equal(fixed_faces, faces)
    np.testing.assert_array_equal(fixed_vertices, vertices)
    # The first of the copies is kept, in its own place.
    np.testing.assert_array_equal(report.kept_faces, np.r_[0:11, 13:len(broken) - 1])
    converts_and_steps(fixed_vertices, fixed_faces)


def test_zero_area_faces_and_faces_on_a_repeated_vertex_are_dropped() -> None:
    vertices, faces = closed_sphere()
    n = len(vertices)
    a, b = faces[0][:2]
    midpoint = (vertices[a] + vertices[b]) / 2.0
    extra = np.concatenate([vertices, [midpoint]])
    collinear = [a, n, b]           # a sliver of zero area: its corners lie on one line
    repeated_corner = [a, a, b]     # two corners on one vertex
    broken = np.concatenate([faces, [collinear, repeated_corner]])
    with pytest.raises(ValueError, match=r"is degenerate.*mesh.repair"):
        mesh.from_mesh(extra, np.concatenate([faces, [collinear]]))
    with pytest.raises(ValueError, match=r"repeats a vertex.*mesh.repair"):
        mesh.from_mesh(extra, broken)
    fixed_vertices, fixed_faces, report = mesh.repair(extra, broken)
    assert report.degenerate_faces == 2 and report.repeated_faces == 0
    # The midpoint was used only by the sliver: it goes too.
    assert report.unused_vertices == 1 and len(fixed_vertices) == n
    np.testing.assert_array_equal(fixed_faces, faces)
    converts_and_steps(fixed_vertices, fixed_faces)


def test_a_near_zero_height_sliver_within_the_tolerance_is_degenerate_and_a_thin_one_beyond_it_is_not() -> None:
    vertices = np.array([[0.0, 0, 0], [1, 0, 0], [0.5, 0, 0], [0, 1, 0]])
    diagonal = math.sqrt(2.0)
    for height, dropped in ((0.5e-6 * diagonal, 1), (2e-6 * diagonal, 0)):
        flat = vertices.copy()
        flat[2, 1] = height
        _, _, report = mesh.repair(flat, [[0, 1, 2], [0, 1, 3]])
        assert report.degenerate_faces == dropped


def test_duplicated_seam_vertices_are_merged_and_close_the_surface() -> None:
    vertices, faces = closed_sphere()
    n = len(vertices)
    # Split the sphere along a seam, as exporters do for texture coordinates: the faces on
    # one side of the x = 0 plane use copies of the seam's vertices (a little moved, within
    # the tolerance), so the surface looks open along the seam.
    seam = np.flatnonzero(np.abs(vertices[:, 0]) < 0.2)
    copy_of = {int(v): n + i for i, v in enumerate(seam)}
    jitter = np.random.default_rng(5).normal(scale=1e-8, size=(len(seam), 3))
    split_vertices = np.concatenate([vertices, vertices[seam] + jitter])
    east = vertices[faces].mean(axis=1)[:, 0] > 0
    split_faces = faces.copy()
    split_faces[east] = np.vectorize(lambda v: copy_of.get(int(v), int(v)))(faces[east])
    assert len(mesh.boundary_edges(split_faces)) > 0
    with pytest.warns(OpenMeshWarning, match=rf"{len(mesh.boundary_edges(split_faces))} boundary edges"):
        mesh.from_mesh(split_vertices, split_faces, stabilise="center")
    fixed_vertices, fixed_faces, report = mesh.repair(split_vertices, split_faces)
    used_copies = len(np.unique(split_faces[split_faces >= n]))
    assert report.merged_vertices == len(seam)
    assert report.unused_vertices == 0 and report.boundary_edges == 0
    assert used_copies > 0
    # Merged into the original (lowest index), so the repaired mesh is the sphere again.
    np.testing.assert_array_equal(fixed_vertices, vertices)
    np.testing.assert_array_equal(fixed_faces, faces)
    np.testing.assert_array_equal(report.kept_vertices, np.arange(n))
    converts_and_steps(fixed_vertices, fixed_faces)


def test_unused_vertices_are_removed_and_the_rest_renumbered_in_order() -> None:
    vertices = np.array([[9.0, 9, 9], [0, 0, 0], [1, 0, 0], [7, 7, 7], [0, 1, 0], [0, 0, 1]])
    faces = np.array([[1, 2, 4], [1, 4, 5], [1, 5, 2], [2, 5, 4]])
    fixed_vertices, fixed_faces, report = mesh.repair(vertices, faces)
    assert report.unused_vertices == 2 and not report.merged_vertices
    np.testing.assert_array_equal(report.kept_vertices, [1, 2, 4, 5])
    np.testing.assert_array_equal(fixed_vertices, vertices[[1, 2, 4, 5]])
    np.testing.assert_array_equal(fixed_faces, [[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]])
    assert "removed 2 unused vertices" in str(report)


def test_a_clean_mesh_is_returned_unchanged() -> None:
    vertices, faces = closed_sphere()
    fixed_vertices, fixed_faces, report = mesh.repair(vertices, faces)
    assert not report.changed and isinstance(report, RepairReport)
    np.testing.assert_array_equal(fixed_vertices, vertices)
    np.testing.assert_array_equal(fixed_faces, faces)


def brute_force_groups(points: np.ndarray, distance: float) -> np.ndarray:
    """Lowest index of each vertex's group: vertices within ``distance`` joined transitively."""
    n = len(points)
    label = np.arange(n)
    close = np.linalg.norm(points[:, None] - points[None], axis=2) <= distance
    changed = True
    while changed:
        new = np.array([label[close[i]].min() for i in range(n)])
        changed = not np.array_equal(new, label)
        label = new
    return label


@pytest.mark.parametrize("seed", range(4))
def test_merging_matches_a_brute_force_reference_and_does_not_depend_on_the_scale(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Clusters of near-copies (some chained just within the tolerance) among loose points.
    centres = rng.random((40, 3))
    points = np.concatenate([centres, centres + rng.normal(scale=0.004, size=(40, 3)),
                             centres[:10] + [0.009, 0, 0], rng.random((30, 3))])
    order = rng.permutation(len(points))
    points = points[order]
    faces = np.arange(len(points) - len(points) % 3).reshape(-1, 3)
    # A merge distance of 0.01 (m), given relative to the bounding-box diagonal.
    tolerance = 0.01 / np.linalg.norm(np.ptp(points, axis=0))
    reference = brute_force_groups(points, 0.01)
    assert 30 < np.count_nonzero(reference != np.arange(len(points))) < len(points) - 40
    for scale in (1.0, 1e-3, 1e4):
        _, _, report = mesh.repair(points * scale, faces, tolerance=tolerance)
        assert report.merged_vertices == int(np.count_nonzero(reference != np.arange(len(points))))
        assert report.tolerance == pytest.approx(0.01 * scale, rel=1e-12)
    # An exact merge (tolerance 0) joins only equal positions.
    doubled = np.concatenate([points, points[:5]])
    _, _, report = mesh.repair(doubled, faces, tolerance=0.0)
    assert report.merged_vertices == 5


def test_bad_input_to_repair_names_the_argument() -> None:
    vertices, faces = closed_sphere()
    for tolerance in (-1e-6, math.nan, math.inf):
        with pytest.raises(ValueError, match="tolerance"):
            mesh.repair(vertices, faces, tolerance=tolerance)
    with pytest.raises(TypeError, match="tolerance"):
        mesh.repair(vertices, faces, tolerance="small")
    with pytest.raises(ValueError, match="faces"):
        mesh.repair(vertices, faces + len(vertices))
    with pytest.raises(ValueError, match="vertices"):
        mesh.repair(vertices[:, :2], faces)


# ---- OBJ files ---------------------------------------------------------------------------


def test_load_obj_with_repair_keeps_each_merged_vertex_first_texture_coordinate(tmp_path: Path) -> None:
    # Two triangles of a square, exported with the shared edge's vertices written twice (as
    # a seam), plus a repeated face and a stray vertex.
    text = ("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 1 0 0\nv 1 1 0\nv 5 5 5\n"
            "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.9 0\nvt 0.9 1\nvt 0.5 0.5\n"
            "f 1/1 2/2 3/3\nf 1/1 6/6 4/4\nf 3/3 1/1 2/2\n")
    path = tmp_path / "seam.obj"
    path.write_text(text, encoding="utf-8")
    plain = mesh.load_obj(path)
    assert plain.n_vertices == 7 and plain.n_faces == 3 and plain.repair_report is None
    repaired = mesh.load_obj(path, repair=True)
    np.testing.assert_array_equal(repaired.vertices, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    np.testing.assert_array_equal(repaired.faces, [[0, 1, 2], [0, 2, 3]])
    np.testing.assert_array_equal(repaired.uv, [[0, 0], [1, 0], [1, 1], [0, 1]])
    report = repaired.repair_report
    assert (report.merged_vertices, report.repeated_faces, report.unused_vertices, report.boundary_edges) \
        == (2, 1, 1, 4)


@pytest.mark.parametrize(("text", "message"), [
    ("", "has no faces"),
    ("# nothing but a comment\n\n", "has no faces"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\n", "has no faces"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 9\n", r"OBJ line 5: vertex index 9 is out of range"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nv 1 0", r"OBJ line 5: 'v' needs 3 to 6 numbers"),
])
def test_an_empty_or_damaged_file_is_an_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "model.obj"
    path.write_text(text, encoding="utf-8")
    for repair in (False, True):
        with pytest.raises(ValueError, match=message) as caught:
            mesh.load_obj(path, repair=repair)
        assert str(caught.value).startswith(str(path))


def test_a_file_of_only_degenerate_faces_has_nothing_left_after_repair(tmp_path: Path) -> None:
    path = tmp_path / "line.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\nf 3 2 1\n", encoding="utf-8")
    assert mesh.load_obj(path).n_faces == 2
    with pytest.raises(ValueError, match=r"line.obj has no faces left after repair: all 2 are degenerate"):
        mesh.load_obj(path, repair=True)


def test_an_open_mesh_warns_only_where_a_closed_body_is_expected() -> None:
    vertices, faces = closed_sphere()
    open_faces = faces[3:]
    rim = len(mesh.boundary_edges(open_faces))
    assert rim == len(mesh.boundary_edges(faces[:3]))
    with pytest.warns(OpenMeshWarning, match=rf"open \({rim} boundary edges"):
        mesh.from_mesh(vertices, open_faces, stabilise="center")
    # A sheet (no stabiliser, or the antipodes) may well be open: no warning.
    mesh.from_mesh(vertices, open_faces)
    mesh.from_mesh(vertices, open_faces, stabilise="opposite")
    assert issubclass(OpenMeshWarning, mesh.MeshWarning)
