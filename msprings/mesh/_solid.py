"""Solids filled with tetrahedra: a closed surface tetrahedralised, and a volume mesh turned
into springs along its tetrahedra's edges.  Units as in :class:`msprings.System`.

**Filling.**  :func:`tetrahedralize` fills a closed triangle surface with tetrahedra of about a
given edge length.  The built-in mesher (``mesher="builtin"``, SciPy's Delaunay
triangulation) keeps every input vertex as a node with its index:

1. surface edges longer than 1.5 times the edge length are split at their midpoints (the
   triangles on them split with them, so the surface stays the same shape and closed);
2. the points of a body-centred cubic lattice of spacing ``a`` (the edge length) that lie
   inside the surface (ray parity) and at least ``0.45 a`` from it fill the inside;
3. the Delaunay tetrahedralisation of the surface points and the lattice points is made,
   and the tetrahedra whose centroid is inside the surface are kept.

The lattice is jittered by a thousandth of its spacing (a fixed seed, so the result is
reproducible) so that the Delaunay tetrahedralisation of its co-spherical points is unique.
The filling is not constrained to the surface: on a strongly concave part finer than the
lattice, a tetrahedron may bridge a little across it.  Meshers that constrain the surface
(TetGen) or are robust to damaged input (fTetWild), and Gmsh, are optional extras
(``mesher="tetgen"``, ``"ftetwild"``, ``"gmsh"``).

**Springs.**  :func:`from_tetrahedra` puts one spring on every distinct edge of the
tetrahedra.  Each tetrahedron of volume V lumps a quarter of its mass rho V onto each corner.
With a Young's modulus E, an edge of rest length L gets

    k = kappa E V_e / L^2,

V_e the volume of the tetrahedra that have the edge: Van Gelder's rule in volume (A. Van
Gelder, "Approximate simulation of elastic membranes by triangulated spring meshes", Journal
of Graphics Tools 3(2), 1998), which scales with the mesh so that a finer filling of the same
body keeps its stiffness per volume.  A network of central springs has Cauchy's symmetry: its
elastic tensor is fully symmetric, so at best it is an isotropic solid of Poisson's ratio 1/4.
On the body-centred cubic lattice of the built-in filling, the rule alone gives the lattice
the moduli C11 = 10/9 E and C12 = C44 = 4/9 E: along a lattice axis a modulus of 6/7 E, along
a cube diagonal 12/11 E; a filled cube (130 to 9,200 nodes) compressed along an axis measures
0.85 to 0.92 E with the filling's irregular layer along the surface.  kappa = 1.13 makes up
for that average: a filled cube of 320 to 16,800 nodes then measures 0.98 to 1.04 E (1.11 to
1.16 E when it is only 4 to 7 edge lengths across; a part 2 edge lengths thick, 1.28 E) and an
effective Poisson's ratio of 0.27 to 0.29 (the measurements are in tests/test_solid.py and benchmarks/bench_mesh.py).
Other meshers' meshes differ (the same cube with kappa = 1 measures 0.80 to 0.94 E on
fTetWild's, 0.97 E on TetGen's, 1.00 to 1.08 E on Gmsh's), so each has its own kappa
(:data:`STIFFNESS_FACTORS`), and with it 0.93 to 1.08 E.

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._geometry import _elements, _mesh_arrays, _points, _row_keys, enclosed_volume, unique_edges
from ._material import _non_negative
from ._springs import (_SYSTEM_ARGUMENTS, _SYSTEM_ATTRIBUTES, MeshWarning, _material_values, _optional_positive,
                       _per_edge, _pin_mask, _spring_damping)
from .._system import System, index_array, real_scalar

__all__ = ["TetMesh", "boundary_faces", "from_tetrahedra", "read_tetrahedra", "tetrahedralize",
           "tetrahedron_stiffness", "tetrahedron_volumes"]

MESHERS = ("builtin", "tetgen", "ftetwild", "gmsh")

# The six edges of a tetrahedron (corner pairs) and its four faces (outward for a positive one).
_TET_EDGES = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
_TET_FACES = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])


class TetMesh(NamedTuple):
    """A volume mesh: ``nodes`` (N, 3) in m, ``tets`` (T, 4) int64 positively oriented, and
    ``surface`` (F, 3) int64, the outward triangles to draw (on surface nodes)."""

    nodes: np.ndarray
    tets: np.ndarray
    surface: np.ndarray


def tetrahedron_volumes(nodes: ArrayLike, tets: ArrayLike) -> np.ndarray:
    """Signed volumes (m^3) of the tetrahedra, shape (T,): positive when corner 3 is on the side
    of the triangle (0, 1, 2) that its right-hand normal points to.

    Parameters
    ----------
    nodes : array_like, shape (N, 3)
        Node positions (m).
    tets : array_like of int, shape (T, 4)
        Tetrahedra, 0-based node indices.

    Returns
    -------
    numpy.ndarray, shape (T,)
        Signed volumes (m^3).

    Raises
    ------
    TypeError
        If ``nodes`` is not real numbers or ``tets`` not integers.
    ValueError
        If ``nodes`` is not (N, 3) or not finite, or ``tets`` is not (T, 4) or refers to a
        node outside ``0..N-1``.
    """
    x, t = _mesh_arrays(nodes, tets, 4, "nodes", "tets", "node")
    return _tetrahedron_volumes(x, t)


def _tetrahedron_volumes(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    a = x[t[:, 0]]
    return np.einsum("ij,ij->i", x[t[:, 1]] - a, np.cross(x[t[:, 2]] - a, x[t[:, 3]] - a)) / 6.0


def boundary_faces(tets: ArrayLike) -> np.ndarray:
    """The triangles used by exactly one tetrahedron, shape (F, 3), each facing out of its
    tetrahedron (outward for positively oriented tetrahedra): the surface of the volume.

    Parameters
    ----------
    tets : array_like of int, shape (T, 4)
        Tetrahedra, 0-based node indices.

    Returns
    -------
    numpy.ndarray of int64, shape (F, 3)
        The boundary triangles.

    Raises
    ------
    TypeError
        If ``tets`` is not integers.
    ValueError
        If ``tets`` is not (T, 4) or holds a negative index.
    """
    t = _elements(tets, "tets", 4, noun="node")
    return _boundary_faces(t)


def _boundary_faces(t: np.ndarray) -> np.ndarray:
    faces = t[:, _TET_FACES].reshape(-1, 3)
    key = _row_keys(np.sort(faces, axis=1))
    _, first, count = np.unique(key, return_index=True, return_counts=True)
    return faces[np.sort(first[count == 1])]


# kappa for each mesher's fillings: the measured softness (or stiffness) of its meshes made up
# for, so that a filled cube compressed between frictionless plates has the modulus E (the
# body-centred lattice of the built-in filling and fTetWild's meshes are softer than the rule
# alone, TetGen's a little softer and Gmsh's about right).
STIFFNESS_FACTORS = {"builtin": 1.13, "ftetwild": 1.13, "tetgen": 1.03, "gmsh": 1.0}


def tetrahedron_stiffness(nodes: ArrayLike, tets: ArrayLike, youngs_modulus: float,
                          factor: float = 1.0) -> np.ndarray:
    """Each tetrahedron's share of its six edges' stiffnesses (N/m), shape (T, 6), edges in the
    order (0,1), (0,2), (0,3), (1,2), (1,3), (2,3): ``kappa E V / L^2`` with V its volume, L
    the edge's length and kappa = ``factor`` (see the module's docstring and
    :data:`STIFFNESS_FACTORS`).  An edge's spring has the sum of its tetrahedra's shares.

    Parameters
    ----------
    nodes : array_like, shape (N, 3)
        Node positions (m).
    tets : array_like of int, shape (T, 4)
        Tetrahedra, 0-based node indices.
    youngs_modulus : float
        Young's modulus E (Pa).
    factor : float, default 1.0
        kappa (dimensionless).

    Returns
    -------
    numpy.ndarray, shape (T, 6)
        Each tetrahedron's share of its edges' stiffnesses (N/m).

    Raises
    ------
    TypeError
        If ``nodes`` is not real numbers, ``tets`` not integers, or ``youngs_modulus`` or
        ``factor`` not a real number.
    ValueError
        If ``nodes`` is not (N, 3) or not finite, ``tets`` is not (T, 4) or refers to a node
        outside ``0..N-1``, ``youngs_modulus`` is negative or not finite, or ``factor`` is
        not finite and > 0.
    """
    x, t = _mesh_arrays(nodes, tets, 4, "nodes", "tets", "node")
    youngs_modulus = _non_negative(youngs_modulus, "youngs_modulus")
    factor = real_scalar(factor, "factor")
    if not (math.isfinite(factor) and factor > 0.0):
        raise ValueError(f"factor = {factor} must be finite and > 0")
    vectors = x[t[:, _TET_EDGES[:, 1]]] - x[t[:, _TET_EDGES[:, 0]]]  # (T, 6, 3)
    length2 = np.einsum("tei,tei->te", vectors, vectors)
    volume = np.abs(_tetrahedron_volumes(x, t))
    return factor * youngs_modulus * volume[:, None] / length2


def _check_tetrahedra(x: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Positively oriented copies of ``tets``; ValueError for a repeated corner or a flat one."""
    repeated = np.zeros(len(tets), dtype=bool)
    for a in range(4):
        for b in range(a + 1, 4):
            repeated |= tets[:, a] == tets[:, b]
    if repeated.any():
        bad = int(np.flatnonzero(repeated)[0])
        raise ValueError(f"tets[{bad}] = {tuple(int(i) for i in tets[bad])} repeats a node: a tetrahedron needs "
                         "four different nodes")
    volume = _tetrahedron_volumes(x, tets)
    scale = np.einsum("tei,tei->t", *(2 * [x[tets[:, _TET_EDGES[:, 1]]] - x[tets[:, _TET_EDGES[:, 0]]]]))
    flat = ~(np.abs(volume) > 1e-12 * (scale / 6.0) ** 1.5)
    if flat.any():
        bad = int(np.flatnonzero(flat)[0])
        raise ValueError(f"tets[{bad}] = {tuple(int(i) for i in tets[bad])} is flat: its four nodes lie in one "
                         "plane (zero volume)")
    oriented = tets.copy()
    negative = volume < 0
    oriented[negative, 2], oriented[negative, 3] = tets[negative, 3], tets[negative, 2]
    return oriented


