"""Wavefront OBJ files: reading a Mesh, writing one, and writing a simulation as one OBJ
file per frame (for Blender or MeshLab).  Lengths in metres.

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterable

import numpy as np
from numpy.typing import ArrayLike

from ._geometry import Mesh, _points, _triangles, vertex_normals
from ._repair import DEFAULT_TOLERANCE
from ._repair import repair as repair_mesh

__all__ = ["export_obj_frames", "load_obj", "save_obj"]


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


def load_obj(path: str | os.PathLike[str], *, repair: bool = False,
             tolerance: float = DEFAULT_TOLERANCE) -> Mesh:
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

    Parameters
    ----------
    path : str or os.PathLike
        The OBJ file.
    repair : bool, default False
        Apply :func:`repair` (merge duplicate vertices, drop degenerate and repeated faces
        and unused vertices); a merged vertex keeps the texture coordinate and normal of the
        first of its copies.  Off by default, so that a file reads back exactly as written
        (:func:`save_obj`), seams and all.  The report is in the mesh's ``repair_report``.
    tolerance : float, default 1e-6
        :func:`repair`'s merge distance relative to the bounding-box diagonal.

    Returns
    -------
    Mesh
        The triangle mesh (vertices in the file's units, m by convention).

    Raises
    ------
    ValueError
        The file is not UTF-8 text, has no faces (empty, or only vertices), has none left
        after repair, or has a malformed line: a bad or non-finite number, a face with fewer
        than three corners, an index that is 0 or outside the elements defined.  The message
        starts with the file's name and names the line.
    OSError
        The file cannot be opened (FileNotFoundError if it does not exist).
    """
    name = os.fspath(path)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name!s} is not a UTF-8 text file: {error}") from None
    try:
        mesh = _parse_obj(text)
    except ValueError as error:
        raise ValueError(f"{name!s}: {error}") from None
    if mesh.n_faces == 0:
        raise ValueError(f"{name!s} has no faces (no 'f' line): it is empty or only a point cloud, "
                         "not a surface")
    if repair:
        vertices, faces, report = repair_mesh(mesh.vertices, mesh.faces, tolerance=tolerance)
        if len(faces) == 0:
            raise ValueError(f"{name!s} has no faces left after repair: all {mesh.n_faces} are degenerate")
        kept = report.kept_vertices
        mesh = Mesh(vertices, faces, None if mesh.uv is None else mesh.uv[kept],
                    None if mesh.normals is None else mesh.normals[kept], repair_report=report)
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
    path : str or os.PathLike
        The file to write (an existing one is overwritten).
    vertices : array_like, shape (n, 3)
        Positions (m), finite.
    faces : array_like of int, shape (F, 3)
        0-based vertex indices.
    uv : array_like, shape (n, 2), optional
        Texture coordinates per vertex.
    normals : array_like, shape (n, 3), optional
        Normals per vertex.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        If an array has the wrong shape or a non-finite value, or a face refers to a vertex
        outside 0..n-1.
    OSError
        If ``path`` cannot be written.
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

    The files are plain OBJ that Blender, MeshLab and :func:`load_obj` read.

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
    prefix : str, default "frame"
        Start of the file names.
    normals : bool, default True
        Write each frame's area-weighted vertex normals (as :func:`vertex_normals`).

    Returns
    -------
    list of pathlib.Path
        The files written, in frame order.

    Raises
    ------
    ValueError
        If a frame has another node count than the first, or the faces or uv are bad
        (wrong shape, an index out of range, a non-finite value).
    OSError
        If ``folder`` cannot be made or a file cannot be written.
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
