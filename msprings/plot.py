"""Pictures and animations of mass-spring systems with matplotlib.

- :func:`draw` shows a :class:`~msprings.System`, a recorded frame or the last frame of a
  :class:`~msprings.trajectory.Trajectory` in 3-D: springs coloured by strain or tension,
  pinned nodes marked, surfaces shaded, colliders drawn as solids;
- :func:`animate` turns a trajectory into a :class:`matplotlib.animation.FuncAnimation`
  (:func:`save_animation` writes it as GIF or MP4, :func:`to_html` embeds it in Jupyter);
- :func:`plot_energy` plots the energy ledger of a run;
- :func:`plot_stability` and :func:`compare_integrators` show the integrators' stability,
  in theory (the damped oscillator of :mod:`msprings.stability`) and on a real system.

The simulation's y axis is up.  matplotlib's 3-D axes put their third axis up, so a point
(x, y, z) of the simulation is drawn at matplotlib's (x, z, y): gravity points down on the
screen.  The axes are labelled with the simulation's names.  Units are SI throughout.

This module is the only one of msprings that imports matplotlib (``pip install
msprings[plot]``); ``import msprings`` does not load it.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation as mpl_animation
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection
from mpl_toolkits.mplot3d.axes3d import Axes3D
from numpy.typing import ArrayLike

from . import stability
from ._core import DivergenceError
from ._system import StabilityWarning, System
from .colliders import Collider
from .trajectory import ENERGY_FIELDS, Trajectory

__all__ = [
    "STRAIN_LABEL",
    "TENSION_LABEL",
    "SceneAnimation",
    "animate",
    "collider_polygons",
    "compare_integrators",
    "draw",
    "plot_energy",
    "plot_stability",
    "save_animation",
    "to_html",
]

#: Colour bar label when springs are coloured by strain.
STRAIN_LABEL = "spring strain (l - L) / L (dimensionless)"
#: Colour bar label when springs are coloured by tension.
TENSION_LABEL = "spring tension (N), > 0 pulling"

ColorBy = Literal["strain", "tension"] | None
Drawable = System | Trajectory | Mapping[str, Any]

# Shading: colour = base * (AMBIENT + (1 - AMBIENT) |n . LIGHT|), two-sided so a cloth seen
# from behind is lit like its front.  LIGHT is in matplotlib's coordinates (third axis up):
# from above, over the default viewpoint's left shoulder.
_LIGHT = np.array([0.3, -0.5, 1.0]) / np.linalg.norm([0.3, -0.5, 1.0])
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
_CELLS_ACROSS = 16  # collider surfaces are cut into cells about 1/16 of the scene across
_DIVERGED_COLOR = "tab:red"
# compare_integrators treats a value beyond this as overflowed (matplotlib's tick and scale
# arithmetic itself overflows near the largest float).
_BLOWN_UP = 1e200

_METHOD_COLORS = {
    "explicit_euler": "tab:red",
    "symplectic_euler": "tab:blue",
    "velocity_verlet": "tab:green",
    "rk4": "tab:purple",
    "implicit_euler": "tab:orange",
}
_METHOD_STYLES = {"velocity_verlet": (0, (5, 3))}  # dashed: it overlaps symplectic Euler when undamped
_ENERGY_COLORS = {
    "kinetic": "tab:red",
    "spring": "tab:green",
    "gravity": "tab:blue",
    "dissipated": "tab:orange",
    "work": "tab:brown",
    "mechanical": "tab:purple",
    "total": "black",
}


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
                       cell: float, sectors: int = 48) -> list[np.ndarray]:
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
    """
    shape = _shape(collider)
    points = shape.center[None, :] if around is None else np.asarray(around, dtype=float).reshape(-1, 3)
    if cell is None:
        extent = (np.ptp(_shape_box(shape), axis=0).max() if shape.kind != "plane"
                  else np.ptp(points, axis=0).max() if len(points) > 1 else 2.0)
        cell = extent / _CELLS_ACROSS if extent > 0 else 1.0
    return _shape_polygons(shape, points, float(cell))


# ---- shading ---------------------------------------------------------------------------


