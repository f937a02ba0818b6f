"""Interactive 3-D views of mass-spring systems in the browser, drawn with plotly.

- :func:`view` returns a :class:`plotly.graph_objects.Figure` of a :class:`~msprings.System`
  (its current state), a :class:`~msprings.trajectory.Trajectory` (every record, or
  ``max_frames`` of them, with a time slider and play/pause) or one recorded frame
  (:meth:`Trajectory.frame`).  It can be rotated, zoomed and hovered with the mouse.
- :func:`save_view` writes the same figure as a standalone HTML page that works offline.

What is drawn: the surface triangles (``faces``) as a lit, smooth-shaded mesh (plotly
computes vertex normals from the triangles, as :meth:`System.vertex_normals` does); the
springs as lines (by default only when there are no faces or few springs); free nodes as
dots when there are no faces; pinned nodes as dark diamonds; colliders as solids (a plane
as a square patch under the model).  Colours show the spring strain ``(l - L) / L``, the
spring tension (N) or the node speed (m/s) on one colour scale shared by the surface, the
springs, the nodes and every frame.  The scale is symmetric about 0 for strain and tension
(blue compressed, red stretched) and starts at 0 for speed; it covers 98 % of the values
(a few extreme springs at a pin do not wash out the rest), and it never shrinks below
0.1 % strain, 0.1 % of a typical ``k L`` or 1 cm/s, so a system at rest shows a calm,
uniform colour and not a scale of round-off.

Coordinates: plotly's camera turns about its z axis (in its default "turntable" mode a
camera ``up`` vector of +y is overridden), so a point (x, y, z) of the simulation (m) is
drawn at plotly's (x, y, z) = (z, x, y), a rotation (not a mirror image), with the axes
titled by the simulation's names: y is up on the screen, gravity points down, and
dragging turns the model about its vertical.  The three axes have equal scales
(``aspectmode="data"``).

Why plotly: it is pip-installable with no compiled parts and actively maintained; a
figure renders in JupyterLab, the classic notebook and VS Code (plotly's own renderers),
and :func:`save_view` embeds plotly.js so the page works offline in any browser.  It draws
with WebGL, so a 50,000-triangle mesh rotates smoothly, and its figures animate natively
(frames, a slider and play/pause buttons).  Since plotly 6, NumPy arrays are stored as
base64-encoded typed arrays; positions are sent as float32 to keep pages small.

This module is the only one of msprings that imports plotly (``pip install msprings[view]``);
``import msprings`` does not load it.  It is also reachable as :mod:`msprings.view3d`, the
same module object.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._system import System
from ..mesh import icosphere
from ..trajectory import Trajectory

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["COLOR_LABELS", "save_view", "view"]

ColorBy = Literal["strain", "tension", "speed"] | None
Viewable = System | Trajectory | Mapping[str, Any]

#: Colour bar titles of the quantities ``color_by`` can show.
COLOR_LABELS = {
    "strain": "strain (l − L) / L",
    "tension": "tension (N),<br>> 0 pulling",
    "speed": "speed (m/s)",
}

# How hover text writes a value of each quantity: d3 number format and unit.
_HOVER_VALUES = {"strain": (".3~%", ""), "tension": (".4g", " N"), "speed": (".4g", " m/s")}
# Diverging (compressed, at rest, stretched) and sequential (still to fast) scales whose
# neutral end is the colour of an uncoloured surface.
_SURFACE_COLOR = "#efe2c4"
_DIVERGING = [[0.0, "#234a9c"], [0.25, "#7c9fd6"], [0.5, _SURFACE_COLOR], [0.75, "#e4875f"], [1.0, "#a31621"]]
_SEQUENTIAL = [[0.0, _SURFACE_COLOR], [0.3, "#f2b15f"], [0.65, "#d4483b"], [1.0, "#5c0f24"]]
_SPRING_COLOR = "#404040"
_NODE_COLOR = "#262626"
_PIN_COLOR = "#111111"
_PIN_MARKER = {"size": 5, "symbol": "diamond", "color": _PIN_COLOR, "line": {"color": "white", "width": 1}}
_SOLID_COLOR = "#8e9bb0"
_PLANE_COLOR = "#d8d8d2"
_BACKGROUND = "#f6f7f9"
_LIGHTING = {"ambient": 0.4, "diffuse": 0.8, "specular": 0.1, "roughness": 0.6, "fresnel": 0.05}
# Light from above, in front of the default viewpoint (plotly's coordinates: z up).
_LIGHT_POSITION = {"x": 0.8e5, "y": 0.4e5, "z": 1.0e5}
# Default viewpoint: 25 degrees above the horizon, 35 degrees round from +z towards +x.
_EYE_ELEVATION, _EYE_AZIMUTH, _EYE_DISTANCE = math.radians(25.0), math.radians(35.0), 1.8

_AUTO_SPRINGS = 400  # with faces, springs are drawn by default only up to this many
_AUTO_NODES = 5000  # without faces, free nodes are drawn by default only up to this many
# Flat shading for surfaces with more than 2 % of their edges bent by more than 60 degrees.
_CREASE_COSINE, _CREASES = 0.5, 0.02
_PLANE_BORDER = 0.25  # a plane patch reaches this fraction beyond the model's footprint
_MARGIN = 0.04  # margin around the scene, as a fraction of its largest extent
_THINNEST = 0.25  # shortest axis of the scene, as a fraction of the longest
# Smallest half-width of a colour scale: strain (dimensionless) and speed (m/s); tension's
# is this strain times a typical k L (N).
_LEAST_STRAIN = 1e-3
_LEAST_SPEED = 1e-2
# The colour scale reaches the magnitude that this percentage of the values stay within, so
# that a few extreme springs (at a pin, in a contact) do not wash out the rest.
_SCALE_PERCENTILE = 98.0


# ---- what is drawn ---------------------------------------------------------------------


@dataclass
class _Collider:
    """A collider's geometry (m): ``axis`` is a plane's normal or a cylinder's axis; ``size``
    is (radius, 0, 0) for a sphere, the half extents of a box, (radius, half height, 0) for a
    cylinder; ``centers`` (F, 3) is where it is in each frame."""

    kind: str
    axis: np.ndarray
    size: np.ndarray
    centers: np.ndarray


@dataclass
class _Frames:
    """Frames of one network: positions (F, n, 3) in m, velocities (F, n, 3) in m/s or None,
    times (F,) in s or None, topology, rest lengths (m), stiffness (N/m) or None, and per-spring
    strain and tension (F, m) when known."""

    positions: np.ndarray
    velocities: np.ndarray | None
    times: np.ndarray | None
    springs: np.ndarray
    faces: np.ndarray
    pinned: np.ndarray
    rest: np.ndarray
    k: np.ndarray | None
    colliders: list[_Collider]
    strain: np.ndarray | None = None
    tension: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        """Spring lengths (F, m) in m, a frame at a time (no (F, m, 2, 3) temporary)."""
        lengths = np.empty((len(self.positions), len(self.springs)))
        for f, x in enumerate(self.positions):
            d = x[self.springs[:, 1]] - x[self.springs[:, 0]]
            lengths[f] = np.sqrt(np.einsum("ij,ij->i", d, d))
        return lengths


def _pinned_mask(pinned: Any, n: int) -> np.ndarray:
    if pinned is None:
        return np.zeros(n, dtype=bool)
    array = np.asarray(pinned)
    if array.dtype == bool and array.shape == (n,):
        return array.copy()
    mask = np.zeros(n, dtype=bool)
    mask[array.astype(np.int64).ravel()] = True
    return mask


def _collider_from_dict(collider: Mapping[str, Any], centers: np.ndarray) -> _Collider:
    return _Collider(str(collider["kind"]), np.asarray(collider.get("axis", (0.0, 1.0, 0.0)), dtype=float),
                     np.asarray(collider["size"], dtype=float), centers)


def _system_frames(system: System) -> _Frames:
    colliders = []
    for handle in system.colliders:
        record = handle.describe()
        colliders.append(_Collider(record["kind"], np.asarray(record["axis"], dtype=float),
                                   np.asarray(record["size"], dtype=float),
                                   np.asarray(record["center"], dtype=float)[None, :]))
    return _Frames(system.x.copy()[None], system.v.copy()[None], np.array([system.t]),
                   system.springs.astype(np.int64), system.faces.astype(np.int64), system.pinned.copy(),
                   system.rest.copy(), system.k.copy(), colliders, strain=system.strain()[None],
                   tension=system.tension()[None])


def _trajectory_frames(trajectory: Trajectory, records: np.ndarray) -> _Frames:
    centers = trajectory.collider_centers
    colliders = [_collider_from_dict(c, centers[records, index]) for index, c in enumerate(trajectory.colliders)]
    k = getattr(trajectory, "k", None)
    return _Frames(trajectory.positions[records], None if trajectory.velocities is None else
                   trajectory.velocities[records], trajectory.times[records], trajectory.springs.astype(np.int64),
                   trajectory.faces.astype(np.int64), _pinned_mask(trajectory.pinned, trajectory.positions.shape[1]),
                   trajectory.rest, None if k is None else np.asarray(k, dtype=float), colliders)


def _indices(frame: Mapping[str, Any], key: str, width: int, n: int) -> np.ndarray:
    """Node index tuples (p, width) of a frame dict's ``key``, checked against n nodes."""
    indices = np.asarray(frame.get(key, ()), dtype=np.int64).reshape(-1, width)
    if indices.size and not (0 <= indices.min() and indices.max() < n):
        raise ValueError(f"{key} refer to nodes outside 0..{n - 1}")
    return indices


