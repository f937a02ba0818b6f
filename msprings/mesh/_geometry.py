"""Triangle mesh geometry: the Mesh type, normals, enclosed volume, edge topology and an
icosphere.  NumPy only; lengths in metres.

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .._system import index_array, real_scalar

if TYPE_CHECKING:
    from ._repair import RepairReport

__all__ = ["InteriorEdges", "Mesh", "enclosed_volume", "face_normals", "icosphere", "interior_edge_opposites",
           "unique_edges", "vertex_normals"]


@dataclass
class Mesh:
    """A triangle mesh with optional per-vertex texture coordinates and normals.

    Attributes
    ----------
    vertices : ndarray, shape (n, 3), float64
        Vertex positions (m).
    faces : ndarray, shape (F, 3), int64
        Vertex indices of each triangle (0-based), counter-clockwise seen from outside.
    uv : ndarray, shape (n, 2), float64, or None
        Texture coordinates, one per vertex.
    normals : ndarray, shape (n, 3), float64, or None
        Vertex normals, one per vertex.
    repair_report : RepairReport or None
        What :func:`repair` changed, for a mesh read with ``load_obj(..., repair=True)``.
    """

    vertices: np.ndarray
    faces: np.ndarray
    uv: np.ndarray | None = None
    normals: np.ndarray | None = None
    repair_report: RepairReport | None = None

    def __post_init__(self) -> None:
        self.vertices = _points(self.vertices, "vertices", 3)
        n = self.vertices.shape[0]
        self.faces = _triangles(self.faces, n)
        if self.uv is not None:
            self.uv = _points(self.uv, "uv", 2, rows=n)
        if self.normals is not None:
            self.normals = _points(self.normals, "normals", 3, rows=n)

    @property
    def n_vertices(self) -> int:
        """Number of vertices."""
        return int(self.vertices.shape[0])

    @property
    def n_faces(self) -> int:
        """Number of triangles."""
        return int(self.faces.shape[0])


class InteriorEdges(NamedTuple):
    """Edge adjacency of a triangle mesh (see :func:`interior_edge_opposites`)."""

    edges: np.ndarray
    """(I, 2) int64: edges shared by exactly two triangles, as sorted pairs (i < j)."""
    opposites: np.ndarray
    """(I, 2) int64: for each of those edges, the vertex of each triangle not on the edge."""
    nonmanifold: np.ndarray
    """(K, 2) int64: edges shared by more than two triangles (empty for a manifold mesh)."""


# ---- validation helpers -------------------------------------------------------------


def _points(value: ArrayLike, name: str, width: int, rows: int | None = None) -> np.ndarray:
    """A finite float64 (rows, width) array, or ValueError/TypeError naming ``name``."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be an array of real numbers: {error}") from None
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must contain real numbers, got dtype {array.dtype}")
    if array.shape == (0,) and rows in (None, 0):  # an empty list
        array = array.reshape(0, width)
    if array.ndim != 2 or array.shape[1] != width:
        raise ValueError(f"{name} must have shape (n, {width}), got {array.shape}")
    if rows is not None and array.shape[0] != rows:
        raise ValueError(f"{name} must have shape ({rows}, {width}) (one row per vertex), got {array.shape}")
    array = np.array(array, dtype=np.float64, order="C")
    if not np.all(np.isfinite(array)):
        bad = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise ValueError(f"{name}[{bad}] is not finite")
    return array


def _triangles(value: ArrayLike, n_vertices: int) -> np.ndarray:
    """An int64 (F, 3) array of indices into ``n_vertices`` vertices."""
    return index_array(value, "faces", 3, n_vertices, "vertex")


_ANY_INDEX = int(np.iinfo(np.int64).max)