def _polygon_normals(polygons: Sequence[np.ndarray]) -> np.ndarray:
    """Unit normals (P, 3) of polygons by Newell's method (robust for any convex polygon)."""
    normals = np.empty((len(polygons), 3))
    for index, polygon in enumerate(polygons):
        normals[index] = np.cross(polygon, np.roll(polygon, -1, axis=0)).sum(axis=0)
    return normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)


def _shade(normals: np.ndarray, base: Sequence[float]) -> np.ndarray:
    """RGBA (P, 4): ``base`` darkened by the angle between each (screen) normal and the light."""
    light = _AMBIENT + (1.0 - _AMBIENT) * np.abs(normals @ _LIGHT)
    colors = np.tile(np.asarray(base, dtype=float), (len(normals), 1))
    colors[:, :3] *= light[:, None]
    return colors


def _triangle_shading(triangles: np.ndarray) -> np.ndarray:
    """Shaded RGBA (F, 4) of screen-space triangles (F, 3, 3)."""
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)
    return _shade(normals, _SURFACE_COLOR)


# ---- drawing ---------------------------------------------------------------------------


# Layout of a new figure (fractions of its size): the 3-D axes, and a colour bar clear
# of the tick labels that mplot3d draws outside the axes' own rectangle.
# The 3-D box (with its tick labels) is zoomed to fill _BOX_REGION, below the title.
_AXES_RECT = (0.0, 0.0, 0.82, 0.88)
_BOX_REGION = (0.01, 0.01, 0.83, 0.87)
_COLORBAR_RECT = (0.86, 0.22, 0.022, 0.56)
_AXES_RECT_ALONE = (0.0, 0.0, 1.0, 0.88)
_BOX_REGION_ALONE = (0.01, 0.01, 0.99, 0.87)
_LARGEST_ZOOM = 1.5


def _new_axes(figsize: tuple[float, float] | None) -> Axes3D:
    figure = plt.figure(figsize=figsize or (7.5, 6.0))
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


def _symmetric_limit(values: np.ndarray | None) -> float:
    """Half-width of a colour scale centred on 0 that holds every finite value."""
    if values is None:
        return 1.0
    finite = np.abs(values[np.isfinite(values)])
    largest = float(finite.max()) if finite.size else 0.0
    return largest if largest > 0 else 1e-3


