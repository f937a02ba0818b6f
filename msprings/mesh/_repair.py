"""Mesh repair: merging duplicate vertices and dropping the faces a spring network cannot use
(repeated, degenerate), the vertices no face uses, and counting open boundary edges.
NumPy only, O(n log n) in the vertex and face counts (sorting on integer keys).

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._geometry import _edge_groups, _half_edges, _points, _row_keys, _triangles
from .._system import real_scalar

__all__ = ["RepairReport", "boundary_edges", "close_holes", "repair"]

#: The default merge tolerance of :func:`repair`, relative to the bounding-box diagonal.
DEFAULT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair` changed.

    Attributes
    ----------
    merged_vertices : int
        Vertices merged into another one closer than the tolerance.
    repeated_faces : int
        Faces dropped because an earlier face has the same three vertices (in any order or
        orientation).
    degenerate_faces : int
        Faces dropped because they have zero area: two corners the same vertex (also after
        merging) or all three within the tolerance of one straight line.
    unused_vertices : int
        Vertices removed because no remaining face uses them.
    boundary_edges : int
        Edges of the repaired mesh used by exactly one face: 0 for a closed surface.  Not
        changed by the repair (holes are not filled), only counted.
    tolerance : float
        The absolute merge distance used (m).
    kept_vertices : ndarray of int64, shape (n_new,)
        For each vertex of the repaired mesh, its index in the input (the first of the vertices
        merged into it): ``uv[report.kept_vertices]`` carries per-vertex data along.
    kept_faces : ndarray of int64, shape (F_new,)
        For each face of the repaired mesh, its index in the input.
    """

    merged_vertices: int
    repeated_faces: int
    degenerate_faces: int
    unused_vertices: int
    boundary_edges: int
    tolerance: float
    kept_vertices: np.ndarray
    kept_faces: np.ndarray

    @property
    def changed(self) -> bool:
        """True if the repair changed the mesh (a boundary alone changes nothing)."""
        return bool(self.merged_vertices or self.repeated_faces or self.degenerate_faces or self.unused_vertices)

    def __str__(self) -> str:
        return (f"merged {self.merged_vertices} vertices, dropped {self.repeated_faces} repeated and "
                f"{self.degenerate_faces} degenerate faces, removed {self.unused_vertices} unused vertices; "
                f"{self.boundary_edges} open boundary edges")


def boundary_edges(faces: ArrayLike) -> np.ndarray:
    """Edges used by exactly one triangle, as sorted pairs ``(i, j)``, ``i < j``, shape (B, 2).

    Empty for a closed (watertight) surface; an open sheet's rim, or the rim of every hole.

    Parameters
    ----------
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.

    Returns
    -------
    numpy.ndarray of int64, shape (B, 2)
        The boundary edges.

    Notes
    -----
    A fast helper: the arrays are not checked, so a wrong shape or an index out of range
    fails inside NumPy (ValueError or IndexError).
    """
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.int64)
    pairs, _ = _half_edges(f)
    order, starts, counts = _edge_groups(pairs)
    return pairs[order[starts[counts == 1]]]


def _merge_groups(x: np.ndarray, distance: float) -> np.ndarray:
    """For every vertex, the lowest index of the vertices within ``distance`` of it (joined
    transitively), shape (n,).

    Vertices are binned in cubes of side ``distance``; two vertices that close lie in the same
    or neighbouring cubes, so only those pairs are measured.  Labels then spread to the lowest
    index of each connected group.
    """
    n = x.shape[0]
    label = np.arange(n)
    if n < 2:
        return label
    if distance == 0.0:
        # Exact duplicates only: equal coordinates, found by sorting the rows.
        _, first, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
        return first[inverse.reshape(-1)]
    cell = np.floor((x - x.min(axis=0)) / distance).astype(np.int64)
    span = cell.max(axis=0) + 3
    # Shift by one so that a neighbour's key (cell - 1) stays non-negative.
    key = ((cell[:, 0] + 1) * span[1] + cell[:, 1] + 1) * span[2] + cell[:, 2] + 1
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    first: list[np.ndarray] = []
    second: list[np.ndarray] = []
    # The same cube and the 13 neighbours "after" it cover every unordered pair of cubes once.
    offsets = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1) if (a, b, c) >= (0, 0, 0)]
    for a, b, c in offsets:
        target = key + (a * span[1] + b) * span[2] + c
        low = np.searchsorted(sorted_key, target, side="left")
        high = np.searchsorted(sorted_key, target, side="right")
        count = high - low
        if not count.any():
            continue
        query = np.repeat(np.arange(n), count)
        position = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        other = order[np.repeat(low, count) + position]
        keep = other > query if (a, b, c) == (0, 0, 0) else np.ones(len(other), dtype=bool)
        query, other = query[keep], other[keep]
        close = np.einsum("ij,ij->i", x[query] - x[other], x[query] - x[other]) <= distance * distance
        first.append(query[close])
        second.append(other[close])
    i = np.concatenate(first)
    j = np.concatenate(second)
    if len(i) == 0:
        return label
    # Spread the lowest label across each pair until nothing changes (a few rounds for the small
    # clusters duplicates form; each round is O(pairs)).
    while True:
        lowest = np.minimum(label[i], label[j])
        before = label.copy()
        np.minimum.at(label, i, lowest)
        np.minimum.at(label, j, lowest)
        label = label[label]
        if np.array_equal(label, before):
            return label