def _dict_frames(frame: Mapping[str, Any]) -> _Frames:
    positions = np.array(frame.get("positions", np.zeros((0, 0))), dtype=np.float64)
    if positions.ndim != 2 or positions.shape[1:] != (3,) or not len(positions):
        raise ValueError(f"a frame dict needs 'positions': an (n, 3) array (m), n >= 1; got shape {positions.shape}")
    n = len(positions)
    springs = _indices(frame, "springs", 2, n)
    faces = _indices(frame, "faces", 3, n)
    velocities = frame.get("velocities")
    if velocities is not None:
        velocities = np.asarray(velocities, dtype=np.float64)
        if velocities.shape != positions.shape:
            raise ValueError(f"velocities must have the shape of positions {positions.shape}, got {velocities.shape}")
    lengths = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    rest = frame.get("rest")
    k = frame.get("k")
    time = frame.get("time")
    colliders = [_collider_from_dict(c, np.asarray(c["center"], dtype=float)[None, :])
                 for c in frame.get("colliders", ())]
    return _Frames(positions[None], None if velocities is None else velocities[None],
                   None if time is None else np.array([float(time)]), springs, faces,
                   _pinned_mask(frame.get("pinned"), n),
                   lengths if rest is None else np.broadcast_to(np.asarray(rest, dtype=float), lengths.shape),
                   None if k is None else np.broadcast_to(np.asarray(k, dtype=float), lengths.shape), colliders)


def _sharp_edged(positions: np.ndarray, faces: np.ndarray) -> bool:
    """Whether a surface has creases (like a cube's edges) on more than _CREASES of the edges
    between two triangles: smooth shading would blur them, flat shading keeps them."""
    corners = positions[faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)
    edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)  # three per face, in face order
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    same = (edges[order[1:]] == edges[order[:-1]]).all(axis=1)  # consecutive copies: a shared edge
    first, second = order[:-1][same] // 3, order[1:][same] // 3
    if not len(first):
        return False
    bends = np.abs(np.einsum("ij,ij->i", normals[first], normals[second]))
    return float(np.mean(bends < _CREASE_COSINE)) > _CREASES


def _records(count: int, max_frames: int) -> np.ndarray:
    """At most ``max_frames`` evenly spaced record indices of ``count``, first and last included."""
    if count <= max_frames:
        return np.arange(count)
    return np.unique(np.round(np.linspace(0.0, count - 1, max_frames)).astype(np.int64))


def _frames(obj: Viewable, max_frames: int) -> _Frames:
    if isinstance(obj, System):
        return _system_frames(obj)
    if isinstance(obj, Trajectory):
        return _trajectory_frames(obj, _records(len(obj), max_frames))
    if isinstance(obj, Mapping):
        return _dict_frames(obj)
    raise TypeError(f"obj must be a msprings System, a Trajectory or a frame dict, not {type(obj).__name__}")


# ---- self-contacts ---------------------------------------------------------------------

