"""An independent counter of a triangle mesh's self-intersections, for the self-contact tests.

A mesh edge *crosses* a triangle when the segment meets the triangle and shares no node with
it.  The counter finds candidate (edge, triangle) pairs with a uniform grid of cells twice the
median edge (each edge and triangle is entered in every cell its box touches, so the cost is
linear in the mesh size while edges keep their scale), then decides each pair exactly with orientation signs
(signed volumes): the segment's ends lie on opposite sides of the triangle's plane, each
farther from it than rounding (a volume of 1e-10 L^3, L the longest edge), and the segment's
line passes the triangle's three edges on the same side (or on an edge).  An end lying in
the plane to rounding, as when the edge and the triangle are coplanar neighbours of a flat
sheet, is not a crossing.
"""

from __future__ import annotations

import numpy as np


def mesh_edges(faces: np.ndarray) -> np.ndarray:
    """The distinct edges (E, 2) of triangles ``faces`` (F, 3), lower node first."""
    faces = np.asarray(faces, dtype=np.int64)
    pairs = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    pairs.sort(axis=1)
    return np.unique(pairs, axis=0)


def _orient(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Signed volume (times 6) of tetrahedra (a, b, c, d), row by row."""
    return np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a)


def segments_cross_triangles(p: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray,
                             c: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Whether segment (p, q) passes through triangle (a, b, c), row by row: its ends on either
    side of the plane by more than ``tolerance`` (a signed volume, m^3, times 6)."""
    sp = _orient(a, b, c, p)
    sq = _orient(a, b, c, q)
    straddles = (sp < -tolerance) & (sq > tolerance) | (sp > tolerance) & (sq < -tolerance)
    e0 = _orient(p, q, a, b)
    e1 = _orient(p, q, b, c)
    e2 = _orient(p, q, c, a)
    inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
    return straddles & inside


def _cell_entries(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cells (N, 3), item index (N,)): every cell of every box, the boxes given by their
    lowest and highest cells (B, 3)."""
    spans = hi - lo + 1
    counts = spans.prod(axis=1)
    owners = np.repeat(np.arange(len(lo)), counts)
    k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    sx, sy = spans[owners, 0], spans[owners, 1]
    local = np.column_stack([k % sx, (k // sx) % sy, k // (sx * sy)])
    return lo[owners] + local, owners


def _tolerance(x: np.ndarray, edges: np.ndarray) -> float:
    """Rounding level of the signed volumes: 1e-10 L^3 with L the longest edge (m^3)."""
    if len(edges) == 0:
        return 0.0
    longest = float(np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1).max())
    return 1e-10 * longest**3


def crossing_pairs(x: np.ndarray, faces: np.ndarray, edges: np.ndarray | None = None) -> np.ndarray:
    """The (edge, triangle) index pairs (K, 2) where a mesh edge crosses a triangle it shares no
    node with, for positions ``x`` (n, 3) and triangles ``faces`` (F, 3)."""
    x = np.asarray(x, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    edges = mesh_edges(faces) if edges is None else np.asarray(edges, dtype=np.int64)
    if len(faces) == 0 or len(edges) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    lengths = np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)
    cell = max(2.0 * float(np.median(lengths)), 1e-12)
    tri_points = x[faces]
    edge_points = x[edges]
    t_cells, t_owner = _cell_entries(np.floor(tri_points.min(axis=1) / cell).astype(np.int64),
                                     np.floor(tri_points.max(axis=1) / cell).astype(np.int64))
    e_cells, e_owner = _cell_entries(np.floor(edge_points.min(axis=1) / cell).astype(np.int64),
                                     np.floor(edge_points.max(axis=1) / cell).astype(np.int64))
    low = np.minimum(t_cells.min(axis=0), e_cells.min(axis=0))
    span = np.maximum(t_cells.max(axis=0), e_cells.max(axis=0)) - low + 1

    def key(cells: np.ndarray) -> np.ndarray:
        shifted = cells - low
        return (shifted[:, 0] * span[1] + shifted[:, 1]) * span[2] + shifted[:, 2]

    t_key = key(t_cells)
    order = np.argsort(t_key, kind="stable")
    t_key, t_owner = t_key[order], t_owner[order]
    e_key = key(e_cells)
    start = np.searchsorted(t_key, e_key, side="left")
    count = np.searchsorted(t_key, e_key, side="right") - start
    total = int(count.sum())
    if total == 0:
        return np.zeros((0, 2), dtype=np.int64)
    edge_of = np.repeat(e_owner, count)
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    tri_of = t_owner[np.repeat(start, count) + offset]
    pairs = np.unique(edge_of * len(faces) + tri_of)
    edge_of, tri_of = pairs // len(faces), pairs % len(faces)
    e = edges[edge_of]
    f = faces[tri_of]
    shared = (e[:, :1] == f).any(axis=1) | (e[:, 1:] == f).any(axis=1)
    edge_of, tri_of, e, f = edge_of[~shared], tri_of[~shared], e[~shared], f[~shared]
    # boxes must overlap
    e_lo, e_hi = np.minimum(x[e[:, 0]], x[e[:, 1]]), np.maximum(x[e[:, 0]], x[e[:, 1]])
    f_pts = x[f]
    overlap = ((e_lo <= f_pts.max(axis=1)) & (f_pts.min(axis=1) <= e_hi)).all(axis=1)
    edge_of, tri_of, e, f = edge_of[overlap], tri_of[overlap], e[overlap], f[overlap]
    hit = segments_cross_triangles(x[e[:, 0]], x[e[:, 1]], x[f[:, 0]], x[f[:, 1]], x[f[:, 2]], _tolerance(x, edges))
    return np.column_stack([edge_of[hit], tri_of[hit]])


def count_crossings(x: np.ndarray, faces: np.ndarray, edges: np.ndarray | None = None) -> int:
    """How many (edge, triangle) pairs cross (see :func:`crossing_pairs`)."""
    return len(crossing_pairs(x, faces, edges))


def count_crossings_brute(x: np.ndarray, faces: np.ndarray) -> int:
    """The same count over every (edge, triangle) pair, for checking the grid on small meshes."""
    x = np.asarray(x, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    edges = mesh_edges(faces)
    ei, fi = np.meshgrid(np.arange(len(edges)), np.arange(len(faces)), indexing="ij")
    ei, fi = ei.ravel(), fi.ravel()
    e, f = edges[ei], faces[fi]
    keep = ~((e[:, :1] == f).any(axis=1) | (e[:, 1:] == f).any(axis=1))
    e, f = e[keep], f[keep]
    tolerance = _tolerance(x, edges)
    return int(segments_cross_triangles(x[e[:, 0]], x[e[:, 1]], x[f[:, 0]], x[f[:, 1]], x[f[:, 2]], tolerance).sum())