class _Drawing:
    """The artists of one drawn scene, and how to move them to another state of it."""

    def __init__(self, ax: Axes3D, scene: _Scene, *, color_by: ColorBy, cmap: str | Colormap | None,
                 show_nodes: bool, show_colliders: bool, surface: bool, title: str | None, vmax: float | None,
                 extent: np.ndarray | None = None, shifts: Sequence[np.ndarray] | None = None,
                 own_figure: bool = False) -> None:
        self.ax = ax
        self.own_figure = own_figure
        self.color_by = color_by
        self.title = title
        self.surface = surface and len(scene.faces) > 0
        if color_by not in ("strain", "tension", None):
            raise ValueError(f"color_by must be 'strain', 'tension' or None, not {color_by!r}")
        values, label = scene.spring_values(color_by)
        self.label = label
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
        self.collider_colors = [
            _shade(_polygon_normals([_screen(p) for p in polygons]), _PLANE_COLOR if shape.kind == "plane"
                   else _SOLID_COLOR)
            for shape, polygons in zip(shapes, self.collider_polygons)
        ]

        # Surfaces and solid colliders share one collection so that mplot3d depth-sorts their
        # polygons together: a cloth draped over a table is in front of it where it should be.
        # Every node stays on the open side of a plane, so a plane seen from that side is
        # behind everything (drawn first), and in front of everything seen from the other.
        self.solids: Poly3DCollection | None = None
        polygons, colors = self._solid_polygons(scene)
        if polygons:
            # Edges in the face colour hide the hairline seams antialiasing leaves between cells.
            self.solids = Poly3DCollection(polygons, facecolors=colors, edgecolors=colors, linewidths=0.4,
                                           label="surfaces", zorder=1)
            ax.add_collection3d(self.solids, autolim=False)
        elevation, azimuth = np.radians(_VIEW)
        # Towards the viewer in data coordinates (the z axis, matplotlib's second, is reversed).
        eye = np.array([np.cos(elevation) * np.cos(azimuth), -np.cos(elevation) * np.sin(azimuth),
                        np.sin(elevation)])
        self.planes: list[Poly3DCollection] = []
        for index, shape in enumerate(shapes):
            if shape.kind == "plane":
                behind = float(_screen(shape.axis) @ eye) >= 0.0
                patch = Poly3DCollection(self._collider_polygons(scene, index), facecolors=self.collider_colors[index],
                                         edgecolors=[0.35, 0.35, 0.35, 0.5], linewidths=0.3, label="plane collider",
                                         zorder=0 if behind else 5)
                ax.add_collection3d(patch, autolim=False)
                self.planes.append(patch)

        m = len(scene.springs)
        width = float(np.clip(18.0 / math.sqrt(max(m, 1)), 0.5 if self.surface else 0.3, 2.0))
        self.springs = Line3DCollection(self._segments(scene), linewidths=width, label="springs", zorder=2)
        if values is not None:
            limit = float(vmax) if vmax is not None else _symmetric_limit(values)
            colormap = colormaps[cmap] if isinstance(cmap, str) else (cmap or colormaps[_DEFAULT_CMAP])
            self.springs.set_cmap(colormap.with_extremes(bad="0.5"))
            self.springs.set_norm(Normalize(-limit, limit))
            self.springs.set_array(values)
        else:
            self.springs.set_color(_SPRING_COLOR)
        ax.add_collection3d(self.springs, autolim=False)

        n = len(scene.positions)
        size_of_node = float(np.clip(30.0 / math.sqrt(n), 0.8, 5.0)) * (0.5 if self.surface else 1.0)
        self.nodes: Line2D | None = None
        if show_nodes:
            free = _screen(scene.positions[~scene.pinned])
            (self.nodes,) = ax.plot(free[:, 0], free[:, 1], free[:, 2], linestyle="none", marker="o",
                                    markersize=size_of_node, color=_NODE_COLOR, label="nodes", zorder=3)
        pins = _screen(scene.positions[scene.pinned])
        (self.pins,) = ax.plot(pins[:, 0], pins[:, 1], pins[:, 2], linestyle="none", marker="s",
                               markersize=max(2.2 * size_of_node, 4.0), markerfacecolor=_PIN_COLOR,
                               markeredgecolor="white", markeredgewidth=0.5, label="pinned nodes", zorder=4)
        self.pinned = scene.pinned.copy()

        if values is not None:
            figure = ax.get_figure()
            if own_figure:
                figure.colorbar(self.springs, cax=figure.add_axes(_COLORBAR_RECT), label=label)
            else:
                figure.colorbar(self.springs, ax=ax, shrink=0.55, pad=0.1, label=label)

        ax.computed_zorder = False
        ax.set_xlabel("x (m)")
        ax.set_ylabel("z (m)")
        ax.set_zlabel("y (m), up")
        ax.view_init(elev=_VIEW[0], azim=_VIEW[1])
        self.fit(extent, shifts)
        self._set_title(scene)

    def _segments(self, scene: _Scene) -> np.ndarray:
        return _screen(scene.positions[scene.springs])

    def _solid_polygons(self, scene: _Scene) -> tuple[list[np.ndarray], np.ndarray]:
        """Screen-space polygons and colours of the surface and colliders for ``scene``."""
        polygons: list[np.ndarray] = []
        colors = [np.zeros((0, 4))]
        if self.surface:
            triangles = _screen(scene.positions[scene.faces])
            polygons += list(triangles)
            colors.append(_triangle_shading(triangles))
        for index, is_plane in enumerate(self.collider_is_plane):
            if not is_plane:
                polygons += self._collider_polygons(scene, index)
                colors.append(self.collider_colors[index])
        return polygons, np.concatenate(colors)

    def _collider_polygons(self, scene: _Scene, index: int) -> list[np.ndarray]:
        """Screen-space polygons of collider ``index``, moved to where it is in ``scene``."""
        shift = scene.colliders[index].center - self.collider_centers[index]
        return [_screen(polygon + shift) for polygon in self.collider_polygons[index]]

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
        for axis, length in zip((self.ax.xaxis, self.ax.yaxis, self.ax.zaxis), high - low):
            axis.set_major_locator(MaxNLocator(nbins=max(2, round(7 * length / (high - low).max()))))
        if self.own_figure:
            _zoom_to_fit(self.ax, tuple(high - low), with_colorbar=self.color_by is not None)
        else:
            self.ax.set_box_aspect(tuple(high - low))

    def _set_title(self, scene: _Scene) -> None:
        lines = [self.title] if self.title else []
        if scene.time is not None:
            lines.append(f"t = {scene.time:.3f} s")
        self.ax.set_title("\n".join(lines))

    def update(self, scene: _Scene) -> list[Any]:
        """Moves every artist to ``scene`` (same topology); returns the changed artists."""
        self.positions = scene.positions
        self.springs.set_segments(self._segments(scene))
        values, _ = scene.spring_values(self.color_by)
        if values is not None:
            self.springs.set_array(values)
        changed: list[Any] = [self.springs, self.pins]
        if self.nodes is not None:
            free = _screen(scene.positions[~self.pinned])
            self.nodes.set_data_3d(free[:, 0], free[:, 1], free[:, 2])
            changed.append(self.nodes)
        pins = _screen(scene.positions[self.pinned])
        self.pins.set_data_3d(pins[:, 0], pins[:, 1], pins[:, 2])
        if self.solids is not None:
            polygons, colors = self._solid_polygons(scene)
            self.solids.set_verts(polygons)
            self.solids.set_facecolor(colors)
            self.solids.set_edgecolor(colors)
            changed.append(self.solids)
        planes = iter(self.planes)
        for index, is_plane in enumerate(self.collider_is_plane):
            if is_plane:
                patch = next(planes)
                patch.set_verts(self._collider_polygons(scene, index))
                changed.append(patch)
        self._set_title(scene)
        return changed


