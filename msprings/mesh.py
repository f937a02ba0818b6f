"""Triangle meshes: Wavefront OBJ files, an icosphere, edge topology and conversion to springs.

Everything here is NumPy only.  Lengths are in metres, masses in kilograms, stiffnesses
in N/m and damping coefficients in N s/m, as in :class:`msprings.System`.

A mesh is turned into a spring network by :func:`from_mesh`: one structural spring per
edge, optionally a bending spring across every interior edge and stabilising springs that
keep a closed surface (a jelly, a balloon) from folding flat.  :func:`export_obj_frames`
writes a simulation back out as one OBJ file per frame for Blender or MeshLab.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._system import System, index_array, real_scalar

__all__ = [
    "InteriorEdges",
    "Mesh",
    "MeshWarning",
    "enclosed_volume",
    "export_obj_frames",
    "face_normals",
    "from_mesh",
    "icosphere",
    "interior_edge_opposites",
    "load_obj",
    "save_obj",
    "unique_edges",
    "vertex_normals",
]

# Options of System that are attributes rather than constructor arguments; from_mesh sets them
# after construction.
_SYSTEM_ATTRIBUTES = (
    "strain_limit",
    "self_collision",
    "threads",
    "newton_max_iter",
    "newton_tol",
    "cg_max_iter",
    "cg_tol",
    "air_density",
    "drag_coefficient",
    "lift_coefficient",
    "wind",
    "gust",
    "gust_frequency",
    "gust_wavenumber",
)
_SYSTEM_ARGUMENTS = ("velocities", "gravity", "drag", "energy_loss", "integrator")


class MeshWarning(UserWarning):
    """A mesh that can be converted but is probably not what was meant (e.g. non-manifold)."""


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
    """

    vertices: np.ndarray
    faces: np.ndarray
    uv: np.ndarray | None = None
    normals: np.ndarray | None = None

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


# ---- geometry -----------------------------------------------------------------------


def face_normals(vertices: ArrayLike, faces: ArrayLike) -> np.ndarray:
    """Unnormalised face normals ``(b - a) x (c - a)``, shape (F, 3) (m^2): twice the area
    times the unit normal, pointing to the side from which ``a, b, c`` run counter-clockwise."""
    x = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
    return np.cross(b - a, c - a)


def vertex_normals(vertices: ArrayLike, faces: ArrayLike) -> np.ndarray:
    """Area-weighted unit vertex normals, shape (n, 3).

    The sum of the unnormalised normals of the triangles around each vertex, normalised
    (the same rule as :meth:`msprings.System.vertex_normals`); zero for a vertex in no
    triangle.
    """
    x = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    normals = np.zeros_like(x)
    per_face = face_normals(x, f)
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
    """
    x = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


# ---- topology -----------------------------------------------------------------------


def _half_edges(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The three edges of every triangle as sorted pairs (3F, 2) and the vertex opposite each."""
    f = faces
    pairs = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    opposite = np.concatenate([f[:, 2], f[:, 0], f[:, 1]])
    return np.sort(pairs, axis=1), opposite


def unique_edges(faces: ArrayLike) -> np.ndarray:
    """The distinct edges of a triangle mesh, shape (E, 2) int64.

    Each edge is a sorted pair ``(i, j)`` with ``i < j``, and the rows are sorted
    lexicographically.  For a closed mesh ``E = 3 F / 2``.
    """
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.int64)
    pairs, _ = _half_edges(f)
    return np.unique(pairs, axis=0)


def interior_edge_opposites(faces: ArrayLike) -> InteriorEdges:
    """Edges shared by exactly two triangles, with the two vertices opposite each.

    For the triangles ``(a, b, c)`` and ``(b, a, d)`` sharing the edge ``a b`` the opposite
    vertices are ``c`` and ``d``: a spring between them resists folding about the edge (a
    bending spring).  Edges on the boundary (one triangle) are left out, and edges shared by
    more than two triangles are returned separately in ``nonmanifold``.
    """
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    empty = np.zeros((0, 2), dtype=np.int64)
    if f.shape[0] == 0:
        return InteriorEdges(empty, empty.copy(), empty.copy())
    pairs, opposite = _half_edges(f)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    pairs, opposite = pairs[order], opposite[order]
    new_group = np.ones(len(pairs), dtype=bool)
    new_group[1:] = np.any(pairs[1:] != pairs[:-1], axis=1)
    starts = np.flatnonzero(new_group)
    counts = np.diff(np.append(starts, len(pairs)))
    interior = starts[counts == 2]
    edges = pairs[interior]
    opposites = np.stack([opposite[interior], opposite[interior + 1]], axis=1)
    return InteriorEdges(edges, opposites, pairs[starts[counts > 2]])


