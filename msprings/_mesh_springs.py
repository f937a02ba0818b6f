"""A triangle mesh turned into a System: one structural spring per edge, optionally a
bending spring across every interior edge and stabilising springs that keep a closed
surface from folding flat.  Units as in :class:`msprings.System`.

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._mesh_geometry import _points, _triangles, interior_edge_opposites, unique_edges
from ._system import System

__all__ = ["MeshWarning", "from_mesh"]

_SYSTEM_ARGUMENTS = ("velocities", "gravity", "drag", "energy_loss", "integrator")
# Options of System that are attributes rather than constructor arguments; from_mesh sets them
# after construction.
_SYSTEM_ATTRIBUTES = tuple(option.name for option in _core.OPTIONS if option.name not in _SYSTEM_ARGUMENTS)


class MeshWarning(UserWarning):
    """A mesh that can be converted but is probably not what was meant (e.g. non-manifold)."""


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