def draw(obj: Drawable, ax: Axes | None = None, *, color_by: ColorBy = "strain", cmap: str | Colormap | None = None,
         show_nodes: bool = True, show_colliders: bool = True, surface: bool = True, title: str | None = None,
         vmax: float | None = None, figsize: tuple[float, float] | None = None) -> Axes3D:
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
        Colour of the springs: strain ``(l - L) / L`` (dimensionless), tension (N; a
        System's :meth:`~msprings.System.tension`, with its damper; for a frame ``k (l - L)``
        if it carries ``k``, else strain is shown), or one plain colour.  A colour bar with
        the quantity and unit is added.  The scale is symmetric about 0: by default blue is
        compressed, red stretched.
    cmap : str or Colormap, optional
        Colour map of the springs (default ``"coolwarm"``).
    show_nodes : bool
        Mark free nodes with dots.  Pinned nodes are always marked, with black squares.
    show_colliders : bool
        Draw the colliders: a plane as a translucent square under the scene, a sphere, box
        or capped cylinder as a shaded solid.
    surface : bool
        Draw the system's faces (``s.faces``) as triangles shaded by their orientation.
    title : str, optional
        Title; the time (s) is added on a second line when known.
    vmax : float, optional
        The colour scale runs from ``-vmax`` to ``vmax`` (strain or N); default the largest
        magnitude in the picture.
    figsize : (float, float), optional
        Size (inches) of the new figure when ``ax`` is None.

    The picture keeps one scale on all three axes (lengths are true); its limits cover
    every node and collider with a small margin.  Simulation y is drawn up.
    """
    own_figure = ax is None
    if ax is None:
        ax = _new_axes(figsize)
    elif not isinstance(ax, Axes3D):
        raise TypeError("ax must be a 3-D Axes: make it with fig.add_subplot(projection='3d')")
    _Drawing(ax, _scene(obj), color_by=color_by, cmap=cmap, show_nodes=show_nodes, show_colliders=show_colliders,
             surface=surface, title=title, vmax=vmax, own_figure=own_figure)
    return ax


# ---- animation -------------------------------------------------------------------------


class SceneAnimation(mpl_animation.FuncAnimation):
    """A :class:`~matplotlib.animation.FuncAnimation` of a trajectory.

    Attributes: ``fps`` (frames per second, used by :func:`save_animation`),
    ``frame_count`` and ``axes`` (the 3-D Axes it draws in; ``axes.get_figure()`` is the
    figure)."""

    def __init__(self, axes: Axes3D, update: Callable[[int], list[Any]], frames: Sequence[int], interval: float,
                 fps: float) -> None:
        super().__init__(axes.get_figure(), update, frames=frames, interval=interval, blit=False,
                         cache_frame_data=False)
        self.axes = axes
        self.fps = fps
        self.frame_count = len(frames)
        self._show = update

    def show_frame(self, index: int) -> None:
        """Moves the picture to frame ``index`` (e.g. to save a still of it with
        ``anim.axes.get_figure().savefig``)."""
        if not -self.frame_count <= index < self.frame_count:
            raise IndexError(f"frame {index} is outside 0..{self.frame_count - 1}")
        self._show(index % self.frame_count)


def animate(trajectory: Trajectory, *, fps: float = 30.0, color_by: ColorBy = "strain", interval: float | None = None,
            figsize: tuple[float, float] | None = None, every: int = 1, **draw_options: Any) -> SceneAnimation:
    """An animation of a recorded run, one frame per record (every ``every``-th record).

    The axis limits and the colour scale are fixed over the whole run (they cover every
    node and collider in every frame), so the motion reads true.  ``fps`` is the frame rate
    (frames per second) used when saving; ``interval`` the delay between frames on screen
    (ms; default ``1000 / fps``).  Other keywords go to :func:`draw` (``cmap``,
    ``show_nodes``, ``show_colliders``, ``surface``, ``title``, ``vmax``).  Display it with
    :func:`to_html` in Jupyter, or save it with :func:`save_animation`.
    """
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"animate() takes a Trajectory (System.run), not {type(trajectory).__name__}")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    if not (isinstance(fps, (int, float)) and fps > 0 and math.isfinite(fps)):
        raise ValueError(f"fps must be > 0, got {fps!r}")
    records = list(range(0, len(trajectory), int(every)))
    scenes = [_frame_scene(trajectory.frame(r)) for r in records]
    if draw_options.get("vmax") is None and color_by is not None:
        draw_options["vmax"] = _symmetric_limit(np.concatenate([s.spring_values(color_by)[0] for s in scenes]))
    positions = trajectory.positions[records]
    extent = np.stack([positions.min(axis=(0, 1)), positions.max(axis=(0, 1))])
    ax = _new_axes(figsize)
    options = {"cmap": None, "show_nodes": True, "show_colliders": True, "surface": True, "title": None,
               "vmax": None}
    unknown = set(draw_options) - set(options)
    if unknown:
        raise TypeError(f"animate() got unexpected keyword arguments {sorted(unknown)}")
    options.update(draw_options)
    shifts = []
    for index, shape in enumerate(scenes[0].colliders):
        moves = np.array([scene.colliders[index].center - shape.center for scene in scenes])
        shifts.append(np.stack([moves.min(axis=0), moves.max(axis=0)]))
    drawing = _Drawing(ax, scenes[0], color_by=color_by, extent=extent, shifts=shifts, own_figure=True, **options)

    def update(frame: int) -> list[Any]:
        return drawing.update(scenes[frame])

    return SceneAnimation(ax, update, list(range(len(scenes))),
                          1000.0 / fps if interval is None else float(interval), float(fps))


def save_animation(anim: mpl_animation.Animation, path: str | Path, *, fps: float | None = None,
                   dpi: float | None = None) -> Path:
    """Writes an animation to ``path``: ``.gif`` with Pillow, ``.mp4`` with ffmpeg.

    ``fps`` (frames per second) defaults to the animation's own (:func:`animate`), else 30;
    ``dpi`` to the figure's.  Raises RuntimeError when ffmpeg is needed but not installed,
    ValueError for another file type.  Returns the path.
    """
    target = Path(path)
    rate = float(fps if fps is not None else getattr(anim, "fps", 30.0))
    suffix = target.suffix.lower()
    writer: mpl_animation.AbstractMovieWriter
    if suffix == ".gif":
        writer = mpl_animation.PillowWriter(fps=rate)
    elif suffix == ".mp4":
        if not mpl_animation.FFMpegWriter.isAvailable():
            raise RuntimeError(
                "saving an .mp4 needs the ffmpeg program, which matplotlib cannot find: install ffmpeg "
                "(e.g. `apt install ffmpeg`, `conda install ffmpeg`) or save a .gif instead"
            )
        writer = mpl_animation.FFMpegWriter(fps=rate)
    else:
        raise ValueError(f"cannot save an animation as {target.suffix or 'a file without suffix'!r}: use .gif or .mp4")
    anim.save(str(target), writer=writer, dpi=dpi)
    return target


def to_html(anim: mpl_animation.Animation) -> str:
    """The animation as a self-contained HTML/JavaScript player (frames embedded as images)
    for ``IPython.display.HTML`` in Jupyter: no ffmpeg needed."""
    return anim.to_jshtml(fps=getattr(anim, "fps", None), default_mode="loop")


# ---- energy ----------------------------------------------------------------------------


def plot_energy(trajectory: Trajectory, ax: Axes | None = None) -> Axes:
    """The energy ledger of a run against time (s): kinetic, spring, gravity, dissipated,
    mechanical (= kinetic + spring + gravity) and total (= mechanical + dissipated, dashed),
    all in J.  With an exact integrator and fixed pins the total is constant; what it drifts
    by is the integrator's error."""
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"plot_energy() takes a Trajectory (System.run), not {type(trajectory).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 4.5), layout="constrained")
    for name in ENERGY_FIELDS:
        ax.plot(trajectory.times, getattr(trajectory, name), label=name, color=_ENERGY_COLORS[name],
                linestyle="--" if name == "total" else "-", linewidth=2.0 if name == "total" else 1.4)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("energy (J)")
    ax.legend(loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


# ---- stability -------------------------------------------------------------------------


def _integrator_list(integrators: Sequence[str] | str | None, known: Sequence[str]) -> list[str]:
    names = list(known) if integrators is None else [integrators] if isinstance(integrators, str) \
        else list(integrators)
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(f"integrators must be names from {tuple(known)}, got {names!r}")
    return names


def _color(name: str, index: int) -> str:
    return _METHOD_COLORS.get(name, f"C{index}")


def _describe_limit(limit: float) -> str:
    if limit == 0.0:
        return "unstable at every ω h"
    if math.isinf(limit):
        return "stable at every ω h"
    return f"stable for ω h ≤ {limit:.3g}"


def plot_stability(integrators: Sequence[str] | None = None, *, zeta: float = 0.0,
                   kind: Literal["radius", "region"] = "radius", ax: Axes | None = None,
                   omega_h_max: float | None = None) -> Axes:
    """The integrators' stability on the damped oscillator (:mod:`msprings.stability`).

    ``kind="radius"``: the spectral radius of one step against ``omega h`` (dimensionless;
    omega = sqrt(k/m) in rad/s, h the step in s) at damping ratio ``zeta``, on a log
    scale, with the line radius = 1 (above it every step amplifies the motion) and each
    method's stability limit marked by a vertical dotted line (2 for symplectic Euler and
    velocity Verlet, 2 sqrt 2 for RK4 when undamped; explicit Euler has none when undamped,
    implicit Euler none ever: see the legend).

    ``kind="region"``: the stable set (spectral radius <= 1) of each method in the
    (omega h, zeta) plane, shaded and outlined (:func:`msprings.stability.region_grid`);
    ``zeta`` > 0 is marked as a horizontal line.

    ``integrators`` default: all of :data:`msprings.stability.INTEGRATORS`.
    """
    names = _integrator_list(integrators, stability.INTEGRATORS)
    if not (isinstance(zeta, (int, float)) and zeta >= 0 and math.isfinite(zeta)):
        raise ValueError(f"zeta must be >= 0 and finite, got {zeta!r}")
    if kind not in ("radius", "region"):
        raise ValueError(f"kind must be 'radius' or 'region', not {kind!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 4.8), layout="constrained")
    limits = {name: float(stability.stability_limit(name, zeta)) for name in names}
    finite = [limit for limit in limits.values() if 0.0 < limit < math.inf]
    top = float(omega_h_max) if omega_h_max is not None else max([4.0] + [1.25 * limit for limit in finite])
    if kind == "radius":
        steps = np.linspace(0.0, top, 1201)
        lowest, highest = 1.0, 1.0
        for index, name in enumerate(names):
            radius = np.asarray(stability.spectral_radius(name, steps, zeta))
            lowest, highest = min(lowest, float(radius.min())), max(highest, float(radius.max()))
            color = _color(name, index)
            ax.plot(steps, radius, color=color, linestyle=_METHOD_STYLES.get(name, "-"),
                    label=f"{name} ({_describe_limit(limits[name])})")
            limit = limits[name]
            if 0.0 < limit < math.inf:
                marker = ax.axvline(limit, color=color, linestyle=":", linewidth=1.5, label="_limit")
                marker.set_gid(f"stability-limit:{name}")
        unit = ax.axhline(1.0, color="black", linewidth=1.0, linestyle="--", label="radius = 1")
        unit.set_gid("radius-one")
        ax.set_yscale("log")
        ax.set_ylim(max(lowest * 0.8, 1e-2), min(highest * 1.25, 1e3))
        ax.set_xlim(0.0, top)
        ax.set_xlabel("ω h (dimensionless; ω = √(k/m), h = time step)")
        ax.set_ylabel("spectral radius of one step")
        ax.set_title(f"Growth per step of the oscillator, ζ = {zeta:g}")
        ax.legend(loc="upper left", fontsize="small")
    else:
        zeta_max = max(2.0, 1.25 * zeta)
        handles = []
        # A conservative method's radius is 1 to round-off where it is stable: the boundary
        # is drawn at 1 + 1e-9 so that round-off does not draw spurious curves.
        level = 1.0 + 1e-9
        for index, name in enumerate(names):
            steps, zetas, radius = stability.region_grid(name, top, zeta_max, 301)
            color = _color(name, index)
            style = _METHOD_STYLES.get(name, "-")
            if radius.max() > level:
                ax.contourf(steps, zetas, radius, levels=[0.0, level], colors=[color], alpha=0.07)
                outline = ax.contour(steps, zetas, radius, levels=[level], colors=[color], linewidths=1.8,
                                     linestyles=[style])
                outline.set_gid(f"stability-boundary:{name}")
                label = name
            else:
                label = f"{name} (stable everywhere)"
            handles.append(Line2D([], [], color=color, linewidth=1.8, linestyle=style, label=label))
        if zeta > 0:
            handles.append(ax.axhline(zeta, color="black", linestyle=":", linewidth=1.0, label=f"ζ = {zeta:g}"))
        ax.set_xlim(0.0, top)
        ax.set_ylim(0.0, zeta_max)
        ax.set_xlabel("ω h (dimensionless; ω = √(k/m), h = time step)")
        ax.set_ylabel("damping ratio ζ (dimensionless)")
        ax.set_title("Stable steps: shaded side of each curve (spectral radius ≤ 1)")
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


@dataclass
class _Divergence:
    """Where a run stopped: the time (s) and number of the failing step, and why."""

    time: float
    step: int
    reason: str


def _run_series(system: System, dt: float, steps: int, quantity: str, node: int
                ) -> tuple[np.ndarray, np.ndarray, _Divergence | None]:
    """Times (s) and finite values of ``quantity`` over a run (at most about 1500 records),
    and where it diverged: a :class:`~msprings.DivergenceError`, or the quantity itself
    overflowing (beyond 1e200: an energy of a blowing-up state reaches inf before the state
    does)."""
    def value() -> float:
        if quantity == "position":
            return float(system.x[node, 1])
        return float(getattr(system.energy(), quantity))

    every = max(1, steps // 1500)
    times, values = [system.t], [value()]
    done = 0
    while done < steps:
        chunk = min(every, steps - done)
        try:
            system.step(dt, chunk)
        except DivergenceError as error:
            last = value()
            if system.t > times[-1] and abs(last) <= _BLOWN_UP:
                times.append(system.t)
                values.append(last)
            return np.array(times), np.array(values), _Divergence(error.time, error.step, "non-finite state")
        done += chunk
        current = value()
        if not abs(current) <= _BLOWN_UP:
            return np.array(times), np.array(values), _Divergence(system.t, system.steps, f"{quantity} overflowed")
        times.append(system.t)
        values.append(current)
    return np.array(times), np.array(values), None


def compare_integrators(system_factory: Callable[[], System], dt: float, steps: int,
                        integrators: Sequence[str] | None = None, *,
                        quantity: str = "total", node: int = -1) -> Figure:
    """Runs the same scene with each integrator and plots a quantity against time (s), one
    panel per integrator, side by side.

    ``system_factory()`` must return a fresh :class:`~msprings.System` each call; each is
    stepped ``steps`` times with ``dt`` (s).  ``quantity``: an energy of the ledger
    (``"total"``, ``"mechanical"``, ``"kinetic"``, ``"spring"``, ``"gravity"``,
    ``"dissipated"``; J) or ``"position"``: the height y (m) of node ``node``.  A method that
    diverges (a non-finite state, :class:`~msprings.DivergenceError`, or the quantity
    overflowing: beyond 1e200) is plotted up to its last finite value, marked with a red
    cross and a line at the time of the failing step (its panel title says so); a step above the method's
    stability limit (:class:`~msprings.StabilityWarning`) is noted in the title instead of
    being warned.  Each panel has its own vertical scale (logarithmic when the values grow
    a thousandfold) and a dotted line at the initial value.  Returns the Figure.
    """
    names = _integrator_list(integrators, stability.INTEGRATORS)
    if quantity not in ENERGY_FIELDS and quantity != "position":
        raise ValueError(f"quantity must be one of {ENERGY_FIELDS + ('position',)}, not {quantity!r}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    columns = min(len(names), 3)
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False,
                                layout="constrained")
    unit = "y of node {} (m)".format(node) if quantity == "position" else f"{quantity} energy (J)"
    for index, name in enumerate(names):
        ax = axes.flat[index]
        system = system_factory()
        if not isinstance(system, System):
            raise TypeError(f"system_factory() must return a msprings.System, not {type(system).__name__}")
        if quantity == "position" and not -system.n_nodes <= node < system.n_nodes:
            raise ValueError(f"node {node} is outside 0..{system.n_nodes - 1}")
        system.integrator = name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StabilityWarning)
            times, values, failure = _run_series(system, dt, steps, quantity, node)
        for entry in caught:
            if not issubclass(entry.category, StabilityWarning):
                warnings.warn_explicit(entry.message, entry.category, entry.filename, entry.lineno)
        above_limit = any(issubclass(entry.category, StabilityWarning) for entry in caught)
        color = _color(name, index)
        ax.axhline(values[0], color="0.5", linestyle=":", linewidth=1.0, label="initial")
        ax.plot(times, values, color=color, label=name)
        title = name
        if failure is not None:
            ax.plot(times[-1:], values[-1:], linestyle="none", marker="X", markersize=10, color=_DIVERGED_COLOR,
                    label=f"diverged at t = {failure.time:.4g} s")
            ax.axvline(failure.time, color=_DIVERGED_COLOR, linestyle="--", linewidth=1.0)
            title += f"\ndiverged at t = {failure.time:.4g} s (step {failure.step}: {failure.reason})"
        elif above_limit:
            title += "\ndt above its stability limit"
        ax.set_title(title, fontsize="medium", color=_DIVERGED_COLOR if failure is not None else "black")
        ax.set_xlabel("time (s)")
        ax.set_ylabel(unit)
        ax.set_xlim(0.0, dt * steps)
        # A blow-up spans hundreds of orders of magnitude: a symmetric log scale (linear
        # near the initial value) shows how it grows.
        typical = float(np.abs(values[: max(2, len(values) // 20)]).max())
        if typical > 0 and float(np.abs(values).max()) > 1e3 * typical:
            # Limits first (no autoscaling margins, which overflow near the largest float).
            low, high = float(values.min()), float(values.max())
            if low > 0:
                ax.set_ylim(low / 10.0, 10.0 * high)
                ax.set_yscale("log")
            else:
                ax.set_ylim(10.0 * low if low < -typical else low - typical,
                            10.0 * high if high > typical else high + typical)
                ax.set_yscale("symlog", linthresh=typical)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="x-small")
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    figure.suptitle(f"{unit} with dt = {dt:g} s, {steps} steps")
    return figure


def __getattr__(name: str) -> Any:
    """``view`` and ``save_view``, the interactive 3-D views of :mod:`msprings.view3d`,
    loaded (with plotly) on first use."""
    if name in ("view", "save_view"):
        from . import view3d

        return getattr(view3d, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