# ---- OBJ files ----------------------------------------------------------------------


def _obj_floats(tokens: list[str], line_number: int, keyword: str, low: int, high: int) -> list[float]:
    """Parses between ``low`` and ``high`` finite numbers after ``keyword``."""
    if not low <= len(tokens) <= high:
        expected = f"{low}" if low == high else f"{low} to {high}"
        raise ValueError(f"OBJ line {line_number}: '{keyword}' needs {expected} numbers, got {len(tokens)}")
    try:
        values = [float(token) for token in tokens]
    except ValueError:
        raise ValueError(f"OBJ line {line_number}: '{keyword}' has a value that is not a number: "
                         f"{' '.join(tokens)[:80]!r}") from None
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"OBJ line {line_number}: '{keyword}' has a non-finite value")
    return values


def _obj_index(token: str, count: int, line_number: int, what: str) -> int:
    """A 0-based index from a 1-based (or negative, relative) OBJ index.

    Negative indices count back from the ``count`` elements defined so far; positive ones
    are range-checked later against the whole file, so they are returned as they are (minus 1).
    """
    try:
        index = int(token)
    except ValueError:
        raise ValueError(f"OBJ line {line_number}: {what} index {token[:40]!r} is not an integer") from None
    if index == 0:
        raise ValueError(f"OBJ line {line_number}: {what} index 0 is invalid (OBJ indices start at 1)")
    if index < 0:
        if -index > count:
            raise ValueError(f"OBJ line {line_number}: relative {what} index {index} refers before the first "
                             f"{what} ({count} defined so far)")
        return count + index
    return index - 1


def load_obj(path: str | os.PathLike[str]) -> Mesh:
    """Reads a Wavefront OBJ file into a triangle :class:`Mesh`.

    Understood statements: ``v x y z`` (extra values such as ``w`` or vertex colours are
    read as numbers and ignored), ``vt u [v [w]]``, ``vn x y z`` and ``f`` with corners
    ``v``, ``v/vt``, ``v//vn`` or ``v/vt/vn`` (1-based, or negative: relative to the
    elements defined so far).  A polygon with more than three corners is split into a fan of
    triangles around its first corner.  Comments (``#``), blank lines and every other
    statement (``o``, ``g``, ``s``, ``usemtl``, ``mtllib``, ``l``, ...) are ignored; line
    continuation with a trailing backslash is not supported.

    Texture coordinates and normals are stored per vertex: a vertex takes those named by
    the first face corner that names them, so along a texture seam (one position with two
    texture coordinates) the first one is kept.  A vertex that no face corner gives a value
    takes the i-th ``vt``/``vn`` of the file if there is exactly one per vertex (as
    :func:`save_obj` writes), else uv (0, 0) and its area-weighted normal.  ``uv`` is None
    if no corner names a texture coordinate (and the counts differ), likewise ``normals``.

    Raises
    ------
    ValueError
        The file is not UTF-8 text, has no faces (empty, or only vertices), or has a
        malformed line: a bad or non-finite number, a face with fewer than three corners,
        an index that is 0 or outside the elements defined; the message names the line
        number.
    FileNotFoundError
        No such file.
    """
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{os.fspath(path)!s} is not a UTF-8 text file: {error}") from None
    mesh = _parse_obj(text)
    if mesh.n_faces == 0:
        raise ValueError(f"{os.fspath(path)!s} has no faces (no 'f' line): it is empty or only a point cloud, "
                         "not a surface")
    return mesh