def _degenerate(x: np.ndarray, faces: np.ndarray, distance: float) -> np.ndarray:
    """Faces with a repeated vertex, or whose height over the longest side is at most
    ``distance`` (all corners within it of one line), or that the core's relative area test
    would refuse."""
    repeated = (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 0] == faces[:, 2])
    a, b, c = x[faces[:, 0]], x[faces[:, 1]], x[faces[:, 2]]
    normal = np.cross(b - a, c - a)
    twice_area = np.sqrt(np.einsum("ij,ij->i", normal, normal))
    sides = np.stack([np.einsum("ij,ij->i", d, d) for d in (b - a, c - b, a - c)], axis=1)
    longest = np.sqrt(sides.max(axis=1))
    scale = sides[:, 0] + sides[:, 2]
    flat = ~(twice_area * twice_area > 1e-24 * scale * scale) | (twice_area <= distance * longest)
    return repeated | flat


def repair(vertices: ArrayLike, faces: ArrayLike, *,
           tolerance: float = DEFAULT_TOLERANCE) -> tuple[np.ndarray, np.ndarray, RepairReport]:
    """Cleans a triangle mesh so that :func:`from_mesh` accepts it.

    In this order:

    1. vertices closer than ``tolerance`` times the bounding-box diagonal are merged into the
       one with the lowest index (joined transitively), and faces renumbered;
    2. degenerate faces are dropped: two corners on the same vertex, or zero area (all three
       corners within the merge distance of one straight line: the triangle's height over its
       longest side is at most that distance);
    3. repeated faces are dropped: a face with the same three vertices as an earlier one, in
       any order or orientation (the first is kept);
    4. vertices that no face uses are removed, and the rest renumbered in their old order.

    Holes are not filled: the open boundary edges (used by one face only) of the result are
    counted in the report.  Orientation is not changed.  Every step sorts integer keys, so a
    mesh of a million triangles takes about a second.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Positions (m), finite.
    faces : array_like of int, shape (F, 3)
        0-based vertex indices.
    tolerance : float
        Merge distance relative to the bounding-box diagonal (dimensionless, >= 0; default
        1e-6: a micrometre on a 1 m model).  0 merges only exactly equal positions.  A large
        tolerance puts many vertices into one cube of the search grid, and their comparisons
        grow with the square of their number.

    Returns
    -------
    vertices : ndarray, shape (n_new, 3)
    faces : ndarray of int64, shape (F_new, 3)
    report : RepairReport
        Counts of what changed, the absolute tolerance, and the input index of every kept
        vertex and face (to carry texture coordinates or normals along).

    Raises
    ------
    ValueError
        Bad shapes, non-finite positions, indices outside the vertices, a negative or
        non-finite tolerance.
    TypeError
        Non-numeric input.
    """
    x = _points(vertices, "vertices", 3)
    f = _triangles(faces, x.shape[0])
    relative = real_scalar(tolerance, "tolerance")
    if not (np.isfinite(relative) and relative >= 0.0):
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}")
    diagonal = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0))) if x.shape[0] else 0.0
    distance = relative * diagonal

    representative = _merge_groups(x, distance)
    merged = int(np.count_nonzero(representative != np.arange(x.shape[0])))
    f = representative[f]

    degenerate = _degenerate(x, f, distance)
    face_index = np.flatnonzero(~degenerate)
    kept = f[face_index]

    repeated = 0
    if len(kept) > 1:
        _, first = np.unique(_row_keys(np.sort(kept, axis=1)), return_index=True)
        first.sort()
        repeated = len(kept) - len(first)
        face_index, kept = face_index[first], kept[first]

    used = np.zeros(x.shape[0], dtype=bool)
    used[kept.reshape(-1)] = True
    kept_vertices = np.flatnonzero(used)
    renumber = np.full(x.shape[0], -1, dtype=np.int64)
    renumber[kept_vertices] = np.arange(len(kept_vertices))
    new_faces = renumber[kept].reshape(-1, 3)
    report = RepairReport(
        merged_vertices=merged,
        repeated_faces=repeated,
        degenerate_faces=int(np.count_nonzero(degenerate)),
        unused_vertices=x.shape[0] - merged - len(kept_vertices),
        boundary_edges=len(boundary_edges(new_faces)),
        tolerance=distance,
        kept_vertices=kept_vertices,
        kept_faces=face_index,
    )
    return x[kept_vertices], new_faces, report


