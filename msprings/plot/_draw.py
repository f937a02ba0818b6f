"""Drawing a mass-spring scene in 3-D with matplotlib: the scene of a System, frame or
trajectory, collider solids as polygons, shading, colour scales and :func:`draw`.

The simulation's y axis is up.  matplotlib's 3-D axes put their third axis up, so a point
(x, y, z) of the simulation is drawn at matplotlib's (x, z, y): gravity points down on the
screen.  The axes are labelled with the simulation's names.  Units are SI throughout.

Part of :mod:`msprings.plot`, which re-exports its public names.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, Normalize, to_rgba
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator, NullFormatter
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection
from mpl_toolkits.mplot3d.axes3d import Axes3D
from numpy.typing import ArrayLike

from .._system import System
from ..colliders import Collider
from ..trajectory import Trajectory

__all__ = ["STRAIN_LABEL", "TENSION_LABEL", "collider_polygons", "draw"]

#: Colour bar label when springs are coloured by strain.
STRAIN_LABEL = "strain (l - L) / L (dimensionless)"
#: Colour bar label when springs are coloured by tension.
TENSION_LABEL = "spring tension (N), > 0 pulling"

ColorBy = Literal["strain", "tension"] | None
Drawable = System | Trajectory | Mapping[str, Any]

# Shading (see _Light): the light's offset from the viewer's direction, upwards and
# sideways on the screen, and the share of the colour that does not depend on it.
_LIGHT_UP = 1.1
_LIGHT_SIDE = 0.8
_AMBIENT = 0.35
_SURFACE_COLOR = (0.93, 0.87, 0.72, 1.0)
_SOLID_COLOR = (0.52, 0.58, 0.68, 1.0)
_PLANE_COLOR = (0.55, 0.55, 0.55, 0.3)
_NODE_COLOR = "0.15"
_PIN_COLOR = "black"
_SPRING_COLOR = "0.25"
_DEFAULT_CMAP = "coolwarm"
_VIEW = (22.0, -58.0)  # elevation and azimuth (degrees) of the default viewpoint
_MARGIN = 0.04  # margin around the scene, as a fraction of its largest extent
_THINNEST = 0.25  # shortest axis, as a fraction of the longest
_END_ON = 0.12  # an axis drawn shorter than this fraction of the longest gets no labels
_SORT_CORNERS = 8  # corners of every drawn surface polygon, most of them repeated (see _depth_biased)
_CELLS_ACROSS = 12  # collider surfaces are cut into cells about 1/12 of the scene across
# "auto" hides the springs of a drawn surface with more springs than this, and shows free
# nodes only where springs are drawn and there are at most _AUTO_NODES_MOST nodes (at most
# _AUTO_NODES_ON_SURFACE on a drawn surface, where dots soon hide it).
_AUTO_SPRINGS_MOST = 1000
_AUTO_NODES_MOST = 2000
_AUTO_NODES_ON_SURFACE = 100
# Below these magnitudes a colour scale would show round-off only (a system at rest).
_ROUND_OFF = {"strain": 1e-9, "tension": 1e-6}


def _screen(points: np.ndarray) -> np.ndarray:
    """Simulation (x, y, z) to matplotlib's (X, Y, Z) = (x, z, y): y up on the screen."""
    return points[..., [0, 2, 1]]


# ---- what is drawn ---------------------------------------------------------------------


@dataclass
class _Shape:
    """A collider's geometry (m): ``axis`` is a plane's normal or a cylinder's axis;
    ``size`` is (radius, 0, 0) for a sphere, the half extents of a box, (radius, half
    height, 0) for a cylinder."""

    kind: str
    center: np.ndarray
    axis: np.ndarray
    size: np.ndarray


def _shape(collider: Collider | Mapping[str, Any]) -> _Shape:
    """The geometry of a collider handle or of a recorded collider dict."""
    if isinstance(collider, Collider):
        kind = collider.kind
        axis: ArrayLike = (0.0, 1.0, 0.0)
        if kind == "plane":
            axis, size = collider.normal, (0.0, 0.0, 0.0)
        elif kind == "sphere":
            size = (collider.radius, 0.0, 0.0)
        elif kind == "box":
            size = tuple(collider.half_extents)
        else:
            axis, size = collider.axis, (collider.radius, 0.5 * collider.height, 0.0)
        return _Shape(kind, collider.center.astype(float), np.asarray(axis, dtype=float),
                      np.asarray(size, dtype=float))
    if isinstance(collider, Mapping):
        return _Shape(str(collider["kind"]), np.asarray(collider["center"], dtype=float),
                      np.asarray(collider.get("axis", (0.0, 1.0, 0.0)), dtype=float),
                      np.asarray(collider["size"], dtype=float))
    raise TypeError(f"a collider must be a msprings Collider or a dict, not {type(collider).__name__}")


@dataclass
class _Scene:
    """One state to draw: positions (n, 3) in m, topology, per-spring strain and tension
    (N; None when the stiffness is unknown), colliders and the time (s) if known."""

    positions: np.ndarray
    springs: np.ndarray
    faces: np.ndarray
    pinned: np.ndarray
    strain: np.ndarray
    tension: np.ndarray | None
    colliders: list[_Shape]
    time: float | None

    def spring_values(self, color_by: ColorBy) -> tuple[np.ndarray | None, str]:
        """Per-spring colour values and their colour bar label; tension falls back to
        strain when the stiffness is unknown."""
        if color_by is None:
            return None, ""
        if color_by == "tension" and self.tension is not None:
            return self.tension, TENSION_LABEL
        return self.strain, STRAIN_LABEL


def _strain(positions: np.ndarray, springs: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """(l - L) / L per spring; NaN where the rest length is 0."""
    lengths = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rest > 0, (lengths - rest) / np.where(rest > 0, rest, 1.0), np.nan)