def _parse_obj(text: str) -> Mesh:
    positions: list[list[float]] = []
    textures: list[list[float]] = []
    normals: list[list[float]] = []
    # Each corner: (vertex, texture or -1, normal or -1, line number); each triangle: 3 corners.
    corners: list[tuple[int, int, int, int]] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for line_number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0]
        tokens = line.split()
        if not tokens:
            continue
        keyword, arguments = tokens[0], tokens[1:]
        if keyword == "v":
            positions.append(_obj_floats(arguments, line_number, "v", 3, 6)[:3])
        elif keyword == "vt":
            values = _obj_floats(arguments, line_number, "vt", 1, 3)
            textures.append([values[0], values[1] if len(values) > 1 else 0.0])
        elif keyword == "vn":
            normals.append(_obj_floats(arguments, line_number, "vn", 3, 3))
        elif keyword == "f":
            if len(arguments) < 3:
                raise ValueError(f"OBJ line {line_number}: a face needs at least 3 corners, got {len(arguments)}")
            polygon = []
            for token in arguments:
                parts = token.split("/")
                if len(parts) > 3 or parts[0] == "":
                    raise ValueError(f"OBJ line {line_number}: face corner {token[:40]!r} is not v, v/vt, v//vn "
                                     "or v/vt/vn")
                vertex = _obj_index(parts[0], len(positions), line_number, "vertex")
                texture = normal = -1
                if len(parts) >= 2 and parts[1] != "":
                    texture = _obj_index(parts[1], len(textures), line_number, "texture coordinate")
                if len(parts) == 3:
                    if parts[2] == "":
                        raise ValueError(f"OBJ line {line_number}: face corner {token[:40]!r} has an empty normal "
                                         "index")
                    normal = _obj_index(parts[2], len(normals), line_number, "normal")
                polygon.append((vertex, texture, normal, line_number))
            for second in range(1, len(polygon) - 1):
                corners.extend((polygon[0], polygon[second], polygon[second + 1]))
    return _assemble(positions, textures, normals, corners)


def _assemble(
    positions: list[list[float]],
    textures: list[list[float]],
    normals: list[list[float]],
    corners: list[tuple[int, int, int, int]],
) -> Mesh:
    """Checks the (forward) indices and builds per-vertex attributes from the face corners."""
    n = len(positions)
    for vertex, texture, normal, line_number in corners:
        for index, count, what in ((vertex, n, "vertex"), (texture, len(textures), "texture coordinate"),
                                   (normal, len(normals), "normal")):
            if index >= count:
                raise ValueError(f"OBJ line {line_number}: {what} index {index + 1} is out of range "
                                 f"(the file has {count})")
    vertices = np.array(positions, dtype=np.float64).reshape(n, 3)
    faces = np.array([corner[0] for corner in corners], dtype=np.int64).reshape(-1, 3)
    uv = _per_vertex(n, [(c[0], c[1]) for c in corners], np.array(textures, dtype=np.float64).reshape(-1, 2))
    vertex_normal = _per_vertex(n, [(c[0], c[2]) for c in corners],
                                np.array(normals, dtype=np.float64).reshape(-1, 3))
    if uv is not None:
        uv = np.where(np.isnan(uv), 0.0, uv)
    if vertex_normal is not None:
        missing = np.isnan(vertex_normal[:, 0])
        if missing.any():
            vertex_normal[missing] = vertex_normals(vertices, faces)[missing]
    return Mesh(vertices, faces, uv, vertex_normal)


def _per_vertex(n: int, references: list[tuple[int, int]], table: np.ndarray) -> np.ndarray | None:
    """Per-vertex rows of ``table`` taken from the first corner naming one (NaN where none
    does, or the parallel row when the table has one per vertex); None if nothing applies."""
    named = [(vertex, index) for vertex, index in references if index >= 0]
    parallel = table.shape[0] == n and n > 0
    if not named and not parallel:
        return None
    out = table.copy() if parallel else np.full((n, table.shape[1]), np.nan)
    assigned = np.zeros(n, dtype=bool)
    for vertex, index in named:
        if not assigned[vertex]:
            assigned[vertex] = True
            out[vertex] = table[index]
    return out


def _format_row(values: Iterable[float]) -> str:
    # repr gives the shortest text that reads back as the same double.
    return " ".join(repr(float(value)) for value in values)