def _elements(value: ArrayLike, name: str, width: int, count: int = _ANY_INDEX, noun: str = "vertex") -> np.ndarray:
    """An int64 (rows, width) array of indices into ``count`` items (any index >= 0 by default),
    with errors naming ``name``: the shared check of the public mesh helpers."""
    array = index_array(value, name, width, count, noun) if count != _ANY_INDEX else None
    if array is not None:
        return array
    try:
        array = index_array(value, name, width, count, noun)
    except ValueError as error:
        if "outside" not in str(error):
            raise
        rows = np.asarray(value)
        bad = int(np.flatnonzero((rows < 0).any(axis=1))[0])
        raise ValueError(f"{name}[{bad}] = {tuple(int(i) for i in rows[bad])} holds a negative {noun} index") from None
    return array


def _mesh_arrays(vertices: ArrayLike, elements: ArrayLike, width: int = 3, vertices_name: str = "vertices",
                 elements_name: str = "faces", noun: str = "vertex") -> tuple[np.ndarray, np.ndarray]:
    """Checked ``vertices`` (n, 3) finite float64 and ``elements`` (rows, width) int64 indices into them."""
    x = _points(vertices, vertices_name, 3)
    return x, _elements(elements, elements_name, width, len(x), noun)


# ---- geometry -----------------------------------------------------------------------


def face_normals(vertices: ArrayLike, faces: ArrayLike) -> np.ndarray:
    """Unnormalised face normals ``(b - a) x (c - a)``, shape (F, 3) (m^2): twice the area
    times the unit normal, pointing to the side from which ``a, b, c`` run counter-clockwise.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.

    Returns
    -------
    numpy.ndarray, shape (F, 3)
        The unnormalised normals (m^2).

    Raises
    ------
    TypeError
        If ``vertices`` is not real numbers or ``faces`` not integers.
    ValueError
        If ``vertices`` is not (n, 3) or not finite, or ``faces`` is not (F, 3) or refers
        to a vertex outside ``0..n-1``.
    """
    x, f = _mesh_arrays(vertices, faces)
    a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
    return np.cross(b - a, c - a)


def vertex_normals(vertices: ArrayLike, faces: ArrayLike) -> np.ndarray:
    """Area-weighted unit vertex normals, shape (n, 3).

    The sum of the unnormalised normals of the triangles around each vertex, normalised
    (the same rule as :meth:`msprings.System.vertex_normals`); zero for a vertex in no
    triangle.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.

    Returns
    -------
    numpy.ndarray, shape (n, 3)
        Unit normals (dimensionless).

    Raises
    ------
    TypeError
        If ``vertices`` is not real numbers or ``faces`` not integers.
    ValueError
        If ``vertices`` is not (n, 3) or not finite, or ``faces`` is not (F, 3) or refers
        to a vertex outside ``0..n-1``.
    """
    x, f = _mesh_arrays(vertices, faces)
    normals = np.zeros_like(x)
    a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
    per_face = np.cross(b - a, c - a)
    for corner in range(3):
        np.add.at(normals, f[:, corner], per_face)
    length = np.linalg.norm(normals, axis=1)
    nonzero = length > 0.0
    normals[nonzero] /= length[nonzero, None]
    return normals


def enclosed_volume(vertices: ArrayLike, faces: ArrayLike) -> float:
    """Volume (m^3) enclosed by a closed, outward-oriented triangle mesh.

    By the divergence theorem, ``V = sum over triangles of a . (b x c) / 6``; negative if the
    faces point inwards.  Meaningless for an open mesh.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.

    Returns
    -------
    float
        The enclosed volume (m^3).

    Raises
    ------
    TypeError
        If ``vertices`` is not real numbers or ``faces`` not integers.
    ValueError
        If ``vertices`` is not (n, 3) or not finite, or ``faces`` is not (F, 3) or refers
        to a vertex outside ``0..n-1``.
    """
    x, f = _mesh_arrays(vertices, faces)
    a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


