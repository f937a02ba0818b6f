"""The crossing counter the self-contact tests rely on, checked on known configurations and
against every pair on small random meshes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossings import count_crossings, count_crossings_brute, crossing_pairs, mesh_edges  # noqa: E402

TRIANGLE = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def triangle_and_segment(p: tuple[float, float, float], q: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """A triangle in z = 0 and a segment (p, q) as the edge of a narrow second triangle
    (p, q, q + (0.1, 0, 0))."""
    x = np.vstack([TRIANGLE, p, q, np.add(q, (0.1, 0.0, 0.0))])
    faces = np.array([[0, 1, 2], [3, 4, 5]])
    return x, faces


def test_segments_through_the_triangle_cross_it() -> None:
    """The narrow triangle pierces the first one along its two long edges (3-4 and 3-5);
    no edge of the first triangle meets the narrow one."""
    x, faces = triangle_and_segment((0.2, 0.2, -1.0), (0.2, 0.2, 1.0))
    pairs = crossing_pairs(x, faces)
    edges = mesh_edges(faces)
    assert sorted(tuple(edges[e]) for e in pairs[:, 0]) == [(3, 4), (3, 5)]
    assert set(pairs[:, 1]) == {0}


def test_segment_beside_above_or_parallel_does_not_cross() -> None:
    for p, q in [((0.8, 0.8, -1.0), (0.8, 0.8, 1.0)),   # through the plane, outside the triangle
                 ((0.2, 0.2, 0.1), (0.2, 0.2, 1.0)),    # above it
                 ((0.1, 0.1, 0.01), (0.5, 0.1, 0.01))]:  # parallel, just above
        x, faces = triangle_and_segment(p, q)
        assert count_crossings(x, faces) == 0, (p, q)


def test_an_edge_of_the_triangle_itself_is_never_counted() -> None:
    """Two triangles sharing an edge and folded flat onto each other share nodes: no crossing."""
    x = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.3, 0.3, 0.0]])
    assert count_crossings(x, np.array([[0, 1, 2], [0, 1, 3]])) == 0


def grid_mesh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A flat n x n grid in the x-z plane, two triangles per cell."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    x = np.column_stack([j.ravel() / (n - 1), np.zeros(n * n), i.ravel() / (n - 1)])
    faces = []
    for r in range(n - 1):
        for c in range(n - 1):
            a, b, d, e = r * n + c, r * n + c + 1, (r + 1) * n + c, (r + 1) * n + c + 1
            faces += [[a, b, e], [a, e, d]]
    return x, np.array(faces)


def test_flat_and_gently_folded_sheets_do_not_cross_a_sheet_pushed_through_itself_does() -> None:
    x, faces = grid_mesh(12)
    assert count_crossings(x, faces) == 0
    # folded back over itself round a half-circle of radius 0.05 (arc length s = z): no crossing
    r, s0 = 0.05, 0.4
    s = x[:, 2]
    theta = np.clip((s - s0) / r, 0.0, np.pi)
    beyond = np.maximum(s - s0 - np.pi * r, 0.0)
    folded = np.column_stack([x[:, 0], r - r * np.cos(theta), s0 + r * np.sin(theta) - beyond])
    folded[s < s0, 2] = s[s < s0]
    assert count_crossings(folded, faces) == 0
    # one node of the upper layer pushed down through the lower layer: its edges cross
    through = folded.copy()
    node = int(np.argmin(np.linalg.norm(folded - (0.5, 2 * r, 0.2), axis=1)))
    through[node, 1] = -0.05
    assert count_crossings(through, faces) > 0


def test_grid_agrees_with_every_pair_on_random_meshes() -> None:
    rng = np.random.default_rng(3)
    counted = 0
    for trial in range(20):
        x, faces = grid_mesh(6)
        x = x + rng.normal(0.0, 0.15, x.shape)  # crumpled: some edges cross
        brute = count_crossings_brute(x, faces)
        assert count_crossings(x, faces) == brute, trial
        counted += brute
    assert counted > 0  # the check saw crossings, not only empty meshes