def save_obj(
    path: str | os.PathLike[str],
    vertices: ArrayLike,
    faces: ArrayLike,
    uv: ArrayLike | None = None,
    normals: ArrayLike | None = None,
) -> Path:
    """Writes a triangle mesh as a plain Wavefront OBJ file and returns its path.

    One ``v`` line per vertex, then one ``vt`` and one ``vn`` per vertex when given, then
    1-based ``f`` lines naming the same index for position, texture coordinate and normal
    (``f a/a/a``, ``a/a``, ``a//a`` or ``a``).  Numbers are written with ``repr`` precision,
    so :func:`load_obj` reads back exactly the same doubles.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Positions (m), finite.
    faces : array_like of int, shape (F, 3)
        0-based vertex indices.
    uv : array_like, shape (n, 2), optional
        Texture coordinates per vertex.
    normals : array_like, shape (n, 3), optional
        Normals per vertex.
    """
    x = _points(vertices, "vertices", 3)
    n = x.shape[0]
    f = _triangles(faces, n)
    t = None if uv is None else _points(uv, "uv", 2, rows=n)
    nn = None if normals is None else _points(normals, "normals", 3, rows=n)
    lines = [f"# msprings mesh: {n} vertices, {f.shape[0]} triangles"]
    lines.extend("v " + _format_row(row) for row in x.tolist())
    if t is not None:
        lines.extend("vt " + _format_row(row) for row in t.tolist())
    if nn is not None:
        lines.extend("vn " + _format_row(row) for row in nn.tolist())
    if t is not None and nn is not None:
        corner = "{0}/{0}/{0}"
    elif t is not None:
        corner = "{0}/{0}"
    elif nn is not None:
        corner = "{0}//{0}"
    else:
        corner = "{0}"
    lines.extend("f " + " ".join(corner.format(index) for index in row) for row in (f + 1).tolist())
    target = Path(path)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def export_obj_frames(
    folder: str | os.PathLike[str],
    frames: Iterable[ArrayLike],
    faces: ArrayLike,
    uv: ArrayLike | None = None,
    prefix: str = "frame",
    normals: bool = True,
) -> list[Path]:
    """Writes one OBJ file per frame of a simulation and returns their paths.

    Parameters
    ----------
    folder : path
        Created if missing.  Files are named ``{prefix}_0000.obj``, ``{prefix}_0001.obj``, ...
    frames : iterable of array_like, each (n, 3)
        Node positions (m) per frame, e.g. a list of ``s.x.copy()`` taken while stepping or a
        (T, n, 3) array.  Every frame must have the same n.
    faces : array_like of int, shape (F, 3)
        Triangles (e.g. ``s.faces``).  Nodes in no triangle (such as a stabilising centre
        node) are written as loose vertices.
    uv : array_like, shape (n, 2), optional
        Texture coordinates (e.g. ``s.uv``), the same in every frame.
    normals : bool
        Write each frame's area-weighted vertex normals (as :func:`vertex_normals`).

    The files are plain OBJ that Blender, MeshLab and :func:`load_obj` read.
    """
    directory = Path(folder)
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    count: int | None = None
    for number, frame in enumerate(frames):
        x = _points(frame, f"frames[{number}]", 3)
        if count is None:
            count = x.shape[0]
            f = _triangles(faces, count)
        elif x.shape[0] != count:
            raise ValueError(f"frames[{number}] has {x.shape[0]} nodes, the first frame has {count}")
        frame_normals = vertex_normals(x, f) if normals else None
        paths.append(save_obj(directory / f"{prefix}_{number:04d}.obj", x, f, uv=uv, normals=frame_normals))
    return paths


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
    subdivisions : int
        0 (the icosahedron) to :data:`MAX_SUBDIVISIONS`.
    radius : float
        Sphere radius (m), > 0.
    center : array_like, shape (3,)
        Sphere centre (m).
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


# ---- conversion to a spring network --------------------------------------------------


def _check_mesh(x: np.ndarray, faces: np.ndarray) -> None:
    """Degenerate and duplicate faces raise ValueError; non-manifold edges warn."""
    repeated = (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 0] == faces[:, 2])
    if repeated.any():
        bad = int(np.flatnonzero(repeated)[0])
        raise ValueError(f"faces[{bad}] = {tuple(int(i) for i in faces[bad])} repeats a vertex: a triangle needs "
                         "three different vertices")
    a, b, c = x[faces[:, 0]], x[faces[:, 1]], x[faces[:, 2]]
    e1, e2 = b - a, c - a
    normal = np.cross(e1, e2)
    scale = np.einsum("ij,ij->i", e1, e1) + np.einsum("ij,ij->i", e2, e2)
    # The same relative test as the C core applies to System(faces=...).
    flat = ~(np.einsum("ij,ij->i", normal, normal) > 1e-24 * scale * scale)
    if flat.any():
        bad = int(np.flatnonzero(flat)[0])
        raise ValueError(f"faces[{bad}] = {tuple(int(i) for i in faces[bad])} is degenerate: its three vertices "
                         "are collinear (zero area)")
    if faces.shape[0] > 1:
        key = np.sort(faces, axis=1)
        order = np.lexsort((key[:, 2], key[:, 1], key[:, 0]))
        same = np.all(key[order[1:]] == key[order[:-1]], axis=1)
        if same.any():
            first = int(np.flatnonzero(same)[0])
            i, j = sorted((int(order[first]), int(order[first + 1])))
            raise ValueError(f"faces[{i}] and faces[{j}] are the same triangle "
                             f"{tuple(int(v) for v in faces[j])}: remove the duplicate")
    nonmanifold = interior_edge_opposites(faces).nonmanifold
    if len(nonmanifold):
        example = tuple(int(v) for v in nonmanifold[0])
        warnings.warn(
            MeshWarning(f"the mesh is non-manifold: {len(nonmanifold)} edge(s) are shared by more than two "
                        f"triangles (e.g. edge {example}); no bending springs are made across them"),
            stacklevel=3,
        )