# ---- topology -----------------------------------------------------------------------


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One int64 per row of non-negative integers, equal exactly where the rows are equal, so
    that sorting or ``np.unique`` on 1-D keys (fast) replaces them on rows (slow).

    Columns are folded in one at a time: the key so far is replaced by its rank among the
    distinct keys before the next column is appended, so no product can overflow.
    """
    key = rows[:, 0].astype(np.int64)
    for column in range(1, rows.shape[1]):
        values = rows[:, column].astype(np.int64)
        width = int(values.max()) + 1 if len(values) else 1
        if len(key) and int(key.max()) >= (2**62) // width:
            key = np.unique(key, return_inverse=True)[1].reshape(-1)
        key = key * width + values
    return key


def _half_edges(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The three edges of every triangle as sorted pairs (3F, 2) and the vertex opposite each."""
    f = faces
    first = np.concatenate([f[:, 0], f[:, 1], f[:, 2]])
    second = np.concatenate([f[:, 1], f[:, 2], f[:, 0]])
    opposite = np.concatenate([f[:, 2], f[:, 0], f[:, 1]])
    return np.stack([np.minimum(first, second), np.maximum(first, second)], axis=1), opposite


def _edge_groups(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorts edge pairs (a stable sort on one integer key per pair): the order, the start of
    each group of equal pairs in it, and each group's size."""
    order = np.argsort(_row_keys(pairs), kind="stable")
    ordered = pairs[order]
    new_group = np.ones(len(pairs), dtype=bool)
    new_group[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    starts = np.flatnonzero(new_group)
    return order, starts, np.diff(np.append(starts, len(pairs)))


def unique_edges(faces: ArrayLike) -> np.ndarray:
    """The distinct edges of a triangle mesh, shape (E, 2) int64.

    Each edge is a sorted pair ``(i, j)`` with ``i < j``, and the rows are sorted
    lexicographically.  For a closed mesh ``E = 3 F / 2``.

    Parameters
    ----------
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.

    Returns
    -------
    numpy.ndarray of int64, shape (E, 2)
        The edges.

    Raises
    ------
    TypeError
        If ``faces`` is not integers.
    ValueError
        If ``faces`` is not (F, 3) or holds a negative index.
    """
    f = _elements(faces, "faces", 3)
    if f.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.int64)
    pairs, _ = _half_edges(f)
    order, starts, _ = _edge_groups(pairs)
    return pairs[order[starts]]


def interior_edge_opposites(faces: ArrayLike) -> InteriorEdges:
    """Edges shared by exactly two triangles, with the two vertices opposite each.

    For the triangles ``(a, b, c)`` and ``(b, a, d)`` sharing the edge ``a b`` the opposite
    vertices are ``c`` and ``d``: a spring between them resists folding about the edge (a
    bending spring).  Edges on the boundary (one triangle) are left out, and edges shared by
    more than two triangles are returned separately in ``nonmanifold``.

    Parameters
    ----------
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.

    Returns
    -------
    InteriorEdges
        ``edges`` (E, 2) and ``opposite`` (E, 2) vertex indices, and the edges of more
        than two triangles in ``nonmanifold``.

    Raises
    ------
    TypeError
        If ``faces`` is not integers.
    ValueError
        If ``faces`` is not (F, 3) or holds a negative index.
    """
    f = _elements(faces, "faces", 3)
    empty = np.zeros((0, 2), dtype=np.int64)
    if f.shape[0] == 0:
        return InteriorEdges(empty, empty.copy(), empty.copy())
    pairs, opposite = _half_edges(f)
    order, starts, counts = _edge_groups(pairs)
    pairs, opposite = pairs[order], opposite[order]
    interior = starts[counts == 2]
    edges = pairs[interior]
    opposites = np.stack([opposite[interior], opposite[interior + 1]], axis=1)
    return InteriorEdges(edges, opposites, pairs[starts[counts > 2]])


# ---- shapes -------------------------------------------------------------------------


#: icosphere's largest subdivision: 10 * 4**13 + 2 (about 6.7e8) vertices, still within the core's
#: int32 node indices; every subdivision quadruples them.
MAX_SUBDIVISIONS = 13


def icosphere(subdivisions: int = 2, radius: float = 1.0, center: ArrayLike = (0.0, 0.0, 0.0)) -> Mesh:
    """A sphere triangulated by subdividing a regular icosahedron.

    Every subdivision splits each triangle into four at its edge midpoints, which are pushed
    out to the sphere: ``10 * 4**s + 2`` vertices, ``30 * 4**s`` edges, ``20 * 4**s`` faces.
    Faces are oriented outwards (counter-clockwise seen from outside).  ``uv`` is the
    spherical parametrisation ``u = 1/2 + atan2(z, x) / (2 pi)``, ``v = 1/2 + asin(y / r) / pi``
    (y up) per vertex; the mesh is not cut at the seam, so the texture wraps there.
    ``normals`` are the exact sphere normals.

    Parameters
    ----------
    subdivisions : int, default 2
        0 (the icosahedron) to :data:`MAX_SUBDIVISIONS`.
    radius : float, default 1.0
        Sphere radius (m), > 0.
    center : array_like, shape (3,), default (0, 0, 0)
        Sphere centre (m).

    Returns
    -------
    Mesh
        The sphere, with ``uv`` and ``normals``.

    Raises
    ------
    TypeError
        If ``subdivisions`` is not an integer.
    ValueError
        If ``subdivisions`` is out of range, ``radius`` is not finite and > 0, or ``center``
        is not 3 finite numbers.
    """
    if isinstance(subdivisions, bool) or not isinstance(subdivisions, (int, np.integer)):
        raise TypeError(f"subdivisions must be an integer, not {type(subdivisions).__name__}")
    if not 0 <= subdivisions <= MAX_SUBDIVISIONS:
        raise ValueError(f"subdivisions = {subdivisions if abs(subdivisions) < 2**63 else 'a huge number'} is out "
                         f"of range: it must be between 0 and {MAX_SUBDIVISIONS}")
    radius = real_scalar(radius, "radius")
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be finite and > 0, got {radius!r}")
    centre = np.asarray(center, dtype=np.float64)
    if centre.shape != (3,) or not np.all(np.isfinite(centre)):
        raise ValueError(f"center must be 3 finite numbers, got {center!r}")
    phi = (1.0 + math.sqrt(5.0)) / 2.0
    points = [
        [-1, phi, 0], [1, phi, 0], [-1, -phi, 0], [1, -phi, 0],
        [0, -1, phi], [0, 1, phi], [0, -1, -phi], [0, 1, -phi],
        [phi, 0, -1], [phi, 0, 1], [-phi, 0, -1], [-phi, 0, 1],
    ]
    unit = np.array(points, dtype=np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    faces = np.array(
        [
            [0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11],
            [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8],
            [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
            [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1],
        ],
        dtype=np.int64,
    )
    for _ in range(int(subdivisions)):
        unit, faces = _subdivide(unit, faces)
    u = 0.5 + np.arctan2(unit[:, 2], unit[:, 0]) / (2.0 * math.pi)
    v = 0.5 + np.arcsin(np.clip(unit[:, 1], -1.0, 1.0)) / math.pi
    return Mesh(centre + radius * unit, faces, np.stack([u, v], axis=1), unit.copy())


def _subdivide(unit: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One 1-to-4 split of every triangle, midpoints projected onto the unit sphere."""
    edges = unique_edges(faces)
    n = unit.shape[0]
    midpoints = unit[edges[:, 0]] + unit[edges[:, 1]]
    midpoints /= np.linalg.norm(midpoints, axis=1, keepdims=True)
    # Index of the midpoint of edge (i, j), looked up through the sorted edge keys.
    keys = edges[:, 0] * n + edges[:, 1]

    def midpoint(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        low, high = np.minimum(a, b), np.maximum(a, b)
        return n + np.searchsorted(keys, low * n + high)

    a, b, c = faces[:, 0], faces[:, 1], faces[:, 2]
    ab, bc, ca = midpoint(a, b), midpoint(b, c), midpoint(c, a)
    new_faces = np.concatenate(
        [np.stack(t, axis=1) for t in ((a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca))]
    )
    return np.concatenate([unit, midpoints]), new_faces