_CONTACT_COLOR = "#d1261c"
_EDGE_CONTACT_COLOR = "#f59b00"  # orange: edge-edge contacts, beside the node-triangle ones in red
#: A node is in contact with a triangle within this many self-collision distances: the pushes
#: hold touching layers at the distance itself, give or take rounding and the last step's motion.
_CONTACT_SLACK = 1.1
#: An edge-edge contact's closest points lie inside both edges by more than this fraction of
#: their lengths: nearer an end, it is that node's contact (and a node right over an edge, as
#: in a regular mesh, does not count by the rounding of its parameter).
_EDGE_END = 1e-6


def _closest_on_triangles(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The point of triangle (a, b, c) closest to p, row by row (m): p's projection on the
    triangle's plane when it falls inside, else the closest point of the three sides."""
    normal = np.cross(b - a, c - a)
    area2 = np.einsum("ij,ij->i", normal, normal)
    safe = np.where(area2 > 0.0, area2, 1.0)
    projected = p - (np.einsum("ij,ij->i", p - a, normal) / safe)[:, None] * normal
    inside = area2 > 0.0
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, projected - u), normal) >= 0.0
    best = projected.copy()
    best_distance = np.where(inside, np.linalg.norm(p - projected, axis=1), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        side = v - u
        length2 = np.einsum("ij,ij->i", side, side)
        t = np.clip(np.einsum("ij,ij->i", p - u, side) / np.where(length2 > 0.0, length2, 1.0), 0.0, 1.0)
        q = u + t[:, None] * side
        distance = np.linalg.norm(p - q, axis=1)
        closer = ~inside & (distance < best_distance)
        best[closer] = q[closer]
        best_distance[closer] = distance[closer]
    return best


def _box_cells(low: np.ndarray, high: np.ndarray, shape: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every cell of a grid of ``shape`` cells that each box touches, boxes given by their
    lowest and highest cells (b, 3): the boxes' indices, the cells (c, 3) and their keys (c,)."""
    spans = high - low + 1
    counts = spans.prod(axis=1)
    owners = np.repeat(np.arange(len(low)), counts)
    k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    sx, sy = spans[owners, 0], spans[owners, 1]
    at = low[owners] + np.column_stack([k % sx, (k // sx) % sy, k // (sx * sy)])
    return owners, at, at[:, 0] + shape[0] * (at[:, 1] + shape[1] * at[:, 2])


def _self_contacts(positions: np.ndarray, faces: np.ndarray, reach: float) -> tuple[np.ndarray, np.ndarray]:
    """The self-contacts of a surface: every node closer than ``reach`` (m) to a triangle it is
    not a corner of, with the nearest such triangle.  Returns the nodes (p,), ascending, and
    the closest points of their nearest triangles (p, 3) (m).  Candidates come from a uniform grid of cells at least
    ``reach`` wide, each triangle entered in every cell its box (grown by ``reach``) touches,
    so the cost is linear in the surface's size."""
    none = (np.zeros(0, dtype=np.int64), np.zeros((0, 3)))
    finite = np.isfinite(positions).all(axis=1)
    faces = faces[finite[faces].all(axis=1)]
    if not len(faces) or not reach > 0.0:
        return none
    corners = positions[faces]  # (F, 3, 3)
    edges = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2)
    cell = max(float(reach), float(np.median(edges)))
    lowest = corners.reshape(-1, 3).min(axis=0) - reach
    low = np.floor((corners.min(axis=1) - reach - lowest) / cell).astype(np.int64)
    high = np.floor((corners.max(axis=1) + reach - lowest) / cell).astype(np.int64)
    shape = high.max(axis=0) + 1
    owners, _, keys = _box_cells(low, high, shape)
    order = np.argsort(keys, kind="stable")
    keys, owners = keys[order], owners[order]
    nodes = np.flatnonzero(finite)
    at = np.floor((positions[nodes] - lowest) / cell).astype(np.int64)
    inside = ((at >= 0) & (at < shape)).all(axis=1)
    nodes, at = nodes[inside], at[inside]
    node_keys = at[:, 0] + shape[0] * (at[:, 1] + shape[1] * at[:, 2])
    first, last = np.searchsorted(keys, node_keys, "left"), np.searchsorted(keys, node_keys, "right")
    hits = last - first
    node = np.repeat(nodes, hits)
    entry = np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits) + np.repeat(first, hits)
    triangle = owners[entry]
    keep = (faces[triangle] != node[:, None]).all(axis=1)
    node, triangle = node[keep], triangle[keep]
    if not len(node):
        return none
    a, b, c = (positions[faces[triangle, i]] for i in range(3))
    closest = _closest_on_triangles(positions[node], a, b, c)
    distance = np.linalg.norm(positions[node] - closest, axis=1)
    near = np.flatnonzero(distance < reach)
    near = near[np.lexsort((distance[near], node[near]))]  # by node, the nearest triangle first
    first = near[np.r_[True, node[near][1:] != node[near][:-1]]] if len(near) else near
    return node[first], closest[first]


def _closest_on_segments(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray,
                         q2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parameters (s, t) of the closest points p1 + s (q1 - p1) and p2 + t (q2 - p2) of
    the segments, row by row: the lines' closest pair clamped to the first segment, the
    second's parameter for that point clamped, and the first's again for that (which also
    serves parallel and point-like segments)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = np.einsum("ij,ij->i", d1, d1)
    e = np.einsum("ij,ij->i", d2, d2)
    b = np.einsum("ij,ij->i", d1, d2)
    c = np.einsum("ij,ij->i", d1, r)
    f = np.einsum("ij,ij->i", d2, r)
    denominator = a * e - b * b
    safe_a, safe_e = np.where(a > 0.0, a, 1.0), np.where(e > 0.0, e, 1.0)
    s = np.where(denominator > 1e-12 * a * e, np.clip((b * f - c * e) / np.where(denominator > 0.0, denominator, 1.0),
                                                      0.0, 1.0), 0.0)
    s = np.where(a > 0.0, s, 0.0)
    t = np.where(e > 0.0, np.clip((b * s + f) / safe_e, 0.0, 1.0), 0.0)
    s = np.where(a > 0.0, np.clip((b * t - c) / safe_a, 0.0, 1.0), 0.0)
    return s, t


def _mesh_edges(faces: np.ndarray) -> np.ndarray:
    """The triangles' edges (e, 2), lower node first, each once, in ascending order."""
    pairs = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    return np.unique(pairs, axis=0) if len(pairs) else pairs.astype(np.int64)


def _edge_contacts(positions: np.ndarray, faces: np.ndarray,
                   reach: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The edge-edge self-contacts of a surface: every pair of mesh edges that share no node
    and come closer than ``reach`` (m), where the closest points lie inside both edges (a
    closest point at an end, to _EDGE_END of the edge, is that node's contact, which
    _self_contacts finds).  Returns
    the pairs' edges (p, 2) and (p, 2) (their nodes, the first edge the lower in the
    ascending order of _mesh_edges), ordered, and their closest points (p, 3) and (p, 3)
    (m).  Candidates come from a uniform grid of cells at least ``reach`` wide: every edge
    is entered in each cell its box grown by ``reach`` touches and looked up in each cell its
    own box touches, so the cost is linear in the surface's size."""
    none = (np.zeros((0, 2), dtype=np.int64), np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)))
    finite = np.isfinite(positions).all(axis=1)
    faces = faces[finite[faces].all(axis=1)]
    if not len(faces) or not reach > 0.0:
        return none
    edges = _mesh_edges(faces)
    p, q = positions[edges[:, 0]], positions[edges[:, 1]]
    lo, hi = np.minimum(p, q), np.maximum(p, q)
    cell = max(float(reach), float(np.median(np.linalg.norm(q - p, axis=1))))
    lowest = lo.min(axis=0) - reach
    shape = np.floor((hi.max(axis=0) + reach - lowest) / cell).astype(np.int64) + 1

    grown_lo, grown_hi = lo - reach, hi + reach
    entered, _, keys = _box_cells(np.floor((grown_lo - lowest) / cell).astype(np.int64),
                                  np.floor((grown_hi - lowest) / cell).astype(np.int64), shape)
    order = np.argsort(keys, kind="stable")
    entered, keys = entered[order], keys[order]
    asking, at, asked = _box_cells(np.floor((lo - lowest) / cell).astype(np.int64),
                                   np.floor((hi - lowest) / cell).astype(np.int64), shape)
    first, last = np.searchsorted(keys, asked, "left"), np.searchsorted(keys, asked, "right")
    hits = last - first
    where = np.repeat(np.arange(len(asked)), hits)
    other = entered[np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits) + np.repeat(first, hits)]
    one = asking[where]
    # a pair within reach is found from both sides: kept from its lower edge, in the one cell
    # that holds the lowest corner of its edge's box and the other's grown box, if they meet
    keep = one < other
    one, other, where = one[keep], other[keep], where[keep]
    corner = np.maximum(lo[one], grown_lo[other])
    keep = (corner <= np.minimum(hi[one], grown_hi[other])).all(axis=1)
    keep &= (np.floor((corner - lowest) / cell).astype(np.int64) == at[where]).all(axis=1)
    one, other = one[keep], other[keep]
    shared = (edges[one][:, :, None] == edges[other][:, None, :]).any(axis=(1, 2))
    one, other = one[~shared], other[~shared]
    if not len(one):
        return none
    order = np.lexsort((other, one))
    one, other = one[order], other[order]
    s, t = _closest_on_segments(p[one], q[one], p[other], q[other])
    at_one = p[one] + s[:, None] * (q[one] - p[one])
    at_other = p[other] + t[:, None] * (q[other] - p[other])
    distance = np.linalg.norm(at_one - at_other, axis=1)
    near = (distance < reach) & (np.minimum(s, 1.0 - s) > _EDGE_END) & (np.minimum(t, 1.0 - t) > _EDGE_END)
    return edges[one[near]], edges[other[near]], at_one[near], at_other[near]


def _contact_distance(obj: Any, contacts: Any) -> float:
    """The self-collision distance (m) that ``contacts`` asks for: a number given, or with
    True the system's, the trajectory's or the frame dict's ``self_collision``."""
    if isinstance(contacts, (bool, np.bool_)):
        distance: Any = None
        if isinstance(obj, System):
            distance = obj.self_collision
        elif isinstance(obj, Mapping):
            distance = obj.get("self_collision")
        else:
            distance = getattr(obj, "self_collision", None)
        if distance is None or not float(distance) > 0.0:
            raise ValueError("contacts=True needs the self-collision distance: this has none set; pass it as "
                             "contacts=<distance in m>")
        return float(distance)
    if isinstance(contacts, (int, float, np.integer, np.floating)) and math.isfinite(contacts) and contacts > 0:
        return float(contacts)
    raise ValueError(f"contacts must be True, False or a positive distance (m), not {contacts!r}")


# ---- colours ---------------------------------------------------------------------------


def _node_mean(values: np.ndarray, springs: np.ndarray, n: int) -> np.ndarray:
    """Per-node mean (F, n) of per-spring ``values`` (F, m) over the springs at each node
    (0 at a node without springs)."""
    ends = springs.ravel()
    count = np.bincount(ends, minlength=n).astype(float)
    totals = np.stack([np.bincount(ends, weights=np.repeat(row, 2), minlength=n) for row in values])
    return totals / np.maximum(count, 1.0)


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= value (> 0)."""
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * (1.0 - 1e-12):
            return step * power
    return 10.0 * power


@dataclass
class _Colors:
    """Colour values per node (F, n) and per spring (F, m), and the scale [low, high]."""

    nodes: np.ndarray
    springs: np.ndarray
    low: float
    high: float
    quantity: str
    scale: list[list[Any]]


def _colors(frames: _Frames, color_by: ColorBy, cmax: float | None) -> _Colors | None:
    if color_by is None:
        return None
    n = frames.positions.shape[1]
    if color_by == "speed":
        if frames.velocities is None:
            raise ValueError("color_by='speed' needs velocities: record them with system.run(..., velocities=True)")
        nodes = np.linalg.norm(frames.velocities, axis=-1)
        springs = 0.5 * (nodes[:, frames.springs[:, 0]] + nodes[:, frames.springs[:, 1]])
        least = _LEAST_SPEED
    else:
        if color_by == "strain":
            springs = frames.strain
            if springs is None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    springs = np.where(frames.rest > 0, frames.lengths() / np.where(frames.rest > 0, frames.rest, 1.0)
                                       - 1.0, 0.0)
            least = _LEAST_STRAIN
        else:
            springs = frames.tension
            if springs is None:
                if frames.k is None:
                    raise ValueError("color_by='tension' needs the spring stiffnesses, which a Trajectory does not "
                                     "record: use color_by='strain', or view the System")
                springs = frames.k * (frames.lengths() - frames.rest)
            typical = float(np.median(frames.k * frames.rest)) if len(frames.rest) else 0.0
            least = _LEAST_STRAIN * typical if typical > 0 else _LEAST_STRAIN
        springs = np.where(np.isfinite(springs), springs, 0.0)
        nodes = _node_mean(springs, frames.springs, n)
    if cmax is None:
        magnitudes = np.abs(np.concatenate([springs.ravel(), nodes.ravel()]))
        typical = float(np.percentile(magnitudes, _SCALE_PERCENTILE)) if magnitudes.size else 0.0
        cmax = _nice_ceiling(max(typical, least))
    if color_by == "speed":
        return _Colors(nodes, springs, 0.0, cmax, color_by, _SEQUENTIAL)
    return _Colors(nodes, springs, -cmax, cmax, color_by, _DIVERGING)


# ---- collider geometry -----------------------------------------------------------------


def _plane_basis(normal: np.ndarray) -> np.ndarray:
    """Two orthonormal vectors (2, 3) spanning the plane perpendicular to ``normal``."""
    return np.linalg.svd(np.asarray(normal, dtype=float).reshape(1, 3))[2][1:]


def _box_mesh(half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (24, 3) and triangles (12, 3) of a box centred at 0: four vertices per side,
    so each side is shaded flat."""
    vertices, triangles = [], []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        for side in (-1.0, 1.0):
            base = len(vertices)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                corner = np.zeros(3)
                corner[axis], corner[u], corner[v] = side * half[axis], a * half[u], b * half[v]
                vertices.append(corner)
            triangles += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return np.array(vertices), np.array(triangles)


def _cylinder_mesh(axis: np.ndarray, radius: float, half_height: float,
                   sectors: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A capped cylinder centred at 0: a smooth side and two flat caps (their own vertices)."""
    direction = axis / np.linalg.norm(axis)
    first, second = _plane_basis(direction)
    angle = np.linspace(0.0, 2.0 * math.pi, sectors, endpoint=False)
    rim = radius * (np.cos(angle)[:, None] * first + np.sin(angle)[:, None] * second)  # (S, 3)
    top, bottom = half_height * direction, -half_height * direction
    ring = np.arange(sectors)
    following = (ring + 1) % sectors
    vertices = np.concatenate([bottom + rim, top + rim, [top], top + rim, [bottom], bottom + rim])
    side = np.concatenate([np.column_stack([ring, following, sectors + following]),
                           np.column_stack([ring, sectors + following, sectors + ring])])
    cap = 2 * sectors  # index of the top centre; its rim follows, then the bottom's centre and rim
    top_cap = np.column_stack([np.full(sectors, cap), cap + 1 + ring, cap + 1 + following])
    base = cap + 1 + sectors
    bottom_cap = np.column_stack([np.full(sectors, base), base + 1 + following, base + 1 + ring])
    return vertices, np.concatenate([side, top_cap, bottom_cap])


def _solid_mesh(collider: _Collider) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (about the collider's centre, m) and triangles of a finite collider."""
    if collider.kind == "sphere":
        sphere = icosphere(3, radius=float(collider.size[0]))
        return sphere.vertices, sphere.faces
    if collider.kind == "box":
        return _box_mesh(collider.size)
    if collider.kind == "cylinder":
        return _cylinder_mesh(collider.axis, float(collider.size[0]), float(collider.size[1]))
    raise ValueError(f"unknown collider kind {collider.kind!r}")


def _plane_mesh(collider: _Collider, around: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A square of the plane (world coordinates, m) under the points ``around`` (p, 3): their
    footprint on it, with a border."""
    basis = _plane_basis(collider.axis)
    center = collider.centers[0]
    footprint = (around - center) @ basis.T  # (p, 2)
    middle = 0.5 * (footprint.min(axis=0) + footprint.max(axis=0))
    half = 0.5 * float(np.ptp(footprint, axis=0).max()) * (1.0 + 2.0 * _PLANE_BORDER)
    if not half > 0:
        half = 1.0
    corners = np.array([(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]) * half + middle
    return center + corners @ basis, np.array([(0, 1, 2), (0, 2, 3)])


# ---- the figure ------------------------------------------------------------------------


def _f32(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float32)


def _xyz(points: np.ndarray) -> dict[str, np.ndarray]:
    """Plotly coordinates of simulation points (p, 3): the cyclic relabelling (x, y, z) =
    (z, x, y), a rotation, so that plotly's vertical axis z is the simulation's y."""
    points = _f32(points)
    return {"x": points[:, 2], "y": points[:, 0], "z": points[:, 1]}


def _bounds(points: np.ndarray) -> np.ndarray:
    """Lowest and highest corner (2, 3) of points (..., 3), ignoring non-finite values."""
    flat = points.reshape(-1, 3)
    flat = flat[np.isfinite(flat).all(axis=1)]
    return np.stack([flat.min(axis=0), flat.max(axis=0)])


def _segments(points: np.ndarray, springs: np.ndarray) -> np.ndarray:
    """Spring end points with a NaN gap after each spring, (3 m, 3): one line trace."""
    gaps = np.full((len(springs), 1, 3), np.nan)
    return np.concatenate([points[springs], gaps], axis=1).reshape(-1, 3)


def _segment_values(values: np.ndarray) -> np.ndarray:
    return _f32(np.repeat(values, 3))


def _hover(what: str, colors: _Colors | None) -> str:
    """Hover text in the simulation's coordinates (plotly's (x, y, z) is the simulation's
    (z, x, y)), with the vertex's colour value on a coloured surface."""
    text = f"{what}<br>x = %{{y:.4g}} m<br>y = %{{z:.4g}} m<br>z = %{{x:.4g}} m"
    if colors is not None:
        number, unit = _HOVER_VALUES[colors.quantity]
        text += f"<br>{colors.quantity} = %{{intensity:{number}}}{unit}"
    return text + "<extra></extra>"


def _check_options(color_by: Any, springs: Any, nodes: Any, max_frames: Any, fps: Any, cmax: Any) -> None:
    if color_by not in ("strain", "tension", "speed", None):
        raise ValueError(f"color_by must be 'strain', 'tension', 'speed' or None, not {color_by!r}")
    for name, value in (("springs", springs), ("nodes", nodes)):
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True, False or None (automatic), not {value!r}")
    if isinstance(max_frames, bool) or not isinstance(max_frames, (int, np.integer)):
        raise TypeError(f"max_frames must be an integer, not {type(max_frames).__name__}")
    if max_frames < 1:
        raise ValueError(f"max_frames = {max_frames} must be >= 1")
    if not (isinstance(fps, (int, float, np.number)) and math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a positive number of frames per second, not {fps!r}")
    if cmax is not None and not (isinstance(cmax, (int, float, np.number)) and math.isfinite(cmax) and cmax > 0):
        raise ValueError(f"cmax must be a positive number or None, not {cmax!r}")


class _Builder:
    """Traces of the first frame, the per-frame updates of those that move, and the layout."""

    def __init__(self, frames: _Frames, colors: _Colors | None, *, springs: bool, nodes: bool, show_pins: bool,
                 colliders: bool, contact_reach: float | None = None) -> None:
        import plotly.graph_objects as go

        self.go = go
        self.frames = frames
        self.colors = colors
        self.traces: list[Any] = []
        self.moving: list[tuple[int, Any]] = []  # (trace index, frame -> dict of changed properties)
        color_axis = {"coloraxis": "coloraxis"} if colors is not None else {}
        positions = frames.positions
        self.boxes = [_bounds(positions)]  # what the axes must hold in every frame (m)

        if len(frames.faces):
            faces = frames.faces.astype(np.int32)

            def surface(f: int) -> dict[str, Any]:
                update = _xyz(positions[f])
                if colors is not None:
                    update["intensity"] = _f32(colors.nodes[f])
                return update

            style = {"color": _SURFACE_COLOR} if colors is None else {"intensitymode": "vertex", **color_axis}
            self._add(go.Mesh3d(i=faces[:, 0], j=faces[:, 1], k=faces[:, 2], name="surface",
                                flatshading=_sharp_edged(positions[0], frames.faces),
                                lighting=_LIGHTING, lightposition=_LIGHT_POSITION,
                                hovertemplate=_hover("surface", colors),
                                **style, **surface(0)), surface)

        if springs and len(frames.springs):
            width = 2 if len(frames.springs) > 2000 else 4

            def lines(f: int) -> dict[str, Any]:
                update: dict[str, Any] = _xyz(_segments(positions[f], frames.springs))
                update["line"] = {"width": width, "color": _SPRING_COLOR} if colors is None else \
                    {"width": width, "color": _segment_values(colors.springs[f]), **color_axis}
                return update

            self._add(go.Scatter3d(mode="lines", name="springs", hoverinfo="skip", connectgaps=False, **lines(0)),
                      lines)

        free = np.flatnonzero(~frames.pinned)
        if nodes and len(free):
            size = float(np.clip(40.0 / math.sqrt(len(free)), 2.5, 7.0))

            def dots(f: int) -> dict[str, Any]:
                update: dict[str, Any] = _xyz(positions[f, free])
                update["marker"] = {"size": size, "color": _NODE_COLOR} if colors is None else \
                    {"size": size, "color": _f32(colors.nodes[f, free]), **color_axis}
                return update

            self._add(go.Scatter3d(mode="markers", name="nodes", hovertemplate=_hover("node", None), **dots(0)),
                      dots)

        pins = np.flatnonzero(frames.pinned)
        if show_pins and len(pins):
            self._add(go.Scatter3d(mode="markers", name="pinned nodes", hovertemplate=_hover("pinned node", None),
                                   marker=_PIN_MARKER, **_xyz(positions[0, pins])),
                      lambda f: {**_xyz(positions[f, pins]), "marker": _PIN_MARKER})

        if contact_reach is not None:
            found = [_self_contacts(positions[f], frames.faces, contact_reach) for f in range(len(positions))]

            def marks(f: int) -> dict[str, Any]:
                touching, closest = found[f]
                pairs = np.arange(2 * len(touching)).reshape(-1, 2)
                ends = np.empty((2 * len(touching), 3))
                ends[0::2], ends[1::2] = positions[f, touching], closest
                return {**_xyz(_segments(ends, pairs)), "marker": {"size": 3, "color": _CONTACT_COLOR},
                        "line": {"width": 5, "color": _CONTACT_COLOR}}

            self._add(go.Scatter3d(mode="lines+markers", name="self-contacts", connectgaps=False,
                                   hovertemplate=_hover("self-contact", None), **marks(0)), marks)

            crossing = [_edge_contacts(positions[f], frames.faces, contact_reach)[2:] for f in range(len(positions))]

            def edge_marks(f: int) -> dict[str, Any]:
                on_one, on_other = crossing[f]
                ends = np.empty((2 * len(on_one), 3))
                ends[0::2], ends[1::2] = on_one, on_other
                pairs = np.arange(len(ends)).reshape(-1, 2)
                return {**_xyz(_segments(ends, pairs)), "marker": {"size": 3, "color": _EDGE_CONTACT_COLOR},
                        "line": {"width": 5, "color": _EDGE_CONTACT_COLOR}}

            self._add(go.Scatter3d(mode="lines+markers", name="edge contacts", connectgaps=False,
                                   hovertemplate=_hover("edge-edge contact", None), **edge_marks(0)), edge_marks)

        if colliders:
            self._add_colliders()

    def _add(self, trace: Any, update: Any) -> None:
        self.traces.append(trace)
        self.moving.append((len(self.traces) - 1, update))

    def _add_colliders(self) -> None:
        go = self.go
        solids = [c for c in self.frames.colliders if c.kind != "plane"]
        meshes = [_solid_mesh(c) for c in solids]
        # Everything a plane's patch must lie under: every node and solid collider in every frame.
        reach = [self.frames.positions.reshape(-1, 3)]
        for collider, (vertices, _) in zip(solids, meshes):
            reach.append((collider.centers[:, None, :] + vertices[None, :, :]).reshape(-1, 3))
        around = np.concatenate(reach)
        around = np.stack([around.min(axis=0), around.max(axis=0)])
        corners = np.array(np.meshgrid(*around.T, indexing="ij")).reshape(3, -1).T  # the 8 corners
        for collider in self.frames.colliders:
            plane = collider.kind == "plane"
            vertices, triangles = _plane_mesh(collider, corners) if plane else _solid_mesh(collider)
            at_start = vertices if plane else vertices + collider.centers[0]
            shifts = collider.centers - collider.centers[0]
            self.boxes.append(_bounds(at_start[None, :, :] + shifts[:, None, :]))
            trace = go.Mesh3d(i=triangles[:, 0], j=triangles[:, 1], k=triangles[:, 2], name=f"{collider.kind} collider",
                              color=_PLANE_COLOR if plane else _SOLID_COLOR, flatshading=collider.kind == "box",
                              lighting=_LIGHTING, lightposition=_LIGHT_POSITION, hoverinfo="skip", showlegend=False,
                              **_xyz(at_start))
            self.traces.append(trace)
            moves = np.ptp(collider.centers, axis=0).max() > 0
            if moves:
                self.moving.append((len(self.traces) - 1,
                                    lambda f, v=at_start, c=collider: _xyz(v + c.centers[f] - c.centers[0])))

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis limits in plotly's coordinates (z, x, y) holding everything drawn in every
        frame, with a margin; no axis is shorter than _THINNEST of the longest (a flat cloth
        keeps some height), and one metre is as long on every axis."""
        points = np.concatenate(self.boxes)[:, [2, 0, 1]]
        middle = 0.5 * (points.min(axis=0) + points.max(axis=0))
        reach = points.max(axis=0) - middle  # half extents (m)
        longest = float(reach.max()) or 0.5
        reach = np.maximum(reach + 2.0 * _MARGIN * longest, _THINNEST * (1.0 + 2.0 * _MARGIN) * longest)
        return middle - reach, middle + reach

    def layout(self, title: str | None, height: int) -> dict[str, Any]:
        # Towards the viewer, in plotly's normalised scene coordinates (z, x, y).
        eye = _EYE_DISTANCE * np.array([math.cos(_EYE_ELEVATION) * math.cos(_EYE_AZIMUTH),
                                        math.cos(_EYE_ELEVATION) * math.sin(_EYE_AZIMUTH), math.sin(_EYE_ELEVATION)])
        low, high = self.ranges()
        span = high - low
        ranges = [[float(a), float(b)] for a, b in zip(low, high)]
        axis = {"showbackground": True, "backgroundcolor": "#eceef2", "gridcolor": "white", "zeroline": False}
        layout: dict[str, Any] = {
            "height": height,
            "margin": {"l": 0, "r": 0, "t": 40 if title else 10, "b": 0},
            "paper_bgcolor": _BACKGROUND,
            "showlegend": False,
            "scene": {
                "aspectmode": "manual",
                "aspectratio": dict(zip("xyz", (span / span.max()).tolist())),
                "camera": {"up": {"x": 0, "y": 0, "z": 1}, "eye": dict(zip("xyz", eye.tolist())),
                           "center": {"x": 0, "y": 0, "z": 0}},
                "dragmode": "turntable",
                "xaxis": {"title": {"text": "z (m)"}, "range": ranges[0], **axis},
                "yaxis": {"title": {"text": "x (m)"}, "range": ranges[1], **axis},
                "zaxis": {"title": {"text": "y (m), up"}, "range": ranges[2], **axis},
            },
        }
        if title:
            layout["title"] = {"text": title, "x": 0.02, "xanchor": "left"}
        if self.colors is not None:
            colorbar: dict[str, Any] = {"title": {"text": COLOR_LABELS[self.colors.quantity]}, "len": 0.6,
                                        "thickness": 16}
            if self.colors.quantity == "strain":
                colorbar["tickformat"] = ".3~%"
            layout["coloraxis"] = {"colorscale": self.colors.scale, "cmin": self.colors.low, "cmax": self.colors.high,
                                   "colorbar": colorbar}
        return layout

    def animation(self, layout: dict[str, Any], fps: float) -> list[Any]:
        """Frames (one per time) and the slider and play/pause buttons that show them."""
        go = self.go
        times = self.frames.times
        names = [f"{index}" for index in range(len(times))]
        indices = [index for index, _ in self.moving]
        kinds = [self.traces[index].type for index in indices]
        frames = [go.Frame(name=name, data=[{"type": kind, **update(f)} for kind, (_, update) in
                                            zip(kinds, self.moving)], traces=indices)
                  for f, name in enumerate(names)]
        duration = 1000.0 / fps
        play = {"frame": {"duration": duration, "redraw": True}, "transition": {"duration": 0},
                "fromcurrent": True, "mode": "immediate"}
        still = {"frame": {"duration": 0, "redraw": True}, "transition": {"duration": 0}, "mode": "immediate"}
        layout["updatemenus"] = [{
            "type": "buttons", "direction": "left", "showactive": False, "x": 0.02, "y": 0.02,
            "xanchor": "left", "yanchor": "bottom", "pad": {"r": 8, "t": 0},
            "buttons": [{"label": "▶ play", "method": "animate", "args": [None, play]},
                        {"label": "❚❚ pause", "method": "animate",
                         "args": [[None], {**still, "frame": {"duration": 0, "redraw": False}}]}],
        }]
        layout["sliders"] = [{
            "active": 0, "x": 0.2, "len": 0.78, "y": 0.02, "yanchor": "bottom", "pad": {"t": 0, "b": 0},
            # One label per record would overlap: only the current time is written out.
            "currentvalue": {"prefix": "t = ", "suffix": " s", "font": {"color": "#333333"}},
            "font": {"color": "rgba(0, 0, 0, 0)"}, "ticklen": 3, "minorticklen": 0,
            "steps": [{"label": f"{t:.3f}", "method": "animate", "args": [[name], still]}
                      for t, name in zip(times, names)],
        }]
        layout["scene"]["domain"] = {"x": [0.0, 1.0], "y": [0.14, 1.0]}
        # The scene is shorter above the controls: step back so its axis labels stay in view.
        camera = layout["scene"]["camera"]
        camera["eye"] = {axis: 1.12 * value for axis, value in camera["eye"].items()}
        return frames


def view(obj: Viewable, *, color_by: ColorBy = "strain", springs: bool | None = None, nodes: bool | None = None,
         show_pins: bool = True, colliders: bool = True, max_frames: int = 100, fps: float = 20.0,
         cmax: float | None = None, title: str | None = None, height: int = 600,
         contacts: bool | float = False) -> go.Figure:
    """An interactive 3-D figure (plotly) of a system, a recorded run or one recorded frame.

    Drag to rotate about the vertical, scroll to zoom; a trajectory gets a time slider and
    play/pause buttons.  A simulation point (x, y, z) (m) is at plotly's (z, x, y), a
    rotation that puts the simulation's y up on the screen (the axes carry the
    simulation's names).
    Display the figure in Jupyter (JupyterLab, the classic notebook, VS Code) by returning
    it from a cell, or write a standalone page with :func:`save_view`.

    Parameters
    ----------
    obj : System, Trajectory or dict
        A system (its current state), a trajectory (its records; at most ``max_frames`` of
        them, evenly spaced with the first and last) or one frame (:meth:`Trajectory.frame`:
        ``positions`` (m) and optionally ``springs``, ``faces``, ``pinned``, ``rest`` (m),
        ``k`` (N/m), ``velocities`` (m/s), ``colliders``, ``time`` (s)).
    color_by : {"strain", "tension", "speed"} or None
        What the colours show: the spring strain (l - L) / L, the spring tension (N, > 0
        pulling; a system's includes the dampers' part; a trajectory does not record k, so
        it cannot show tension), the node speed (m/s; a trajectory needs recorded
        velocities), or nothing (plain colours).  Springs carry their own value (speed: the
        mean of their ends'); nodes and the surface the mean over the springs at each node
        (speed: their own).  One scale serves the surface, springs, nodes and all frames:
        symmetric about 0 for strain and tension, from 0 for speed.  It reaches the
        magnitude that 98 % of the values (springs and nodes, all frames) stay within (the
        rest are drawn in the end colours), rounded up to 1, 2, 2.5 or 5 times a power of
        ten and never smaller than 0.1 % strain, 0.1 % of the median ``k L`` (N) or 0.01 m/s.
    springs : bool or None
        Draw the springs as lines; default (None) when there are no faces or at most 400
        springs.
    nodes : bool or None
        Draw the free nodes as dots; default (None) when there are no faces and at most 5000
        nodes.
    show_pins : bool
        Mark the pinned nodes (dark diamonds).
    colliders : bool
        Draw the colliders: spheres, boxes and capped cylinders as solids where they are in
        each frame, a plane as a square patch under everything drawn.
    max_frames : int
        Most frames of a trajectory to keep (>= 1); each frame stores every position.
    fps : float
        Playback rate of a trajectory (frames per second of the page, not simulated time).
    cmax : float, optional
        Fixed end of the colour scale (in the units of ``color_by``), e.g. to compare pages.
    title : str, optional
        Title above the plot.
    height : int
        Figure height (pixels).
    contacts : bool or float
        Mark the surface's self-contacts: every node closer than 1.1 times the self-collision
        distance to a triangle it is not a corner of (the pushes hold touching layers at the
        distance itself) gets a red segment from the node to the closest point of the nearest
        such triangle, and every pair of mesh edges that share no node and come as close,
        with their closest points inside both edges, an orange segment between those points.
        True takes the distance from the system (``s.self_collision``), a frame dict's
        ``"self_collision"`` or a trajectory's ``self_collision`` attribute; a number gives it
        (m).  Found in NumPy from the positions of each frame (a uniform grid: linear cost).

    Returns
    -------
    plotly.graph_objects.Figure
        Traces named "surface" (Mesh3d), "springs" (lines), "nodes" and "pinned nodes"
        (markers), "self-contacts" and "edge contacts" (lines and markers) and "<kind> collider" (Mesh3d), in this
        order, each only when drawn; a
        trajectory's figure has one frame per kept record, named by its index.

    Raises
    ------
    TypeError
        ``obj`` is not a System, Trajectory or frame dict; ``springs``/``nodes`` is not a
        bool or None; ``max_frames`` is not an integer.
    ValueError
        Unknown ``color_by``; ``color_by="speed"`` without velocities or ``"tension"``
        without stiffnesses; ``max_frames < 1``; a non-positive ``fps`` or ``cmax``; a
        malformed frame dict; ``contacts`` not a bool or a positive distance, True with no
        self-collision distance set, or on a system without triangles.
    """
    _check_options(color_by, springs, nodes, max_frames, fps, cmax)
    if isinstance(height, bool) or not isinstance(height, (int, np.integer)) or height < 100:
        raise ValueError(f"height must be an integer number of pixels >= 100, not {height!r}")
    contact_reach = None
    if contacts is not False:
        contact_reach = _CONTACT_SLACK * _contact_distance(obj, contacts)
    import plotly.graph_objects as go

    frames = _frames(obj, int(max_frames))
    has_faces = len(frames.faces) > 0
    if contact_reach is not None and not has_faces:
        raise ValueError("contacts: self-contacts are between nodes and triangles; this has no faces")
    if springs is None:
        springs = not has_faces or len(frames.springs) <= _AUTO_SPRINGS
    if nodes is None:
        nodes = not has_faces and frames.positions.shape[1] <= _AUTO_NODES
    colors = _colors(frames, color_by, None if cmax is None else float(cmax))
    builder = _Builder(frames, colors, springs=bool(springs), nodes=bool(nodes), show_pins=show_pins,
                       colliders=colliders, contact_reach=contact_reach)
    layout = builder.layout(title, int(height))
    animated = isinstance(obj, Trajectory) and len(frames.positions) > 1
    figure_frames = builder.animation(layout, float(fps)) if animated else []
    if not animated and frames.times is not None:
        time = f"t = {frames.times[0]:.3f} s"
        layout["title"] = {"text": f"{title} · {time}" if title else time, "x": 0.02, "xanchor": "left"}
        layout["margin"]["t"] = 40
    return go.Figure(data=builder.traces, layout=layout, frames=figure_frames)


def save_view(obj: Viewable | go.Figure, path: str | Path, **options: Any) -> Path:
    """Writes :func:`view` of ``obj`` (or a figure it made) as a standalone HTML page.

    The page embeds plotly.js (about 4.8 MB), so it opens offline in any browser; a
    trajectory's page starts paused on its first frame.

    Parameters
    ----------
    obj : System, Trajectory, dict or plotly.graph_objects.Figure
        What to show (see :func:`view`), or a figure already made.
    path : str or Path
        Where to write the page (conventionally ``.html``); its directory must exist.
    **options
        Passed to :func:`view` (not allowed with a figure).

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    TypeError
        If options are given with a ready figure, or ``obj`` cannot be viewed (as for
        :func:`view`).
    ValueError
        If the directory of ``path`` does not exist, or an option is bad (as for
        :func:`view`).
    """
    import plotly.graph_objects as go

    if isinstance(obj, go.Figure):
        if options:
            raise TypeError(f"options {sorted(options)} apply to view(); a ready figure takes none")
        figure = obj
    else:
        figure = view(obj, **options)
    target = Path(path)
    if not target.parent.is_dir():
        raise ValueError(f"path: the directory {str(target.parent)!r} does not exist")
    figure.write_html(target, include_plotlyjs=True, full_html=True, auto_play=False,
                      config={"displaylogo": False, "responsive": True}, default_width="100%",
                      default_height=f"{figure.layout.height}px")
    return target