def _frame_scene(frame: Mapping[str, Any]) -> _Scene:
    """A scene from a frame dict (:meth:`Trajectory.frame`): ``positions`` (required),
    ``springs``, ``faces``, ``pinned`` (indices or mask), ``rest`` (m; default the current
    lengths), ``k`` (N/m, optional: enables tension), ``colliders``, ``time`` (s)."""
    if "positions" not in frame:
        raise ValueError("a frame dict needs 'positions' (an (n, 3) array in m)")
    positions = np.array(frame["positions"], dtype=np.float64)
    if positions.ndim != 2 or positions.shape[1] != 3 or len(positions) == 0:
        raise ValueError(f"positions must have shape (n, 3) with n >= 1, got {positions.shape}")
    n = len(positions)
    springs = np.asarray(frame.get("springs", np.zeros((0, 2))), dtype=np.int64).reshape(-1, 2)
    faces = np.asarray(frame.get("faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
    pinned_in = frame.get("pinned")
    pinned = np.zeros(n, dtype=bool)
    if pinned_in is not None:
        pinned_array = np.asarray(pinned_in)
        if pinned_array.dtype == bool and pinned_array.shape == (n,):
            pinned = pinned_array.copy()
        elif pinned_array.size:
            pinned[pinned_array.astype(np.int64).ravel()] = True
    lengths = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    rest_in = frame.get("rest")
    rest = lengths if rest_in is None else np.broadcast_to(np.asarray(rest_in, dtype=np.float64), lengths.shape)
    k_in = frame.get("k")
    tension = None
    if k_in is not None:
        tension = np.broadcast_to(np.asarray(k_in, dtype=np.float64), lengths.shape) * (lengths - rest)
    time = frame.get("time")
    return _Scene(positions, springs, faces, pinned, _strain(positions, springs, rest), tension,
                  [_shape(c) for c in frame.get("colliders", ())], None if time is None else float(time))


def _scene(obj: Drawable) -> _Scene:
    """The scene of a System (its current state), a Trajectory (its last frame) or a frame dict."""
    if isinstance(obj, System):
        return _Scene(obj.x.copy(), obj.springs.astype(np.int64), obj.faces.astype(np.int64), obj.pinned.copy(),
                      obj.strain(), obj.tension(), [_shape(c) for c in obj.colliders], float(obj.t))
    if isinstance(obj, Trajectory):
        return _frame_scene(obj.frame(len(obj) - 1))
    if isinstance(obj, Mapping):
        return _frame_scene(obj)
    raise TypeError(f"draw() takes a System, a Trajectory or a frame dict, not {type(obj).__name__}")


# ---- collider geometry -----------------------------------------------------------------


def _perpendicular_basis(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors perpendicular to ``axis`` and to each other."""
    a = axis / np.linalg.norm(axis)
    helper = np.eye(3)[int(np.argmin(np.abs(a)))]
    first = np.cross(a, helper)
    first /= np.linalg.norm(first)
    return first, np.cross(a, first)


def _divisions(length: float, cell: float, most: int = 24) -> int:
    """How many cells of about ``cell`` m fit along ``length`` m (1 to ``most``)."""
    return int(min(max(math.ceil(length / cell), 1), most)) if cell > 0 else 1


def _grid(origin: np.ndarray, u: np.ndarray, v: np.ndarray, nu: int, nv: int) -> list[np.ndarray]:
    """The quads (4, 3) of the parallelogram ``origin + s u + t v``, s, t in [0, 1], cut
    into nu x nv cells."""
    s = np.linspace(0.0, 1.0, nu + 1)
    t = np.linspace(0.0, 1.0, nv + 1)
    corners = origin + s[:, None, None] * u + t[None, :, None] * v  # (nu + 1, nv + 1, 3)
    quads = np.stack([corners[:-1, :-1], corners[1:, :-1], corners[1:, 1:], corners[:-1, 1:]], axis=2)
    return list(quads.reshape(-1, 4, 3))


def _sphere_polygons(center: np.ndarray, radius: float, rows: int = 14, sectors: int = 28) -> list[np.ndarray]:
    polar = np.linspace(0.0, math.pi, rows + 1)
    azimuth = np.linspace(0.0, 2.0 * math.pi, sectors + 1)
    ring = np.stack([
        np.sin(polar)[:, None] * np.cos(azimuth)[None, :],
        np.repeat(np.cos(polar)[:, None], sectors + 1, axis=1),
        np.sin(polar)[:, None] * np.sin(azimuth)[None, :],
    ], axis=-1) * radius + center  # (rows + 1, sectors + 1, 3), y up
    polygons = []
    for i in range(rows):
        for j in range(sectors):
            if i == 0:
                polygons.append(np.array([ring[0, j], ring[1, j], ring[1, j + 1]]))
            elif i == rows - 1:
                polygons.append(np.array([ring[i, j], ring[i + 1, j], ring[i, j + 1]]))
            else:
                polygons.append(np.array([ring[i, j], ring[i + 1, j], ring[i + 1, j + 1], ring[i, j + 1]]))
    return polygons


def _box_polygons(center: np.ndarray, half: np.ndarray, cell: float) -> list[np.ndarray]:
    polygons: list[np.ndarray] = []
    for normal_axis in range(3):
        u_axis, v_axis = [a for a in range(3) if a != normal_axis]
        u = np.zeros(3)
        v = np.zeros(3)
        u[u_axis] = 2.0 * half[u_axis]
        v[v_axis] = 2.0 * half[v_axis]
        for side in (-1.0, 1.0):
            origin = center - half.copy()
            origin[normal_axis] = center[normal_axis] + side * half[normal_axis]
            polygons += _grid(origin, u, v, _divisions(u[u_axis], cell), _divisions(v[v_axis], cell))
    return polygons


def _cylinder_polygons(center: np.ndarray, axis: np.ndarray, radius: float, half_height: float,
                       cell: float, sectors: int = 36) -> list[np.ndarray]:
    a = axis / np.linalg.norm(axis)
    first, second = _perpendicular_basis(a)
    angle = np.linspace(0.0, 2.0 * math.pi, sectors + 1)
    rim = np.cos(angle)[:, None] * first + np.sin(angle)[:, None] * second  # (sectors + 1, 3) unit
    bands = _divisions(2.0 * half_height, cell)
    rings = _divisions(radius, cell, most=12)
    heights = np.linspace(-half_height, half_height, bands + 1)
    polygons: list[np.ndarray] = []
    for b in range(bands):
        low = center + heights[b] * a + radius * rim
        high = center + heights[b + 1] * a + radius * rim
        for j in range(sectors):
            polygons.append(np.array([low[j], low[j + 1], high[j + 1], high[j]]))
    radii = np.linspace(0.0, radius, rings + 1)
    for side in (1.0, -1.0):
        cap = center + side * half_height * a
        for r in range(rings):
            inner = cap + radii[r] * rim
            outer = cap + radii[r + 1] * rim
            for j in range(sectors):
                if r == 0:
                    polygons.append(np.array([cap, outer[j], outer[j + 1]]))
                else:
                    polygons.append(np.array([inner[j], outer[j], outer[j + 1], inner[j + 1]]))
    return polygons


def _plane_polygons(center: np.ndarray, normal: np.ndarray, around: np.ndarray, cell: float) -> list[np.ndarray]:
    """A square patch of the plane under the points ``around`` (their footprint on it,
    with a 25 % border), cut into cells."""
    first, second = _perpendicular_basis(normal)
    offsets = np.asarray(around, dtype=float).reshape(-1, 3) - center
    if len(offsets) == 0:
        offsets = np.zeros((1, 3))
    a, b = offsets @ first, offsets @ second
    mid_a, mid_b = 0.5 * (a.min() + a.max()), 0.5 * (b.min() + b.max())
    half = 0.5 * max(a.max() - a.min(), b.max() - b.min()) * 1.25
    if not half > 0:
        half = 1.0
    origin = center + (mid_a - half) * first + (mid_b - half) * second
    divisions = _divisions(2.0 * half, cell)
    return _grid(origin, 2.0 * half * first, 2.0 * half * second, divisions, divisions)


def _shape_polygons(shape: _Shape, around: np.ndarray, cell: float) -> list[np.ndarray]:
    if shape.kind == "plane":
        return _plane_polygons(shape.center, shape.axis, around, cell)
    if shape.kind == "sphere":
        return _sphere_polygons(shape.center, float(shape.size[0]))
    if shape.kind == "box":
        return _box_polygons(shape.center, shape.size, cell)
    if shape.kind == "cylinder":
        return _cylinder_polygons(shape.center, shape.axis, float(shape.size[0]), float(shape.size[1]), cell)
    raise ValueError(f"unknown collider kind {shape.kind!r}")


def _shape_box(shape: _Shape) -> np.ndarray:
    """Corners (2, 3) of a box (m) containing a finite collider."""
    if shape.kind == "sphere":
        reach = np.full(3, shape.size[0])
    elif shape.kind == "box":
        reach = shape.size
    else:
        reach = np.full(3, shape.size[0] + shape.size[1])
    return np.stack([shape.center - reach, shape.center + reach])


def collider_polygons(collider: Collider | Mapping[str, Any], *, around: ArrayLike | None = None,
                      cell: float | None = None) -> list[np.ndarray]:
    """The surface of a collider as polygons, each a (k, 3) array of vertices in simulation
    coordinates (m), as :func:`draw` shows it.

    A sphere is cut along meridians and parallels; a box into its six faces, a capped
    cylinder into its side and both caps (a fan and rings of cells), each cut into cells of
    about ``cell`` m so that other surfaces resting on them are depth-sorted correctly.  An
    infinite plane is shown as a square patch under the points ``around`` (m; e.g. the
    nodes): their footprint on the plane with a 25 % border.

    Parameters
    ----------
    collider : Collider or dict
        A handle from ``System.colliders`` or a recorded collider dict
        (``Trajectory.colliders`` / ``Trajectory.frame(r)["colliders"]``).
    around : array_like, shape (p, 3), optional
        Points (m) the patch of a plane must lie under; default the collider's centre only
        (a 2 m square).
    cell : float, optional
        Target cell size (m); default 1/16 of the collider's size.

    Returns
    -------
    list of numpy.ndarray
        The polygons, each (k, 3) in m.

    Raises
    ------
    TypeError
        If ``collider`` is neither a Collider nor a dict.
    KeyError
        If a collider dict lacks an entry (``kind``, ``center``, ``axis``, ``size``).
    """
    shape = _shape(collider)
    points = shape.center[None, :] if around is None else np.asarray(around, dtype=float).reshape(-1, 3)
    if cell is None:
        extent = (np.ptp(_shape_box(shape), axis=0).max() if shape.kind != "plane"
                  else np.ptp(points, axis=0).max() if len(points) > 1 else 2.0)
        cell = extent / _CELLS_ACROSS if extent > 0 else 1.0
    return _shape_polygons(shape, points, float(cell))


# ---- colour scales ---------------------------------------------------------------------


@dataclass
class _ColorScale:
    """The colour scale of a picture (or of every frame of an animation): a symmetric range
    ``-limit .. limit`` of the quantity, or ``limit=None`` when every value is below the
    quantity's round-off threshold and the picture shows a neutral colour instead."""

    quantity: str
    label: str
    cmap: Colormap
    limit: float | None

    def norm(self) -> Normalize:
        limit = 1.0 if self.limit is None else self.limit
        return Normalize(-limit, limit)

    def colors(self, values: np.ndarray, norm: Normalize, neutral: Sequence[float]) -> np.ndarray:
        """RGBA (P, 4) of ``values`` under ``norm``; the neutral colour where NaN."""
        colors = np.tile(np.asarray(to_rgba(neutral), dtype=float), (len(values), 1))
        known = np.isfinite(values)
        colors[known] = self.cmap(norm(values[known]))
        return colors

    def flat_note(self) -> str:
        unit = " N" if self.quantity == "tension" else ""
        return (f"no colour scale: every spring {self.quantity} is below {_ROUND_OFF[self.quantity]:g}{unit} "
                "(round-off, as at rest)")


def _color_scale(values: Sequence[np.ndarray], quantity: str, label: str, cmap: str | Colormap | None,
                 vmax: float | None) -> _ColorScale:
    """One scale for every array in ``values`` (all panels or frames): symmetric about 0 and
    holding every finite value, or flat when they are all round-off."""
    colormap = colormaps[cmap] if isinstance(cmap, str) else (cmap or colormaps[_DEFAULT_CMAP])
    if vmax is not None:
        if not (isinstance(vmax, (int, float)) and vmax > 0 and math.isfinite(vmax)):
            raise ValueError(f"vmax must be > 0 and finite, got {vmax!r}")
        return _ColorScale(quantity, label, colormap, float(vmax))
    largest = 0.0
    for array in values:
        finite = np.abs(array[np.isfinite(array)])
        if finite.size:
            largest = max(largest, float(finite.max()))
    limit = largest if largest >= _ROUND_OFF[quantity] else None
    return _ColorScale(quantity, label, colormap, limit)


# ---- shading ---------------------------------------------------------------------------


def _triangle_normals(triangles: np.ndarray) -> np.ndarray:
    """Unit normals (F, 3) of triangles (F, 3, 3)."""
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    return normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)


def _depth_biased(polygons: np.ndarray, eye: np.ndarray, *, near: bool) -> np.ndarray:
    """Polygons (P, k, 3), k = 3 or 4, as polygons of _SORT_CORNERS corners (P, 8, 3)
    whose extra corners repeat the corner nearest to the viewer (``near``) or farthest from
    it: the drawn shape is the same, but mplot3d, which paints polygons in the order of
    their mean corner depth, then sorts them nearly by that corner.  A cloth lying on a
    table (its nearest corner against the table's farthest) is painted after the table top
    under it, though the two are at nearly the same depth and of different sizes."""
    corners = polygons.shape[1]
    depth = polygons @ eye  # larger: nearer to the viewer
    chosen = np.argmax(depth, axis=1) if near else np.argmin(depth, axis=1)
    order = (np.arange(corners)[None, :] + chosen[:, None] + 1) % corners  # chosen corner last
    order = np.concatenate([order, np.repeat(order[:, -1:], _SORT_CORNERS - corners, axis=1)], axis=1)
    return np.take_along_axis(polygons, order[:, :, None], axis=1)


def _polygon_normals(polygons: np.ndarray) -> np.ndarray:
    """Unit normals (P, 3) of flat polygons (P, _SORT_CORNERS, 3) (from their first three
    corners, which are distinct)."""
    return _triangle_normals(polygons[:, :3])


def _biased_collider_polygons(polygons: Sequence[np.ndarray], eye: np.ndarray) -> np.ndarray:
    """A collider's screen-space polygons (P, _SORT_CORNERS, 3) moved away from the viewer
    for the depth order (see _depth_biased)."""
    groups = [np.array([_screen(p) for p in polygons if len(p) == corners]) for corners in (3, 4)]
    return np.concatenate([np.zeros((0, _SORT_CORNERS, 3))] + [_depth_biased(group, eye, near=False)
                                                   for group in groups if len(group)])


class _Light:
    """Lambert shading from a light above and beside the viewer, placed relative to the
    viewpoint so that every viewpoint is lit from the front.  Faces are two-sided: a
    cloth seen from behind is lit like its front.  Colour = base * (AMBIENT + (1 -
    AMBIENT) max(n . light, 0)) with n the face normal turned towards the viewer."""

    def __init__(self, elevation: float, azimuth: float) -> None:
        # The viewer's direction in matplotlib's data coordinates (the second axis is
        # drawn reversed: see _Drawing.fit).
        elev, azim = np.radians([elevation, azimuth])
        self.eye = np.array([np.cos(elev) * np.cos(azim), -np.cos(elev) * np.sin(azim), np.sin(elev)])
        up = np.array([0.0, 0.0, 1.0]) - np.sin(elev) * self.eye  # the screen's up direction
        if np.linalg.norm(up) < 1e-6:  # looking straight down or up
            up = np.array([-np.cos(azim), np.sin(azim), 0.0])
        up /= np.linalg.norm(up)
        light = self.eye + _LIGHT_UP * up - _LIGHT_SIDE * np.cross(self.eye, up)
        self.direction = light / np.linalg.norm(light)

    def intensity(self, normals: np.ndarray) -> np.ndarray:
        facing = np.where((normals @ self.eye)[:, None] < 0.0, -normals, normals)
        return _AMBIENT + (1.0 - _AMBIENT) * np.clip(facing @ self.direction, 0.0, 1.0)

    def shade(self, normals: np.ndarray, base: np.ndarray) -> np.ndarray:
        """RGBA (P, 4): ``base`` (P, 4) or (4,) darkened by each face's angle to the light."""
        colors = np.array(np.broadcast_to(base, (len(normals), 4)), dtype=float)
        colors[:, :3] *= self.intensity(normals)[:, None]
        return colors


def _edge_springs(faces: np.ndarray, springs: np.ndarray, n: int) -> np.ndarray:
    """Indices of the springs that run along an edge of a face (each once)."""
    if len(faces) == 0 or len(springs) == 0:
        return np.zeros(0, dtype=np.int64)
    keys = np.minimum(springs[:, 0], springs[:, 1]) * n + np.maximum(springs[:, 0], springs[:, 1])
    ends = np.stack([faces, np.roll(faces, -1, axis=1)], axis=-1).reshape(-1, 2)
    edge_keys = np.unique(ends.min(axis=1) * n + ends.max(axis=1))
    return np.flatnonzero(np.isin(keys, edge_keys))


class _SurfaceValues:
    """Per-face colour values from per-spring ones, smoothed over the surface: each node
    takes the mean over the springs along the face edges that meet there, each face the
    mean of its corners (NaN where nothing is known)."""

    def __init__(self, faces: np.ndarray, springs: np.ndarray, n: int) -> None:
        self.faces = faces
        self.n = n
        self.edges = _edge_springs(faces, springs, n)
        self.ends = springs[self.edges]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        picked = values[self.edges]
        known = np.isfinite(picked)
        ends, picked = self.ends[known], picked[known]
        total = np.bincount(ends[:, 0], picked, self.n) + np.bincount(ends[:, 1], picked, self.n)
        count = np.bincount(ends[:, 0], minlength=self.n) + np.bincount(ends[:, 1], minlength=self.n)
        nodes = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        corners = nodes[self.faces]
        known_corners = np.isfinite(corners)
        corner_count = known_corners.sum(axis=1)
        corner_total = np.where(known_corners, corners, 0.0).sum(axis=1)
        return np.where(corner_count > 0, corner_total / np.maximum(corner_count, 1), np.nan)


# ---- drawing ---------------------------------------------------------------------------


# Layout of a new figure (fractions of its size): the 3-D axes, and a colour bar clear
# of the tick labels that mplot3d draws outside the axes' own rectangle.
# The 3-D box (with its tick labels) is zoomed to fill _BOX_REGION, below the title.
_AXES_RECT = (0.0, 0.0, 0.78, 0.9)
_BOX_REGION = (0.01, 0.01, 0.79, 0.89)
_COLORBAR_RECT = (0.80, 0.2, 0.022, 0.6)
_AXES_RECT_ALONE = (0.0, 0.0, 1.0, 0.9)
_BOX_REGION_ALONE = (0.01, 0.06, 0.99, 0.89)
_LARGEST_ZOOM = 2.2
_NOTE_POSITION = (0.01, 0.01)  # figure fraction: the note of a flat colour scale


def _new_axes(figsize: tuple[float, float] | None, default: tuple[float, float] = (7.5, 6.0)) -> Axes3D:
    figure = plt.figure(figsize=figsize or default)
    return figure.add_axes(_AXES_RECT, projection="3d")


def _zoom_to_fit(ax: Axes3D, aspect: Sequence[float], with_colorbar: bool) -> None:
    """Zooms the 3-D box so that it and its tick and axis labels fill _BOX_REGION of the
    figure (all its width without a colour bar) without being cut off.  Labels keep their
    size as the box scales, hence a few rounds of measuring."""
    figure = ax.get_figure()
    width, height = figure.bbox.width, figure.bbox.height
    region = np.array(_BOX_REGION if with_colorbar else _BOX_REGION_ALONE) * [width, height, width, height]
    if not with_colorbar:
        ax.set_position(_AXES_RECT_ALONE)
    zoom = 1.0
    # Measuring needs a draw; the scene's own artists are hidden meanwhile (the axes'
    # layout does not depend on them) so that a large scene is not drawn four times.
    content = [artist for artist in [*ax.collections, *ax.lines] if artist.get_visible()]
    for artist in content:
        artist.set_visible(False)
    try:
        for _ in range(4):
            ax.set_box_aspect(aspect, zoom=zoom)
            figure.draw_without_rendering()
            renderer = figure.canvas.get_renderer()
            boxes = [axis.get_tightbbox(renderer) for axis in (ax.xaxis, ax.yaxis, ax.zaxis)]
            boxes = [box for box in boxes if box is not None and box.width > 0]
            if not boxes:
                break
            x0, y0 = min(b.x0 for b in boxes), min(b.y0 for b in boxes)
            x1, y1 = max(b.x1 for b in boxes), max(b.y1 for b in boxes)
            center_x, center_y = ax.bbox.x0 + 0.5 * ax.bbox.width, ax.bbox.y0 + 0.5 * ax.bbox.height
            needed = np.array([center_x - x0, x1 - center_x, center_y - y0, y1 - center_y])
            room = np.array([center_x - region[0], region[2] - center_x, center_y - region[1],
                             region[3] - center_y])
            factor = float(np.min(room / np.maximum(needed, 1.0)))
            if abs(factor - 1.0) < 0.02:
                break
            zoom = min(zoom * (1.0 + 0.9 * (factor - 1.0)), _LARGEST_ZOOM)
        else:
            ax.set_box_aspect(aspect, zoom=zoom)
    finally:
        for artist in content:
            artist.set_visible(True)


def _check_view(elev: float | None, azim: float | None) -> tuple[float, float]:
    """The viewpoint (degrees): the default where not given."""
    view = []
    for name, value, default in (("elev", elev, _VIEW[0]), ("azim", azim, _VIEW[1])):
        if value is None:
            view.append(default)
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite angle in degrees, got {value!r}")
        else:
            view.append(float(value))
    return view[0], view[1]


def _check_choice(name: str, value: Any) -> None:
    if not (isinstance(value, bool) or value == "auto"):
        raise ValueError(f"{name} must be True, False or 'auto', not {value!r}")


@dataclass
class _Plan:
    """What a picture of a scene shows: the surface, the springs, and what carries the
    colour (the springs when they are drawn, else the faces, each face the smoothed mean of
    the springs along its edges: see _SurfaceValues)."""

    surface: bool
    springs: bool
    colored: Literal["springs", "faces"] | None
    face_values: _SurfaceValues | None

    def values(self, scene: _Scene, color_by: ColorBy) -> np.ndarray | None:
        """The values the colour shows in ``scene``: per spring or per face."""
        if self.colored is None:
            return None
        values = scene.spring_values(color_by)[0]
        return values if self.face_values is None else self.face_values(values)


def _plan(scene: _Scene, color_by: ColorBy, surface: bool, springs: bool | Literal["auto"]) -> _Plan:
    if color_by not in ("strain", "tension", None):
        raise ValueError(f"color_by must be 'strain', 'tension' or None, not {color_by!r}")
    _check_choice("springs", springs)
    drawn_surface = bool(surface) and len(scene.faces) > 0
    m = len(scene.springs)
    show_springs = (m > 0 and not (drawn_surface and m > _AUTO_SPRINGS_MOST)) if springs == "auto" \
        else bool(springs) and m > 0
    colored: Literal["springs", "faces"] | None = None
    if color_by is not None:
        colored = "springs" if show_springs else "faces" if drawn_surface else None
    face_values = _SurfaceValues(scene.faces, scene.springs, len(scene.positions)) if colored == "faces" else None
    return _Plan(drawn_surface, show_springs, colored, face_values)


def _scene_scale(scenes: Sequence[_Scene], plan: _Plan, color_by: ColorBy, cmap: str | Colormap | None,
                 vmax: float | None) -> _ColorScale | None:
    """One colour scale for what the colour shows in every scene given (all the frames
    of an animation)."""
    if plan.colored is None:
        return None
    label = scenes[0].spring_values(color_by)[1]
    quantity = "tension" if label == TENSION_LABEL else "strain"
    values = [plan.values(scene, color_by) for scene in scenes]
    return _color_scale([v for v in values if v is not None], quantity, label, cmap, vmax)


class _Drawing:
    """The artists of one drawn scene, and how to move them to another state of it
    (in place: the same artists get new vertices and colours)."""

    def __init__(self, ax: Axes3D, scene: _Scene, *, color_by: ColorBy, plan: _Plan, scale: _ColorScale | None,
                 show_nodes: bool | Literal["auto"], show_colliders: bool, title: str | None,
                 view: tuple[float, float],
                 extent: np.ndarray | None = None, shifts: Sequence[np.ndarray] | None = None,
                 own_figure: bool = False, animated: bool = False) -> None:
        self.ax = ax
        self.own_figure = own_figure
        self.color_by = color_by
        self.scale = scale
        # One norm object for the springs, the faces and the colour bar, in every frame.
        self.norm = None if scale is None or scale.limit is None else scale.norm()
        self.title = title
        self.light = _Light(*view)
        self.plan = plan
        self.surface = plan.surface
        self.show_springs = plan.springs
        self.faces = scene.faces
        m, n = len(scene.springs), len(scene.positions)
        self.positions = scene.positions

        # Limits are set from the scene below: no autoscaling on the way.  (mplot3d would
        # also read the padding of a ragged list of polygons as data when autoscaling.)
        ax.set_autoscale_on(False)

        # Colliders: polygons in simulation coordinates, at the scene's collider centres.
        nodes_box = np.stack([scene.positions.min(axis=0), scene.positions.max(axis=0)])
        if extent is not None:
            nodes_box = np.stack([np.minimum(nodes_box[0], extent.min(axis=0)),
                                  np.maximum(nodes_box[1], extent.max(axis=0))])
        shapes = scene.colliders if show_colliders else []
        boxes = [nodes_box] + [_shape_box(shape) for shape in shapes if shape.kind != "plane"]
        size = float(np.ptp(np.concatenate(boxes), axis=0).max())
        cell = size / _CELLS_ACROSS if size > 0 else 1.0
        finite = [_shape_polygons(shape, np.zeros((0, 3)), cell) if shape.kind != "plane" else [] for shape in shapes]
        footprint = np.concatenate([nodes_box] + [np.concatenate(p) for p in finite if p])
        self.collider_polygons = [
            _shape_polygons(shape, footprint, cell) if shape.kind == "plane" else polygons
            for shape, polygons in zip(shapes, finite)
        ]
        self.collider_centers = [shape.center.copy() for shape in shapes]
        self.collider_is_plane = [shape.kind == "plane" for shape in shapes]
        # Screen-space polygons biased for the depth order (see _depth_biased).  Colliders
        # only move, never turn: their depth bias and shading are fixed.
        self.collider_sorted = [_biased_collider_polygons(polygons, self.light.eye)
                                for polygons in self.collider_polygons]
        self.collider_colors = [
            self.light.shade(_polygon_normals(drawn),
                             np.array(_PLANE_COLOR if shape.kind == "plane" else _SOLID_COLOR))
            for shape, drawn in zip(shapes, self.collider_sorted)
        ]

        # Surfaces and solid colliders share one collection so that mplot3d depth-sorts their
        # polygons together: a cloth draped over a table is in front of it where it should be.
        # Every node stays on the open side of a plane, so a plane seen from that side is
        # behind everything (drawn first), and in front of everything seen from the other.
        self.solids: Poly3DCollection | None = None
        # Antialiasing leaves hairline seams between cells.  A picture hides them under edges
        # in the face colour; an animation, where stroking every edge would double the cost
        # of a frame, turns antialiasing off for its faces instead.
        self.edged = not animated
        drawn, colors = self._solid_polygons(scene)
        if len(drawn):
            self.solids = Poly3DCollection(drawn, facecolors=colors, edgecolors=colors if self.edged else "none",
                                           linewidths=0.3 if self.edged else 0.0, antialiased=self.edged,
                                           label="surfaces", zorder=1)
            ax.add_collection3d(self.solids, autolim=False)
        self.planes: list[Poly3DCollection] = []
        # A plane that stays put behind everything is part of the still background.
        self.still_planes: list[Poly3DCollection] = []
        for index, shape in enumerate(shapes):
            if shape.kind == "plane":
                behind = float(_screen(shape.axis) @ self.light.eye) >= 0.0
                patch = Poly3DCollection(self._collider_polygons_at(scene, index),
                                         facecolors=self.collider_colors[index], edgecolors="none",
                                         label="plane collider", zorder=0 if behind else 5)
                ax.add_collection3d(patch, autolim=False)
                self.planes.append(patch)
                if behind and (shifts is None or not np.any(shifts[index])):
                    self.still_planes.append(patch)

        self.springs: Line3DCollection | None = None
        if self.show_springs:
            width = float(np.clip(18.0 / math.sqrt(max(m, 1)), 0.5 if self.surface else 0.3, 2.0))
            self.springs = Line3DCollection(self._segments(scene), linewidths=width, label="springs", zorder=2)
            values = self._values(scene) if plan.colored == "springs" else None
            if values is None:
                self.springs.set_color(_SPRING_COLOR)
            else:
                self.springs.set_cmap(self.scale.cmap.with_extremes(bad=_SPRING_COLOR))
                self.springs.set_norm(self.norm)
                self.springs.set_array(values)
            ax.add_collection3d(self.springs, autolim=False)

        size_of_node = float(np.clip(30.0 / math.sqrt(n), 0.8, 5.0)) * (0.5 if self.surface else 1.0)
        self.nodes: Line2D | None = None
        most_nodes = _AUTO_NODES_ON_SURFACE if self.surface else _AUTO_NODES_MOST
        if show_nodes is True or (show_nodes == "auto" and self.show_springs and n <= most_nodes):
            free = _screen(scene.positions[~scene.pinned])
            (self.nodes,) = ax.plot(free[:, 0], free[:, 1], free[:, 2], linestyle="none", marker="o",
                                    markersize=size_of_node, color=_NODE_COLOR, label="nodes", zorder=3)
        pins = _screen(scene.positions[scene.pinned])
        (self.pins,) = ax.plot(pins[:, 0], pins[:, 1], pins[:, 2], linestyle="none", marker="s",
                               markersize=max(2.2 * size_of_node, 4.0), markerfacecolor=_PIN_COLOR,
                               markeredgecolor="white", markeredgewidth=0.5, label="pinned nodes", zorder=4)
        self.pinned = scene.pinned.copy()

        figure = ax.get_figure()
        self.colorbar = None
        if scale is not None:
            if scale.limit is None:
                # No scale of round-off: a note says why everything has the neutral colour.
                if own_figure:
                    figure.text(*_NOTE_POSITION, scale.flat_note(), fontsize="small", color="0.3",
                                gid="flat-colour-note")
                else:
                    ax.text2D(0.0, 0.0, scale.flat_note(), transform=ax.transAxes, fontsize="x-small",
                              color="0.3", gid="flat-colour-note")
            else:
                mappable = self.springs if plan.colored == "springs" else ScalarMappable(self.norm, scale.cmap)
                if own_figure:
                    self.colorbar = figure.colorbar(mappable, cax=figure.add_axes(_COLORBAR_RECT), label=scale.label)
                else:
                    self.colorbar = figure.colorbar(mappable, ax=ax, shrink=0.55, pad=0.1, label=scale.label)

        ax.computed_zorder = False
        ax.set_xlabel("x (m)")
        ax.set_ylabel("z (m)")
        ax.set_zlabel("y (m), up")
        ax.zaxis.labelpad = 12  # clear of tick labels such as "-1.5"
        ax.view_init(elev=view[0], azim=view[1])
        self.fit(extent, shifts)
        self._set_title(scene)

    def _values(self, scene: _Scene) -> np.ndarray | None:
        """The values the colour shows (per spring or per face), or None for the neutral
        colours."""
        if self.scale is None or self.scale.limit is None:
            return None
        return self.plan.values(scene, self.color_by)

    def _segments(self, scene: _Scene) -> np.ndarray:
        return _screen(scene.positions[scene.springs])

    def _solid_polygons(self, scene: _Scene) -> tuple[np.ndarray, np.ndarray]:
        """Screen-space polygons (P, _SORT_CORNERS, 3) and colours (P, 4) of the surface (its
        triangles, moved towards the viewer for the depth order) and of the solid colliders
        (moved away) for ``scene`` (see _depth_biased)."""
        drawn = [np.zeros((0, _SORT_CORNERS, 3))]
        colors = [np.zeros((0, 4))]
        if self.surface:
            triangles = _screen(scene.positions[self.faces])
            values = self._values(scene) if self.plan.colored == "faces" else None
            base = np.array(_SURFACE_COLOR) if values is None \
                else self.scale.colors(values, self.norm, _SURFACE_COLOR)
            drawn.append(_depth_biased(triangles, self.light.eye, near=True))
            colors.append(self.light.shade(_triangle_normals(triangles), base))
        for index, is_plane in enumerate(self.collider_is_plane):
            if not is_plane:
                drawn.append(self._collider_polygons_at(scene, index))
                colors.append(self.collider_colors[index])
        return np.concatenate(drawn), np.concatenate(colors)

    def _collider_polygons_at(self, scene: _Scene, index: int) -> np.ndarray:
        """Screen-space polygons of collider ``index``, moved to where it is in ``scene``."""
        shift = scene.colliders[index].center - self.collider_centers[index]
        return self.collider_sorted[index] + _screen(shift)

    def fit(self, extent: np.ndarray | None, shifts: Sequence[np.ndarray] | None = None) -> None:
        """Axis limits and box aspect (equal scale on all three axes) covering the nodes, the
        points ``extent`` and the colliders (moved by up to ``shifts`` (2, 3) each)."""
        boxes = []
        if extent is not None:
            boxes.append(np.asarray(extent, dtype=float).reshape(-1, 3))
        boxes.append(self.positions)
        for index, polygons in enumerate(self.collider_polygons):
            if not polygons:
                continue
            points = np.concatenate(polygons)
            low, high = points.min(axis=0), points.max(axis=0)
            if shifts is not None:
                low, high = low + shifts[index][0], high + shifts[index][1]
            boxes.append(np.stack([low, high]))
        points = _screen(np.concatenate(boxes))
        low, high = points.min(axis=0), points.max(axis=0)
        largest = float((high - low).max())
        if not largest > 0:
            largest = 1.0
        # A margin all round, and no axis shorter than _THINNEST of the longest (a flat
        # cloth would otherwise get an axis too short for its tick labels).  Limits, not
        # the scale, change: one metre is as long on every axis.
        longest = (1.0 + 2.0 * _MARGIN) * largest
        pad = np.maximum(_MARGIN * largest, 0.5 * (_THINNEST * longest - (high - low)))
        low = low - pad
        high = high + pad
        self.ax.set_xlim(low[0], high[0])
        # Reversed: with x to the right and y up, z must point towards the viewer for a
        # right-handed picture (a plain (x, z, y) mapping would show the scene mirrored).
        self.ax.set_ylim(high[1], low[1])
        self.ax.set_zlim(low[2], high[2])
        lengths = high - low
        for axis, length, along_view in zip((self.ax.xaxis, self.ax.yaxis, self.ax.zaxis), lengths, self.light.eye):
            axis.set_major_locator(MaxNLocator(nbins=max(2, round(6 * length / lengths.max()))))
            # An axis seen nearly end-on would pile its tick labels and name on each other.
            if length * math.sqrt(max(1.0 - along_view**2, 0.0)) < _END_ON * lengths.max():
                axis.set_major_formatter(NullFormatter())
                axis.set_label_text("")
        if self.own_figure:
            _zoom_to_fit(self.ax, tuple(high - low), with_colorbar=self.colorbar is not None)
        else:
            self.ax.set_box_aspect(tuple(high - low))

    def _set_title(self, scene: _Scene) -> None:
        lines = [self.title] if self.title else []
        if scene.time is not None:
            lines.append(f"t = {scene.time:.3f} s")
        # Only the text: set_title would also reset the title's place above the axes,
        # which a frame drawn over a still background does not recompute.
        self.ax.title.set_text("\n".join(lines))

    def artists(self) -> list[Any]:
        """The artists that change from frame to frame, in drawing order."""
        moving: list[Any] = [*[plane for plane in self.planes if plane not in self.still_planes],
                             self.solids, self.springs, self.nodes, self.pins]
        return sorted([artist for artist in moving if artist is not None], key=lambda a: a.get_zorder()) \
            + [self.ax.title]

    def update(self, scene: _Scene) -> list[Any]:
        """Moves every artist to ``scene`` (same topology); returns the changed artists."""
        self.positions = scene.positions
        if self.springs is not None:
            self.springs.set_segments(self._segments(scene))
            values = self._values(scene) if self.plan.colored == "springs" else None
            if values is not None:
                self.springs.set_array(values)
        if self.nodes is not None:
            free = _screen(scene.positions[~self.pinned])
            self.nodes.set_data_3d(free[:, 0], free[:, 1], free[:, 2])
        pins = _screen(scene.positions[self.pinned])
        self.pins.set_data_3d(pins[:, 0], pins[:, 1], pins[:, 2])
        if self.solids is not None:
            drawn, colors = self._solid_polygons(scene)
            self.solids.set_verts(drawn)
            self.solids.set_facecolor(colors)
            if self.edged:
                self.solids.set_edgecolor(colors)
        planes = iter(self.planes)
        for index, is_plane in enumerate(self.collider_is_plane):
            if is_plane:
                next(planes).set_verts(self._collider_polygons_at(scene, index))
        self._set_title(scene)
        return self.artists()


def draw(obj: Drawable, ax: Axes | None = None, *, color_by: ColorBy = "strain", cmap: str | Colormap | None = None,
         show_nodes: bool | Literal["auto"] = "auto", show_colliders: bool = True, surface: bool = True,
         springs: bool | Literal["auto"] = "auto", title: str | None = None, vmax: float | None = None,
         elev: float | None = None, azim: float | None = None,
         figsize: tuple[float, float] | None = None) -> Axes3D:
    """Draws a mass-spring system in 3-D and returns the (3-D) Axes.

    Parameters
    ----------
    obj : System, Trajectory or dict
        A system (its current state), a trajectory (its last frame) or one frame of it
        (:meth:`Trajectory.frame`); a frame dict needs ``positions`` (m) and may have
        ``springs``, ``faces``, ``pinned``, ``rest`` (m), ``k`` (N/m), ``colliders`` and
        ``time`` (s).
    ax : mpl_toolkits.mplot3d.axes3d.Axes3D, optional
        Axes to draw into (made with ``projection="3d"``); default a new figure.
    color_by : "strain", "tension" or None
        What the colour shows: strain ``(l - L) / L`` (dimensionless), tension (N; a
        System's :meth:`~msprings.System.tension`, with its damper; for a frame ``k (l - L)``
        if it carries ``k``, else strain is shown), or nothing.  It colours the springs when
        they are drawn, else the faces (each face the mean of the springs along its edges).
        The scale is symmetric about 0 (blue compressed, red stretched) with a colour bar.
        When every value is round-off (abs(strain) < 1e-9, abs(tension) < 1e-6 N: a system at
        rest), everything keeps its neutral colour and a note says so instead of a colour
        bar of round-off.
    cmap : str or Colormap, optional
        Colour map (default ``"coolwarm"``).
    show_nodes : bool or "auto"
        Mark free nodes with dots; ``"auto"``: when the springs are drawn and there are at
        most 2,000 nodes (100 with a surface drawn).  Pinned nodes are always marked, with
        black squares.
    show_colliders : bool
        Draw the colliders: a plane as a translucent square under the scene, a sphere, box
        or capped cylinder as a shaded solid.
    surface : bool
        Draw the system's faces (``s.faces``) as triangles lit by a light over the
        viewer's shoulder.
    springs : bool or "auto"
        Draw the springs as lines; ``"auto"``: unless faces are drawn and there are more
        than 1,000 springs (they would cover the surface).
    title : str, optional
        Title; the time (s) is added on a second line when known.
    vmax : float, optional
        The colour scale runs from ``-vmax`` to ``vmax`` (strain or N); default the largest
        magnitude in the picture.
    elev, azim : float, optional
        Viewpoint (degrees): elevation above the floor and azimuth about the vertical
        (matplotlib's ``view_init``); default 22 and -58.
    figsize : (float, float), optional
        Size (inches) of the new figure when ``ax`` is None.

    Returns
    -------
    mpl_toolkits.mplot3d.axes3d.Axes3D
        The Axes drawn in.

    Raises
    ------
    TypeError
        If ``ax`` is not a 3-D Axes, or ``obj`` is not a System, Trajectory or frame dict.
    ValueError
        If an option is not one of its choices (``color_by``, ``show_nodes``,
        ``springs``), or ``elev`` or ``azim`` is not finite.
    KeyError
        If ``cmap`` names no matplotlib colormap.

    Notes
    -----
    The picture keeps one scale on all three axes (lengths are true); its limits cover
    every node and collider with a small margin.  Simulation y is drawn up.
    """
    _check_choice("show_nodes", show_nodes)
    view = _check_view(elev, azim)
    if ax is not None and not isinstance(ax, Axes3D):
        raise TypeError("ax must be a 3-D Axes: make it with fig.add_subplot(projection='3d')")
    scene = _scene(obj)
    plan = _plan(scene, color_by, surface, springs)
    scale = _scene_scale([scene], plan, color_by, cmap, vmax)
    own_figure = ax is None
    if ax is None:
        ax = _new_axes(figsize)
    _Drawing(ax, scene, color_by=color_by, plan=plan, scale=scale, show_nodes=show_nodes,
             show_colliders=show_colliders, title=title, view=view, own_figure=own_figure)
    return ax