def _antipode_pairs(x: np.ndarray) -> np.ndarray:
    """Each vertex joined to the vertex farthest from it, as unique sorted pairs (S, 2)."""
    n = x.shape[0]
    farthest = np.empty(n, dtype=np.int64)
    block = max(1, 4_000_000 // max(n, 1))
    squared = np.einsum("ij,ij->i", x, x)
    for start in range(0, n, block):
        chunk = x[start:start + block]
        distance2 = squared[start:start + block, None] + squared[None, :] - 2.0 * chunk @ x.T
        farthest[start:start + block] = np.argmax(distance2, axis=1)
    pairs = np.sort(np.stack([np.arange(n), farthest], axis=1), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs, axis=0)


def _per_edge(value: ArrayLike, count: int, name: str) -> np.ndarray:
    """A scalar broadcast to every structural spring, or one value per unique edge."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        return np.full(count, float(array))
    if array.shape != (count,):
        raise ValueError(f"{name} must be a scalar or have shape ({count},) (one per unique edge), got {array.shape}")
    return array


def _scalar_or_mean(value: ArrayLike, name: str) -> float:
    array = np.asarray(value, dtype=np.float64)
    if array.size == 0:
        raise ValueError(f"{name} is empty")
    return float(array.mean())


def from_mesh(
    vertices: ArrayLike,
    faces: ArrayLike,
    *,
    mass: ArrayLike = 1.0,
    k: ArrayLike = 1.0,
    c: ArrayLike = 0.0,
    bend_k: float | None = None,
    bend_c: float = 0.0,
    stabilise: str | None = None,
    stabilise_k: float | None = None,
    stabilise_c: float | None = None,
    uv: ArrayLike | None = None,
    pinned: ArrayLike | None = None,
    return_counts: bool = False,
    **system_options: Any,
) -> System | tuple[System, dict[str, int]]:
    """Turns a triangle mesh into a :class:`msprings.System`.

    Springs, in this order (so ``s.k[:E]`` are the structural springs, and so on):

    1. structural: one per unique edge (:func:`unique_edges` order), stiffness ``k``,
       damping ``c``;
    2. bending (if ``bend_k`` is given): one across every edge shared by exactly two
       triangles, joining the two vertices opposite it (:func:`interior_edge_opposites`
       order), stiffness ``bend_k``, damping ``bend_c``.  On a very coarse closed mesh (a
       tetrahedron) such a spring can coincide with a mesh edge;
    3. stabilising (if ``stabilise`` is given), stiffness ``stabilise_k`` and damping
       ``stabilise_c`` (default: ``k`` and ``c``, their means if given per edge):

       - ``"center"``: one extra node (index n, the last) at the mean of the vertices,
         joined to every vertex (n springs), with the mean vertex mass.  It keeps a closed
         mesh (a jelly, a ball) from collapsing: the spokes hold every vertex at its
         distance from the centre;
       - ``"opposite"``: every vertex joined to the vertex farthest from it, each pair once
         (n/2 springs on a centrally symmetric mesh such as :func:`icosphere`).

    Every spring's rest length is its initial length, so the network starts unstressed.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles; carried into the system (``s.faces``) for air forces and normals.
    mass : float or array_like, shape (n,)
        Mass of each vertex (kg per node, not a total).
    k, c : float or array_like, shape (E,)
        Stiffness (N/m) and damping (N s/m) of the structural springs.
    bend_k, bend_c : float, optional
        Stiffness and damping of the bending springs; ``bend_k=None`` makes none.
    stabilise : None, "center" or "opposite"
    stabilise_k, stabilise_c : float, optional
    uv : array_like, shape (n, 2), optional
        Texture coordinates (``s.uv``); the centre node gets (0, 0).
    pinned : sequence of int or bool array of shape (n,), optional
        Pinned vertices (the centre node is never pinned).
    return_counts : bool
        If True, return ``(system, {"structural": E, "bend": B, "stabilise": S})``.
    **system_options
        ``velocities`` (n, 3) (the centre node gets the mean), ``gravity``, ``drag``,
        ``energy_loss``, ``integrator``, and any of the System attributes
        ``strain_limit``, ``self_collision``, ``threads``, ``newton_max_iter``, ``newton_tol``,
        ``cg_max_iter``, ``cg_tol``, ``air_density``, ``drag_coefficient``,
        ``lift_coefficient``, ``wind``, ``gust``, ``gust_frequency``, ``gust_wavenumber``.

    Raises
    ------
    ValueError
        A face repeats a vertex, has zero area, refers to a missing vertex, or appears twice;
        a bad ``stabilise`` name.
    TypeError
        An unknown keyword argument.

    Warns
    -----
    MeshWarning
        Edges shared by more than two triangles (the mesh is still converted).
    """
    unknown = set(system_options) - set(_SYSTEM_ARGUMENTS) - set(_SYSTEM_ATTRIBUTES)
    if unknown:
        raise TypeError(f"from_mesh() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    if stabilise not in (None, "center", "opposite"):
        raise ValueError(f"stabilise must be None, 'center' or 'opposite', got {stabilise!r}")
    x = _points(vertices, "vertices", 3)
    if x.shape[0] < 1:
        raise ValueError("vertices must contain at least one vertex")
    n = x.shape[0]
    f = _triangles(faces, n)
    _check_mesh(x, f)

    edges = unique_edges(f)
    families = [edges]
    stiffness = [_per_edge(k, len(edges), "k")]
    damping = [_per_edge(c, len(edges), "c")]
    bend = np.zeros((0, 2), dtype=np.int64)
    if bend_k is not None:
        bend = interior_edge_opposites(f).opposites
        families.append(bend)
        stiffness.append(np.full(len(bend), float(bend_k)))
        damping.append(np.full(len(bend), float(bend_c)))

    positions, node_mass = x, np.broadcast_to(np.asarray(mass, dtype=np.float64), (n,))
    coordinates = None if uv is None else _points(uv, "uv", 2, rows=n)
    pin_mask = np.zeros(n, dtype=bool)
    if pinned is not None:
        pin_array = np.asarray(pinned)
        if pin_array.dtype == bool:
            if pin_array.shape != (n,):
                raise ValueError(f"pinned as a boolean mask must have shape ({n},), got {pin_array.shape}")
            pin_mask = pin_array.copy()
        elif pin_array.size:
            if pin_array.dtype.kind not in "iu":
                raise TypeError(f"pinned must be vertex indices or a boolean mask, got dtype {pin_array.dtype}")
            flat = pin_array.reshape(-1)
            if flat.min() < 0 or flat.max() >= n:
                raise ValueError(f"pinned refers to a vertex outside 0..{n - 1}")
            pin_mask[flat] = True
    options = dict(system_options)
    attributes = {name: options.pop(name) for name in _SYSTEM_ATTRIBUTES if name in options}

    stabilising = np.zeros((0, 2), dtype=np.int64)
    if stabilise is not None:
        spring_k = _scalar_or_mean(k, "k") if stabilise_k is None else float(stabilise_k)
        spring_c = _scalar_or_mean(c, "c") if stabilise_c is None else float(stabilise_c)
        if stabilise == "center":
            stabilising = np.stack([np.arange(n), np.full(n, n)], axis=1).astype(np.int64)
            positions = np.concatenate([x, x.mean(axis=0, keepdims=True)])
            node_mass = np.append(node_mass, node_mass.mean())
            pin_mask = np.append(pin_mask, False)
            if coordinates is not None:
                coordinates = np.concatenate([coordinates, np.zeros((1, 2))])
            if options.get("velocities") is not None:
                velocities = _points(options["velocities"], "velocities", 3, rows=n)
                options["velocities"] = np.concatenate([velocities, velocities.mean(axis=0, keepdims=True)])
        else:
            stabilising = _antipode_pairs(x)
        families.append(stabilising)
        stiffness.append(np.full(len(stabilising), spring_k))
        damping.append(np.full(len(stabilising), spring_c))

    system = System(
        positions,
        np.concatenate(families).astype(np.int64).reshape(-1, 2),
        mass=node_mass,
        k=np.concatenate(stiffness),
        c=np.concatenate(damping),
        pinned=pin_mask,
        faces=f,
        uv=coordinates,
        **options,
    )
    for name, value in attributes.items():
        setattr(system, name, value)
    if return_counts:
        return system, {"structural": len(edges), "bend": len(bend), "stabilise": len(stabilising)}
    return system