def close_holes(vertices: ArrayLike, faces: ArrayLike, *, max_edges: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Closes the holes of a surface: each loop of open boundary edges gets a new vertex at the
    mean of its vertices and a fan of triangles to it, oriented like the faces around the hole.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Consistently oriented triangles.
    max_edges : int, optional
        Close only holes of at most this many edges (a scanned object's small gaps), leaving a
        large opening (the rim of a bowl, a sheet's edge) open.  Default: every hole.

    Returns
    -------
    vertices : ndarray, shape (n + H, 3)
        The input vertices (same indices) and one new vertex per closed hole.
    faces : ndarray, shape (F + B, 3)
        The input faces, then the fans.
    closed : int
        The number of holes closed (H).

    Raises
    ------
    ValueError
        A boundary vertex where two holes meet, or a boundary that does not close into loops
        (inconsistently oriented faces).
    """
    x = _points(vertices, "vertices", 3)
    f = _triangles(faces, x.shape[0])
    if max_edges is not None and (isinstance(max_edges, bool) or not isinstance(max_edges, (int, np.integer))
                                  or max_edges < 3):
        raise ValueError(f"max_edges must be an integer >= 3, got {max_edges!r}")
    rim = boundary_edges(f)
    if len(rim) == 0:
        return x.copy(), f.copy(), 0
    # The rim's edges as their one face runs them: a hole's loop runs the other way round.
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    keys = _row_keys(np.concatenate([np.sort(directed, axis=1), rim]))
    on_rim = np.isin(keys[:len(directed)], keys[len(directed):])
    # next vertex along the hole: the reverse of each rim half-edge (b -> a)
    starts, ends = directed[on_rim, 1], directed[on_rim, 0]
    following: dict[int, int] = {}
    for start, end in zip(starts.tolist(), ends.tolist()):
        if start in following:
            raise ValueError(f"vertex {start} is on two holes (their rims touch there): a boundary that is not a "
                             "set of simple loops cannot be closed with fans")
        following[start] = end
    loops: list[list[int]] = []
    seen: set[int] = set()
    for first in following:
        if first in seen:
            continue
        loop = [first]
        seen.add(first)
        vertex = following[first]
        while vertex != first:
            if vertex in seen or vertex not in following:
                raise ValueError(f"the boundary through vertex {vertex} does not close into a loop")
            loop.append(vertex)
            seen.add(vertex)
            vertex = following[vertex]
        loops.append(loop)
    new_vertices, new_faces = [], []
    for loop in loops:
        if max_edges is not None and len(loop) > max_edges:
            continue
        centre = x.shape[0] + len(new_vertices)
        new_vertices.append(x[loop].mean(axis=0))
        ring = np.array(loop)
        new_faces.append(np.stack([ring, np.roll(ring, -1), np.full(len(ring), centre)], axis=1))
    if not new_vertices:
        return x.copy(), f.copy(), 0
    return (np.concatenate([x, np.array(new_vertices)]), np.concatenate([f] + new_faces).astype(np.int64),
            len(new_vertices))