# ---- the built-in mesher --------------------------------------------------------------

_TIE = 0.5773502691896258  # the direction (1, _TIE) that breaks ties on edges


def _inside(points: np.ndarray, x: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Whether each point is inside the closed surface: the parity of the triangles a ray from
    the point along +z crosses.  Triangles are bucketed on a grid in (x, y), so the work is
    about (points + triangles) times the surface's depth complexity."""
    tri = x[faces]
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    area2 = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    keep = area2 != 0.0  # a triangle seen edge-on from below crosses no ray
    tri, area2, corners = tri[keep], area2[keep], faces[keep]
    low, high = tri[:, :, :2].min(axis=1), tri[:, :, :2].max(axis=1)
    origin = np.minimum(low.min(axis=0), points[:, :2].min(axis=0)) if len(points) else low.min(axis=0)
    cell = max(float(np.median(np.max(high - low, axis=1))), 1e-300)
    first = np.floor((low - origin) / cell).astype(np.int64)
    last = np.floor((high - origin) / cell).astype(np.int64)
    columns = int(max(last[:, 1].max(), np.floor((points[:, 1].max() - origin[1]) / cell) if len(points) else 0)) + 1
    span = last - first + 1
    count = span[:, 0] * span[:, 1]
    owner = np.repeat(np.arange(len(tri)), count)
    local = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    ix = first[owner, 0] + local // span[owner, 1]
    iy = first[owner, 1] + local % span[owner, 1]
    key = ix * columns + iy
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    result = np.zeros(len(points), dtype=bool)
    chunk = 200_000
    for begin in range(0, len(points), chunk):
        p = points[begin:begin + chunk]
        cell_of = np.floor((p[:, :2] - origin) / cell).astype(np.int64)
        query = cell_of[:, 0] * columns + cell_of[:, 1]
        start = np.searchsorted(key, query, side="left")
        stop = np.searchsorted(key, query, side="right")
        pairs = stop - start
        who = np.repeat(np.arange(len(p)), pairs)
        which = owner[np.repeat(start, pairs) + np.arange(pairs.sum()) - np.repeat(np.cumsum(pairs) - pairs, pairs)]
        # Only the triangles whose (x, y) box holds the point (most of a cell's do not).
        q = p[who]
        near = ((q[:, 0] >= low[which, 0]) & (q[:, 0] <= high[which, 0]) & (q[:, 1] >= low[which, 1])
                & (q[:, 1] <= high[which, 1]) & (q[:, 2] <= tri[which, :, 2].max(axis=1)))
        who, which, q = who[near], which[near], q[near]
        t = tri[which]
        sign = np.sign(area2[which])
        inside = np.ones(len(who), dtype=bool)
        weights = []
        for corner in range(3):
            # The edge function of the edge opposite the corner, evaluated with its ends in index
            # order (and negated if they were swapped), so that the two triangles sharing an edge
            # get exactly opposite values.  A point on the edge (value 0) is moved by an
            # infinitesimal step along (1, _TIE) in (x, y): the sign of the derivative decides.
            first_end, second_end = corners[which, (corner + 1) % 3], corners[which, (corner + 2) % 3]
            swap = first_end > second_end
            u = np.where(swap[:, None], t[:, (corner + 2) % 3], t[:, (corner + 1) % 3])
            w = np.where(swap[:, None], t[:, (corner + 1) % 3], t[:, (corner + 2) % 3])
            edge = (w[:, 0] - u[:, 0]) * (q[:, 1] - u[:, 1]) - (w[:, 1] - u[:, 1]) * (q[:, 0] - u[:, 0])
            slope = (w[:, 0] - u[:, 0]) * _TIE - (w[:, 1] - u[:, 1])
            side = np.where(edge != 0.0, np.sign(edge), np.sign(slope))
            side = np.where(swap, -side, side)
            edge = np.where(swap, -edge, edge)
            inside &= side * sign > 0
            weights.append(edge)
        total = weights[0] + weights[1] + weights[2]
        total = np.where(total == 0.0, 1.0, total)
        height = (weights[0] * t[:, 0, 2] + weights[1] * t[:, 1, 2] + weights[2] * t[:, 2, 2]) / total
        crossing = inside & (height > q[:, 2])
        result[begin:begin + chunk] = np.bincount(who[crossing], minlength=len(p)) % 2 == 1
    return result


def _split_long_edges(x: np.ndarray, faces: np.ndarray, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Splits every edge longer than ``limit`` at its midpoint, with the triangles on it, until
    none is left; the vertices keep their indices and the new ones follow."""
    x, faces = x.copy(), faces.copy()
    for _ in range(64):
        edges = unique_edges(faces)
        length = np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)
        long_edges = edges[length > limit]
        if len(long_edges) == 0:
            return x, faces
        n = len(x)
        x = np.concatenate([x, 0.5 * (x[long_edges[:, 0]] + x[long_edges[:, 1]])])
        long_key = long_edges[:, 0] * n + long_edges[:, 1]  # sorted: edges are sorted rows
        middle = np.full((len(faces), 3), -1, dtype=np.int64)
        for side in range(3):
            u, w = faces[:, side], faces[:, (side + 1) % 3]
            k = np.minimum(u, w) * n + np.maximum(u, w)
            at = np.minimum(np.searchsorted(long_key, k), len(long_key) - 1)
            middle[:, side] = np.where(long_key[at] == k, n + at, -1)
        marked = middle >= 0
        pieces = [faces[~marked.any(axis=1)]]
        for rotation in range(3):
            v = np.roll(faces, -rotation, axis=1)
            m = np.roll(middle, -rotation, axis=1)
            mk = np.roll(marked, -rotation, axis=1)
            one = mk[:, 0] & ~mk[:, 1] & ~mk[:, 2]  # edge (v0, v1) split
            pieces += [np.stack([v[one, 0], m[one, 0], v[one, 2]], 1), np.stack([m[one, 0], v[one, 1], v[one, 2]], 1)]
            two = mk[:, 0] & mk[:, 1] & ~mk[:, 2]  # (v0, v1) and (v1, v2) split
            pieces += [np.stack([m[two, 0], v[two, 1], m[two, 1]], 1), np.stack([v[two, 0], m[two, 0], m[two, 1]], 1),
                       np.stack([v[two, 0], m[two, 1], v[two, 2]], 1)]
        three = marked.all(axis=1)
        v, m = faces[three], middle[three]
        pieces += [np.stack([v[:, 0], m[:, 0], m[:, 2]], 1), np.stack([m[:, 0], v[:, 1], m[:, 1]], 1),
                   np.stack([m[:, 2], m[:, 1], v[:, 2]], 1), np.stack([m[:, 0], m[:, 1], m[:, 2]], 1)]
        faces = np.concatenate(pieces)
    raise ValueError("the surface's edges could not be split down to the edge length")  # pragma: no cover


def _builtin_fill(x: np.ndarray, faces: np.ndarray, spacing: float) -> TetMesh:
    try:
        from scipy.spatial import Delaunay, cKDTree
    except ImportError:  # pragma: no cover - scipy is in the test extra
        raise ImportError('filling a mesh with tetrahedra needs SciPy: pip install "msprings[solid]"') from None
    # Body-centred cubic lattice: cube corners and cube centres, offset by an odd fraction of
    # the spacing so that no lattice point sits on a grid-aligned surface by accident.  Its size
    # is checked (in floating point: the count can overflow int64) before the surface's edges
    # are split down to the spacing (the midpoints stay in the same box), which for a spacing
    # far too small would exhaust the memory first.
    low, high = x.min(axis=0), x.max(axis=0)
    counts = np.ceil((high - low) / spacing).astype(np.int64) + 2
    if float(np.prod(counts.astype(np.float64))) > 40_000_000:
        raise ValueError(f"the filling's edge length {spacing:g} m (edge_length, or made from nodes) is too small "
                         f"for a body {np.ptp(x, axis=0).max():g} m across: the lattice would have more than 80 "
                         "million points")
    surface_x, surface = _split_long_edges(x, faces, 1.5 * spacing)
    axes = [low[i] - spacing * (0.5 + 0.1234567) + spacing * np.arange(counts[i]) for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    lattice = np.concatenate([grid, grid + 0.5 * spacing])
    lattice = lattice[_inside(lattice, surface_x, surface)]
    tri = surface_x[surface]
    samples = np.concatenate([surface_x, tri.mean(axis=1), 0.5 * (tri[:, 0] + tri[:, 1]),
                              0.5 * (tri[:, 1] + tri[:, 2]), 0.5 * (tri[:, 2] + tri[:, 0])])
    if len(lattice):
        # Bounded: an unbounded nearest-sample search from deep inside a round body visits most
        # of the surface's samples (they are all about equally far), so it grows as the product
        # of the lattice and the surface; only whether a sample is nearer than 0.45 a matters
        # (farther ones give an infinite distance).
        distance, _ = cKDTree(samples).query(lattice, distance_upper_bound=0.45 * spacing)
        lattice = lattice[distance >= 0.45 * spacing]
    jitter = np.random.default_rng(12345).uniform(-1e-3, 1e-3, lattice.shape) * spacing
    points = np.concatenate([surface_x, lattice + jitter])
    # About the box's centre: far from the origin (a body 1 m across placed 1e6 m away) Qhull
    # sees the points' differences lost to rounding and refuses them as lower dimensional.
    tets = Delaunay(points - 0.5 * (low + high), qhull_options="QJ Qbb").simplices.astype(np.int64)
    corners = points[tets]
    centroid = corners.mean(axis=1)
    keep = _inside(centroid, surface_x, surface)
    # A surface vertex at a sharp, thin spot can be left in no kept tetrahedron: it keeps the
    # tetrahedron on it that lies most inside (the most of its centroid and the four points
    # halfway from the centroid to its corners inside the surface).
    used = np.zeros(len(points), dtype=bool)
    used[tets[keep].reshape(-1)] = True
    lonely = ~used
    lonely[len(surface_x):] = False
    if lonely.any():
        candidates = np.flatnonzero(lonely[tets].any(axis=1) & ~keep)
        probes = 0.5 * (corners[candidates] + centroid[candidates, None, :])
        score = _inside(probes.reshape(-1, 3), surface_x, surface).reshape(-1, 4).sum(axis=1)
        volume = np.abs(_tetrahedron_volumes(points, tets[candidates]))
        for vertex in np.flatnonzero(lonely):
            mine = np.flatnonzero((tets[candidates] == vertex).any(axis=1))
            if len(mine):
                best = mine[np.lexsort((-volume[mine], -score[mine]))[0]]
                if score[best] > 0:
                    keep[candidates[best]] = True
    tets = tets[keep]
    volume = _tetrahedron_volumes(points, tets)
    tets = tets[np.abs(volume) > 1e-9 * spacing ** 3]
    volume = _tetrahedron_volumes(points, tets)
    flip = volume < 0
    tets[flip, 2], tets[flip, 3] = tets[flip, 3].copy(), tets[flip, 2].copy()
    used = np.zeros(len(points), dtype=bool)
    used[tets.reshape(-1)] = True
    lonely = np.flatnonzero(~used[:len(surface_x)])
    if len(lonely):
        raise ValueError(f"the filling left {len(lonely)} surface vertices in no tetrahedron (e.g. vertex "
                         f"{int(lonely[0])}): the surface has parts thinner than the filling resolves or is not "
                         "closed; give a smaller edge_length, repair the mesh, or use mesher='ftetwild'")
    # Drop unused lattice points (surface points keep their indices).
    renumber = np.cumsum(used) - 1
    return TetMesh(points[used], renumber[tets], renumber[surface])


def _spacing(x: np.ndarray, faces: np.ndarray, edge_length: float | None, nodes: int | None,
             volume: float) -> float:
    if edge_length is not None:
        return edge_length
    if nodes is not None:
        # A body-centred cubic lattice has two points per cube of side a.
        return (2.0 * volume / nodes) ** (1.0 / 3.0)
    edges = unique_edges(faces)
    median = float(np.median(np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)))
    finest, coarsest = (2.0 * volume / 10_000) ** (1.0 / 3.0), (2.0 * volume / 1_000) ** (1.0 / 3.0)
    return min(max(median, finest), coarsest)


def tetrahedralize(vertices: ArrayLike, faces: ArrayLike, *, edge_length: float | None = None,
                   nodes: int | None = None, mesher: str = "builtin") -> TetMesh:
    """Fills a closed triangle surface with tetrahedra.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Outward triangles of a closed surface (:func:`msprings.mesh.repair` cleans a damaged one).
    edge_length : float, optional
        The tetrahedra's target edge length (m).
    nodes : int, optional
        A target number of interior nodes instead (about; the surface's nodes come on top).
        Default (neither given): the surface's median edge length, but no finer than about
        10,000 interior nodes and no coarser than about 1,000.
    mesher : {"builtin", "tetgen", "ftetwild", "gmsh"}
        ``"builtin"`` (SciPy) keeps every input vertex as the node of the same index and
        ``surface`` is the input surface (its long edges split); TetGen and Gmsh keep the
        input vertices first too, fTetWild makes its own; the others are optional
        extras (``pip install "msprings[tetgen]"``, ``"msprings[ftetwild]"``,
        ``"msprings[gmsh]"``; compared in benchmarks/notes/2026-11-27-meshers.md) that make their own
        nodes, and ``surface`` is then the volume's boundary.

    Returns
    -------
    TetMesh
        ``nodes`` (N, 3), ``tets`` (T, 4) positively oriented, ``surface`` (F, 3) outward.

    Raises
    ------
    ValueError
        An open or flat surface, a vertex in no face, a bad ``mesher``, an ``edge_length`` or ``nodes`` that is
        not positive, or a filling that leaves a surface vertex outside every tetrahedron.
    ImportError
        The mesher's package (SciPy for the built-in one) is not installed.

    Warns
    -----
    MeshWarning
        The tetrahedra's volume differs from the enclosed volume by more than 1 % (a surface
        that intersects itself, or nested parts facing the same way).  Up to that the filling
        may bridge a little across concave parts finer than it: 1e-4 to 2e-4 of the volume
        on scanned models.
    """
    from ._repair import boundary_edges
    from ._geometry import _triangles

    x = _points(vertices, "vertices", 3)
    f = _triangles(faces, x.shape[0])
    if mesher not in MESHERS:
        raise ValueError(f"mesher must be one of {', '.join(repr(m) for m in MESHERS)}, got {mesher!r}")
    if edge_length is not None and nodes is not None:
        raise ValueError("give edge_length or nodes, not both")
    if edge_length is not None:
        edge_length = float(edge_length)
        if not (math.isfinite(edge_length) and edge_length > 0):
            raise ValueError(f"edge_length must be finite and > 0, got {edge_length!r}")
    if nodes is not None:
        if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
            raise ValueError(f"nodes must be a positive integer, got {nodes!r}")
    if len(f) < 4:
        raise ValueError(f"a closed surface needs at least 4 faces, got {len(f)}")
    unused = np.ones(x.shape[0], dtype=bool)
    unused[f.reshape(-1)] = False
    if unused.any():
        raise ValueError(f"vertex {int(np.flatnonzero(unused)[0])} is in no face ({int(unused.sum())} such vertices): "
                         "remove them first (mesh.repair does)")
    rim = len(boundary_edges(f))
    if rim:
        raise ValueError(f"the surface is open ({rim} boundary edges, each used by one triangle): only a closed "
                         "surface can be filled (mesh.repair reports the holes)")
    volume = enclosed_volume(x - x.mean(axis=0), f)  # centred: no cancellation far from the origin
    extent = float(np.linalg.norm(np.ptp(x, axis=0)))
    if not abs(volume) > 1e-9 * extent ** 3:
        raise ValueError("the surface encloses no volume (it is flat): it can only be a sheet")
    if volume < 0:
        f = f[:, ::-1].copy()  # inward faces: turn them out
        volume = -volume
    spacing = _spacing(x, f, edge_length, nodes, volume)
    if mesher == "builtin":
        filled = _builtin_fill(x, f, spacing)
    else:
        from ._meshers import external_mesher

        points, tets = external_mesher(mesher, x, f, spacing)
        filled = TetMesh(points, tets, boundary_faces(tets))
    filled_volume = float(tetrahedron_volumes(filled.nodes, filled.tets).sum())
    if abs(filled_volume - volume) > 1e-2 * volume:
        warnings.warn(MeshWarning(
            f"the tetrahedra fill {filled_volume:.6g} m^3 of the {volume:.6g} m^3 the surface encloses "
            f"({100 * (filled_volume / volume - 1):+.2g} %): the surface probably intersects itself or has nested "
            "parts facing the same way (an inner wall of a hollow body must face inwards); mesher='ftetwild' "
            "copes with self-intersections"), stacklevel=2)
    return filled


def read_tetrahedra(path: str | os.PathLike[str]) -> TetMesh:
    """Reads a tetrahedral volume mesh from a file meshio reads (VTU, VTK, Gmsh's .msh,
    MEDIT's .mesh, XDMF, ...; ``pip install "msprings[export]"``), for :func:`from_tetrahedra`.

    Parameters
    ----------
    path : str or os.PathLike
        The mesh file.

    Returns
    -------
    TetMesh
        Its points (m, as stored) and every ``tetra`` cell block, with unused points dropped
        and the tetrahedra renumbered; ``surface`` is the volume's boundary.

    Raises
    ------
    ValueError
        The file cannot be read (the message starts with its name) or holds no tetrahedra.
    ImportError
        meshio is not installed.
    """
    try:
        import meshio
    except ImportError:
        raise ImportError('reading volume meshes needs meshio: pip install "msprings[export]"') from None
    name = os.fspath(path)
    try:
        volume = meshio.read(name)
    except (Exception, SystemExit) as error:  # meshio raises many kinds (even SystemExit) for a damaged file
        raise ValueError(f"{name}: cannot be read as a mesh ({type(error).__name__}: {error})") from None
    blocks = [np.asarray(block.data, dtype=np.int64) for block in volume.cells if block.type == "tetra"]
    if not blocks:
        kinds = ", ".join(sorted({block.type for block in volume.cells})) or "none"
        raise ValueError(f"{name}: holds no tetrahedra (its cells: {kinds})")
    tets = np.concatenate(blocks)
    points = np.asarray(volume.points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] not in (2, 3) or tets.min() < 0 or tets.max() >= len(points):
        raise ValueError(f"{name}: its tetrahedra refer to points it does not have")
    if points.shape[1] == 2:
        raise ValueError(f"{name}: its points are 2-D; tetrahedra need 3-D points")
    used = np.zeros(len(points), dtype=bool)
    used[tets.reshape(-1)] = True
    renumber = np.cumsum(used) - 1
    tets = renumber[tets]
    return TetMesh(points[used], tets, boundary_faces(tets))


def from_tetrahedra(
    nodes: ArrayLike,
    tets: ArrayLike,
    *,
    surface: ArrayLike | None = None,
    mass: ArrayLike | None = None,
    density: float | None = None,
    total_mass: float | None = None,
    k: ArrayLike | None = None,
    youngs_modulus: float | None = None,
    c: ArrayLike | None = None,
    damping_ratio: float | None = None,
    pinned: ArrayLike | None = None,
    stiffness_factor: float = 1.0,
    **system_options: Any,
) -> System:
    """Turns a tetrahedral volume mesh (e.g. read with meshio) into a :class:`msprings.System`
    with one spring on every distinct edge of the tetrahedra (:func:`unique_edges` order of
    the tetrahedra's edges: sorted pairs, sorted rows).

    Parameters
    ----------
    nodes : array_like, shape (N, 3)
        Node positions (m); every node must be a corner of some tetrahedron.
    tets : array_like of int, shape (T, 4)
        Tetrahedra (either orientation).
    surface : array_like of int, shape (F, 3), optional
        Triangles to draw and export (``s.faces``); default :func:`boundary_faces`.
    mass, density, total_mass : array_like or float, optional
        Node masses (kg per node), or a density (kg/m^3) or a total mass (kg) lumped a quarter
        of each tetrahedron onto each corner; at most one.  Default: 1 kg per node.
    k, youngs_modulus : array_like or float, optional
        Spring stiffnesses (N/m, scalar or one per edge), or a Young's modulus (Pa) giving
        each edge ``kappa E V_e / L^2`` (:func:`tetrahedron_stiffness`, summed over the
        tetrahedra on the edge).  Default: k = 1 N/m.
    stiffness_factor : float, default 1.0
        kappa, > 0 (default 1: a quality mesh from TetGen or Gmsh then measures 1.0 to 1.1 E;
        ``from_mesh(fill="tetrahedra")`` passes its mesher's :data:`STIFFNESS_FACTORS`).
    c, damping_ratio : array_like or float, optional
        Spring damping (N s/m), or a ratio zeta >= 0 giving each spring
        ``c = 2 zeta sqrt(k mu)`` with ``mu`` the reduced mass of its ends.  Default: c = 0.
    pinned : sequence of int or bool array of shape (N,), optional
        Pinned nodes.
    **system_options
        As for :func:`from_mesh` (``gravity``, ``integrator``, ``velocities``, ...).

    Returns
    -------
    System
        The system, at rest at ``nodes``, with ``surface`` as its faces.

    Raises
    ------
    ValueError
        Bad shapes, an index out of range, a tetrahedron that repeats a node or is flat, a
        node in no tetrahedron, conflicting values (e.g. ``k`` with ``youngs_modulus``), or
        a material value that is not finite and > 0.
    """
    unknown = set(system_options) - set(_SYSTEM_ARGUMENTS) - set(_SYSTEM_ATTRIBUTES)
    if unknown:
        raise TypeError(f"from_tetrahedra() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    density, total_mass, youngs_modulus, damping_ratio = _material_values(
        mass, density, total_mass, k, youngs_modulus, c, damping_ratio)
    stiffness_factor = _optional_positive(stiffness_factor, "stiffness_factor")
    x = _points(nodes, "nodes", 3)
    n = x.shape[0]
    t = index_array(tets, "tets", 4, n, "node")
    if len(t) == 0:
        raise ValueError("tets must contain at least one tetrahedron")
    t = _check_tetrahedra(x, t)
    used = np.zeros(n, dtype=bool)
    used[t.reshape(-1)] = True
    if not used.all():
        lonely = np.flatnonzero(~used)
        raise ValueError(f"node {int(lonely[0])} is in no tetrahedron ({len(lonely)} such nodes): remove them")
    faces = boundary_faces(t) if surface is None else index_array(surface, "surface", 3, n, "node")
    pairs = np.sort(t[:, _TET_EDGES].reshape(-1, 2), axis=1)
    keys = _row_keys(pairs)
    unique_keys, first, owner = np.unique(keys, return_index=True, return_inverse=True)
    springs = pairs[first]
    if youngs_modulus is not None:
        shares = tetrahedron_stiffness(x, t, youngs_modulus, stiffness_factor)
        stiffness = np.bincount(owner, weights=shares.reshape(-1), minlength=len(springs))
    else:
        stiffness = _per_edge(1.0 if k is None else k, len(springs), "k")
    volume = tetrahedron_volumes(x, t)
    if density is not None or total_mass is not None:
        share = np.repeat(volume / 4.0, 4)
        node_mass = np.bincount(t.reshape(-1), weights=share, minlength=n)
        node_mass *= density if density is not None else total_mass / volume.sum()
    else:
        node_mass = np.broadcast_to(np.asarray(1.0 if mass is None else mass, dtype=np.float64), (n,))
    pin_mask = _pin_mask(pinned, n)
    if damping_ratio is not None:
        damping = _spring_damping(damping_ratio, stiffness, springs, np.asarray(node_mass), pin_mask)
    else:
        damping = _per_edge(0.0 if c is None else c, len(springs), "c")
    options = dict(system_options)
    attributes = {name: options.pop(name) for name in _SYSTEM_ATTRIBUTES if name in options}
    system = System(x, springs, mass=node_mass, k=stiffness, c=damping, pinned=pin_mask, faces=faces, **options)
    for name, value in attributes.items():
        setattr(system, name, value)
    return system
