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

from .. import _core
from ._geometry import _points, _row_keys, _triangles, interior_edge_opposites, unique_edges
from ._material import element_sizes, lumped_masses, spring_stiffness
from ._repair import boundary_edges
from .._system import System, damping_for_ratio, real_scalar

__all__ = ["MeshWarning", "OpenMeshWarning", "from_mesh"]

_SYSTEM_ARGUMENTS = ("velocities", "gravity", "drag", "energy_loss", "integrator")
# Options of System that are attributes rather than constructor arguments; from_mesh sets them
# after construction.
_SYSTEM_ATTRIBUTES = tuple(option.name for option in _core.OPTIONS if option.name not in _SYSTEM_ARGUMENTS)


class MeshWarning(UserWarning):
    """A mesh that can be converted but is probably not what was meant (e.g. non-manifold)."""


class OpenMeshWarning(MeshWarning):
    """A body that should be closed (a solid, ``stabilise="center"``) has holes: edges used by
    one triangle only.  Its volume and centre are then not those of the object meant."""


def _check_mesh(x: np.ndarray, faces: np.ndarray, consequence: str = "no bending springs are made across them") -> None:
    """Degenerate and duplicate faces raise ValueError; non-manifold edges warn (saying
    ``consequence``)."""
    repeated = (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 0] == faces[:, 2])
    if repeated.any():
        bad = int(np.flatnonzero(repeated)[0])
        raise ValueError(f"faces[{bad}] = {tuple(int(i) for i in faces[bad])} repeats a vertex: a triangle needs "
                         "three different vertices (mesh.repair drops such faces)")
    a, b, c = x[faces[:, 0]], x[faces[:, 1]], x[faces[:, 2]]
    e1, e2 = b - a, c - a
    normal = np.cross(e1, e2)
    scale = np.einsum("ij,ij->i", e1, e1) + np.einsum("ij,ij->i", e2, e2)
    # The same relative test as the C core applies to System(faces=...).
    flat = ~(np.einsum("ij,ij->i", normal, normal) > 1e-24 * scale * scale)
    if flat.any():
        bad = int(np.flatnonzero(flat)[0])
        raise ValueError(f"faces[{bad}] = {tuple(int(i) for i in faces[bad])} is degenerate: its three vertices "
                         "are collinear (zero area; mesh.repair drops such faces)")
    if faces.shape[0] > 1:
        key = _row_keys(np.sort(faces, axis=1))
        order = np.argsort(key, kind="stable")
        same = key[order[1:]] == key[order[:-1]]
        if same.any():
            first = int(np.flatnonzero(same)[0])
            i, j = sorted((int(order[first]), int(order[first + 1])))
            raise ValueError(f"faces[{i}] and faces[{j}] are the same triangle "
                             f"{tuple(int(v) for v in faces[j])}: remove the duplicate (mesh.repair does)")
    nonmanifold = interior_edge_opposites(faces).nonmanifold
    if len(nonmanifold):
        example = tuple(int(v) for v in nonmanifold[0])
        warnings.warn(
            MeshWarning(f"the mesh is non-manifold: {len(nonmanifold)} edge(s) are shared by more than two "
                        f"triangles (e.g. edge {example}); {consequence}"),
            stacklevel=3,
        )


def _is_flat(x: np.ndarray, faces: np.ndarray) -> bool:
    """Whether the mesh encloses no volume as a solid (``stabilise="center"``): its
    tetrahedra to the vertex mean sum to less than 1e-9 of its area times its extent, as
    when every vertex lies in one plane (up to rounding)."""
    volume = float(element_sizes(x, faces, solid=True).sum())
    area = float(element_sizes(x, faces).sum())
    extent = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0)))
    return volume <= 1e-9 * area * extent


def _leaf_order(points: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """An order of the points and the starts of its leaves: a k-d split (each group halved
    across its widest coordinate, level by level, one sort per level) until every leaf holds
    at most ``size`` points, so that every leaf is compact."""
    n = points.shape[0]
    order = np.arange(n)
    starts = np.array([0])
    while True:
        ends = np.append(starts[1:], n)
        if np.all(ends - starts <= size):
            return order, starts
        group = np.repeat(np.arange(len(starts)), ends - starts)
        ordered = points[order]
        width = np.maximum.reduceat(ordered, starts, axis=0) - np.minimum.reduceat(ordered, starts, axis=0)
        coordinate = ordered[np.arange(n), np.argmax(width, axis=1)[group]]
        order = order[np.lexsort((coordinate, group))]
        halves = starts + (ends - starts) // 2
        split = (ends - starts) > size
        starts = np.sort(np.concatenate([starts, halves[split]]))


_LEAF = 32  # points per leaf of the farthest-point search


def _farthest_points(x: np.ndarray) -> np.ndarray:
    """For every point, the index of the point farthest from it (the lowest index on a tie).

    Branch and bound over leaves: seen from the centroid c, the points' directions are split
    into compact leaves of at most 32 (a k-d split on the unit sphere), each a narrow cone
    (axis w, half-angle beta, largest radius R).  For points p, q at radii r_p, r_q and angle
    phi about c, ``|p - q|^2 = r_p^2 + r_q^2 - 2 r_p r_q cos phi``, so two leaves whose axes
    are psi apart are no farther apart than ``R_A^2 + R_B^2 - 2 R_A R_B cos(psi + beta_A +
    beta_B)`` (``R_A^2 + R_B^2`` when that angle is below 90 degrees).  Every query of leaf A
    is at least as far from its farthest point as the nearest of them is from the outermost
    point of the leaf with the largest bound; only leaves whose bound reaches that are
    measured.  On a round body that leaves the few leaves around the antipode: the work is
    about n x (a few hundred) distances plus (n / 32)^2 leaf bounds, instead of n^2 distances.
    """
    n = x.shape[0]
    offset = x - x.mean(axis=0)
    radius = np.linalg.norm(offset, axis=1)
    positive = radius > 0
    direction = np.zeros_like(offset)
    direction[positive] = offset[positive] / radius[positive, None]
    order, starts = _leaf_order(direction, _LEAF)
    points, unit, radius = x[order], direction[order], radius[order]
    leaves = len(starts)
    sizes = np.diff(np.append(starts, n))
    leaf_of = np.repeat(np.arange(leaves), sizes)
    axis = np.add.reduceat(unit, starts, axis=0)
    norm = np.linalg.norm(axis, axis=1)
    axis = np.where(norm[:, None] > 0, axis / np.where(norm > 0, norm, 1.0)[:, None], (1.0, 0.0, 0.0))
    spread = np.arccos(np.clip(np.einsum("ij,ij->i", unit, axis[leaf_of]), -1.0, 1.0))
    # A point at the centre (radius 0) has no direction: its leaf's cone is the whole sphere.
    # (1e-6 rad more: arccos near 1 loses up to about 1e-8 rad to rounding.)
    half_angle = np.maximum.reduceat(np.where(radius > 0, spread, np.pi), starts) + 1e-6
    largest = np.maximum.reduceat(radius, starts)
    # The outermost point of each leaf (the first one at the largest radius).
    outermost = np.flatnonzero(radius == largest[leaf_of])
    outermost = outermost[np.unique(leaf_of[outermost], return_index=True)[1]]
    # cos(psi + beta_A + beta_B) by the angle-sum rule (no trigonometry on leaf pairs), and -1
    # where the angle reaches 180 degrees.
    cos_half, sin_half = np.cos(np.minimum(half_angle, np.pi)), np.sin(np.minimum(half_angle, np.pi))
    candidates: list[np.ndarray] = []
    block = max(1, 2_000_000 // max(leaves, 1))
    for first in range(0, leaves, block):
        rows = slice(first, first + block)
        cos_psi = np.clip(axis[rows] @ axis.T, -1.0, 1.0)
        sin_psi = np.sqrt(1.0 - cos_psi * cos_psi)
        cos_beta = cos_half[rows, None] * cos_half[None] - sin_half[rows, None] * sin_half[None]
        sin_beta = sin_half[rows, None] * cos_half[None] + cos_half[rows, None] * sin_half[None]
        beyond = (half_angle[rows, None] + half_angle[None] >= np.pi) | (cos_psi <= -cos_beta)
        cosine = np.where(beyond, -1.0, cos_psi * cos_beta - sin_psi * sin_beta)
        r_a, r_b = largest[rows, None], largest[None]
        upper = r_a * r_a + r_b * r_b - 2.0 * r_a * r_b * np.minimum(cosine, 0.0)
        for row, bound in enumerate(upper):
            leaf = first + row
            queries = points[starts[leaf]:starts[leaf] + sizes[leaf]]
            target = points[outermost[np.argmax(bound)]]
            known = float(np.min(np.einsum("ij,ij->i", queries - target, queries - target)))
            candidates.append(np.flatnonzero(bound >= known * (1.0 - 1e-9)))
    farthest = np.empty(n, dtype=np.int64)
    for leaf in range(leaves):
        members = np.concatenate([np.arange(starts[b], starts[b] + sizes[b]) for b in candidates[leaf]])
        queries = points[starts[leaf]:starts[leaf] + sizes[leaf]]
        others = points[members]
        distance2 = np.zeros((len(queries), len(members)))
        for k in range(3):
            difference = queries[:, k, None] - others[None, :, k]
            distance2 += difference * difference
        best = distance2.max(axis=1, keepdims=True)
        # The lowest original index among the points at the largest distance.
        index = np.where(distance2 == best, order[members][None], n)
        farthest[order[starts[leaf]:starts[leaf] + sizes[leaf]]] = index.min(axis=1)
    return farthest


def _antipode_pairs(x: np.ndarray) -> np.ndarray:
    """Each vertex joined to the vertex farthest from it, as unique sorted pairs (S, 2)."""
    n = x.shape[0]
    pairs = np.sort(np.stack([np.arange(n), _farthest_points(x)], axis=1), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return pairs[np.unique(_row_keys(pairs), return_index=True)[1]]


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


def _optional_positive(value: float | None, name: str, allow_zero: bool = False) -> float | None:
    """None, or a finite float > 0 (>= 0 with ``allow_zero``); ValueError/TypeError naming ``name``."""
    if value is None:
        return None
    number = real_scalar(value, name)
    if not np.isfinite(number) or number < 0.0 or (number == 0.0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return number


def _material_values(mass: ArrayLike | None, density: float | None, total_mass: float | None, k: ArrayLike | None,
                     youngs_modulus: float | None, c: ArrayLike | None,
                     damping_ratio: float | None) -> tuple[float | None, float | None, float | None, float | None]:
    """The checked density, total mass, Young's modulus and damping ratio (each None or a
    finite float > 0; the ratio >= 0); ValueError for a value out of range or for giving both
    of mass/density/total_mass, k/youngs_modulus or c/damping_ratio."""
    density = _optional_positive(density, "density")
    total_mass = _optional_positive(total_mass, "total_mass")
    youngs_modulus = _optional_positive(youngs_modulus, "youngs_modulus")
    damping_ratio = _optional_positive(damping_ratio, "damping_ratio", allow_zero=True)
    given = [name for name, value in (("mass", mass), ("density", density), ("total_mass", total_mass))
             if value is not None]
    if len(given) > 1:
        raise ValueError(f"give one of mass, density and total_mass, not {' and '.join(given)}")
    if k is not None and youngs_modulus is not None:
        raise ValueError("give k or youngs_modulus, not both")
    if c is not None and damping_ratio is not None:
        raise ValueError("give c or damping_ratio, not both")
    return density, total_mass, youngs_modulus, damping_ratio


def _pin_mask(pinned: ArrayLike | None, n: int) -> np.ndarray:
    pin_mask = np.zeros(n, dtype=bool)
    if pinned is None:
        return pin_mask
    pin_array = np.asarray(pinned)
    if pin_array.dtype == bool:
        if pin_array.shape != (n,):
            raise ValueError(f"pinned as a boolean mask must have shape ({n},), got {pin_array.shape}")
        return pin_array.copy()
    if pin_array.size:
        if pin_array.dtype.kind not in "iu":
            raise TypeError(f"pinned must be vertex indices or a boolean mask, got dtype {pin_array.dtype}")
        flat = pin_array.reshape(-1)
        if flat.min() < 0 or flat.max() >= n:
            raise ValueError(f"pinned refers to a vertex outside 0..{n - 1}")
        pin_mask[flat] = True
    return pin_mask


def _spring_damping(zeta: float, k: np.ndarray, springs: np.ndarray, mass: np.ndarray,
                    pinned: np.ndarray) -> np.ndarray:
    """c = 2 zeta sqrt(k mu) per spring, mu the reduced mass of its ends (a pinned end counts
    as infinitely heavy); 0 for a spring between two pinned nodes."""
    heavy = np.where(pinned, np.inf, mass)
    m_i, m_j = heavy[springs[:, 0]], heavy[springs[:, 1]]
    both = np.isinf(m_i) & np.isinf(m_j)
    first = np.where(np.isinf(m_i), m_j, m_i)
    second = np.where(np.isinf(m_i), np.inf, m_j)
    c = damping_for_ratio(zeta, k, np.where(both, 1.0, first), np.where(both, np.inf, second))
    return np.where(both, 0.0, c)


def from_mesh(
    vertices: ArrayLike,
    faces: ArrayLike,
    *,
    mass: ArrayLike | None = None,
    k: ArrayLike | None = None,
    c: ArrayLike | None = None,
    bend_k: float | None = None,
    bend_c: float = 0.0,
    stabilise: str | None = None,
    stabilise_k: float | None = None,
    stabilise_c: float | None = None,
    density: float | None = None,
    total_mass: float | None = None,
    youngs_modulus: float | None = None,
    thickness: float | None = None,
    damping_ratio: float | None = None,
    uv: ArrayLike | None = None,
    pinned: ArrayLike | None = None,
    return_counts: bool = False,
    fill: str | None = None,
    edge_length: float | None = None,
    nodes: int | None = None,
    mesher: str = "builtin",
    **system_options: Any,
) -> System | tuple[System, dict[str, int]]:
    """Turns a triangle mesh into a :class:`msprings.System`: a surface of springs or, with
    ``fill="tetrahedra"``, a solid.

    **Solids** (``fill="tetrahedra"``): the closed surface is filled with tetrahedra of about
    ``edge_length`` (:func:`tetrahedralize`, with ``mesher``) and made into springs along
    their edges by :func:`from_tetrahedra`: masses lumped from ``density`` (rho V), stiffnesses
    from ``youngs_modulus`` so that the body responds as a solid of about that modulus and
    Poisson's ratio 1/4, dampers from ``damping_ratio``.  ``s.faces`` is the surface to draw:
    with the built-in mesher the input faces (long edges split), whose vertices keep their
    indices, so ``pinned`` refers to the input vertices.  An open or flat surface cannot be
    filled: it is converted as a sheet (membrane values with ``thickness``, by default the
    median edge length) and a :class:`MeshWarning` says so.  ``stabilise``, ``bend_k`` and
    ``uv`` do not apply to a filled solid.

    **Surfaces** (``fill=None``, the default):

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
         distance from the centre.  The body is then a solid: the tetrahedra joining each
         triangle to the centre;
       - ``"opposite"``: every vertex joined to the vertex farthest from it, each pair once
         (n/2 springs on a centrally symmetric mesh such as :func:`icosphere`).

    Every spring's rest length is its initial length, so the network starts unstressed.

    **Material values.**  Instead of per-node masses and per-spring stiffnesses, the mesh
    can be given what it is made of, so that a finer mesh of the same object behaves the
    same (see :mod:`msprings.mesh._material` for the derivation and the reference):

    - mass: ``density`` rho (kg/m^3) or ``total_mass`` M (kg), lumped onto the nodes: a
      third of each triangle's mass to each corner (a surface of ``thickness`` t: a
      triangle of area A weighs rho t A), or for a solid (``stabilise="center"``) a quarter
      of each tetrahedron's (volume V: rho V);
    - stiffness: ``youngs_modulus`` E (Pa) gives each structural spring of rest length L
      ``k = E t A_e / L^2`` on a surface (A_e: the area of the triangles that have the edge;
      Van Gelder 1998), or ``k = E V_e / L^2`` in a solid (V_e: the volume of the tetrahedra
      that have it), the spokes of ``"center"`` included;
    - damping: ``damping_ratio`` zeta (dimensionless) gives every spring, of every family,
      ``c = 2 zeta sqrt(k mu)`` with ``mu = m_i m_j / (m_i + m_j)`` the reduced mass of its
      ends (kg; the free end's mass if the other is pinned).  This is each spring's own
      two-node ratio, which the finest, mesh-sized motions feel; a slow mode whose
      wavelength spans many springs is damped far less (about zeta times the ratio of its
      frequency to the springs' own ``sqrt(k / mu)``), so on a finer mesh the same zeta damps
      the lowest modes less.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles; carried into the system (``s.faces``) for air forces and normals.
    mass : float or array_like, shape (n,), optional
        Mass of each vertex (kg per node, not a total); default 1 kg, unless ``density`` or
        ``total_mass`` is given (give only one of the three).
    k, c : float or array_like, shape (E,), optional
        Stiffness (N/m, default 1, or from ``youngs_modulus``) and damping (N s/m, default 0,
        or from ``damping_ratio``) of the structural springs.
    bend_k, bend_c : float, optional
        Stiffness and damping of the bending springs; ``bend_k=None`` makes none.  A Young's
        modulus does not set ``bend_k`` (a membrane has no bending stiffness).
    stabilise : None, "center" or "opposite"
    stabilise_k, stabilise_c : float, optional
    density : float, optional
        kg/m^3; a surface needs ``thickness``.
    total_mass : float, optional
        kg, for the whole mesh (the centre node of ``"center"`` included).
    youngs_modulus : float, optional
        Pa; a surface needs ``thickness``.
    thickness : float, optional
        m, of a surface (not of a solid).
    damping_ratio : float, optional
        >= 0; replaces ``c``, ``bend_c`` and ``stabilise_c``.
    uv : array_like, shape (n, 2), optional
        Texture coordinates (``s.uv``); the centre node gets (0, 0).
    pinned : sequence of int or bool array of shape (n,), optional
        Pinned vertices (the centre node is never pinned).
    return_counts : bool
        If True, return ``(system, {"structural": E, "bend": B, "stabilise": S})``; a filled
        solid adds ``"tetrahedra": T`` (its springs count as structural).
    fill : None or "tetrahedra"
        ``"tetrahedra"`` makes a solid (above).
    edge_length : float, optional
        m, the filling's target edge length (default: the surface's median edge length, but
        no finer than about 10,000 interior nodes and no coarser than about 1,000).
    nodes : int, optional
        A target number of interior nodes instead of ``edge_length``.
    mesher : {"builtin", "tetgen", "ftetwild", "gmsh"}
        The tetrahedral mesher (see :func:`tetrahedralize`); all but ``"builtin"`` (SciPy)
        are optional packages.
    **system_options
        ``velocities`` (n, 3) (the centre node gets the mean), ``gravity``, ``drag``,
        ``energy_loss``, ``integrator``, and any of the System attributes
        ``strain_limit``, ``self_collision``, ``threads``, ``newton_max_iter``, ``newton_tol``,
        ``cg_max_iter``, ``cg_tol``, ``air_density``, ``drag_coefficient``,
        ``lift_coefficient``, ``wind``, ``gust``, ``gust_frequency``, ``gust_wavenumber``.

    Returns
    -------
    System or tuple of (System, dict of str to int)
        The system, at rest at the mesh's vertices; with ``return_counts`` also the number
        of springs of each kind.

    Raises
    ------
    ValueError
        A face repeats a vertex, has zero area, refers to a missing vertex, or appears twice
        (:func:`repair` fixes all of these); a bad ``stabilise`` name; more than one of
        ``mass``, ``density`` and ``total_mass``, or ``k`` with ``youngs_modulus``, or ``c``
        with ``damping_ratio``; a surface's ``density`` or ``youngs_modulus`` without
        ``thickness``, or a ``thickness`` for a solid; a material value that is not finite
        and > 0 (``damping_ratio`` >= 0); with ``density`` or ``total_mass``, a free vertex in
        no triangle (it would have no mass); ``density``, ``total_mass`` or
        ``youngs_modulus`` with ``stabilise="center"`` on a flat mesh (all vertices in one
        plane: the solid has no volume; convert it as a sheet, with a ``thickness``).
    TypeError
        An unknown keyword argument.

    Warns
    -----
    MeshWarning
        Edges shared by more than two triangles (the mesh is still converted).
    OpenMeshWarning
        ``stabilise="center"`` (a solid) on a mesh with open boundary edges: the message
        says how many.
    """
    unknown = set(system_options) - set(_SYSTEM_ARGUMENTS) - set(_SYSTEM_ATTRIBUTES)
    if unknown:
        raise TypeError(f"from_mesh() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    if fill not in (None, "tetrahedra"):
        raise ValueError(f"fill must be None or 'tetrahedra', got {fill!r}")
    if fill is None and (edge_length is not None or nodes is not None or mesher != "builtin"):
        raise ValueError("edge_length, nodes and mesher apply to fill='tetrahedra'")
    if fill == "tetrahedra":
        return _filled(vertices, faces, mass=mass, k=k, c=c, bend_k=bend_k, stabilise=stabilise, density=density,
                       total_mass=total_mass, youngs_modulus=youngs_modulus, thickness=thickness,
                       damping_ratio=damping_ratio, uv=uv, pinned=pinned, return_counts=return_counts,
                       edge_length=edge_length, nodes=nodes, mesher=mesher, system_options=system_options)
    if stabilise not in (None, "center", "opposite"):
        raise ValueError(f"stabilise must be None, 'center' or 'opposite', got {stabilise!r}")
    solid = stabilise == "center"
    density, total_mass, youngs_modulus, damping_ratio = _material_values(
        mass, density, total_mass, k, youngs_modulus, c, damping_ratio)
    thickness = _optional_positive(thickness, "thickness")
    if solid and thickness is not None:
        raise ValueError("thickness applies to a surface; stabilise='center' makes a solid (the tetrahedra "
                         "from each triangle to the centre), which has none")
    if not solid and thickness is None and (density is not None or youngs_modulus is not None):
        raise ValueError("a surface's density and youngs_modulus need its thickness (m)")
    x = _points(vertices, "vertices", 3)
    if x.shape[0] < 1:
        raise ValueError("vertices must contain at least one vertex")
    n = x.shape[0]
    f = _triangles(faces, n)
    _check_mesh(x, f)
    material = [name for name, value in (("density", density), ("total_mass", total_mass),
                                         ("youngs_modulus", youngs_modulus)) if value is not None]
    if solid and material and _is_flat(x, f):
        raise ValueError(
            "the mesh is flat (its vertices lie in one plane), so the solid that stabilise='center' makes of it "
            f"(the tetrahedra from each triangle to the centre node) has no volume and {' and '.join(material)} "
            "would give it no mass or stiffness: convert it as a sheet, with stabilise=None (or 'opposite') and "
            "its thickness t (m), which gives every vertex a third of its triangles' mass rho t A and every edge "
            "k = E t A_e / L^2")
    if solid:
        rim = len(boundary_edges(f))
        if rim:
            warnings.warn(OpenMeshWarning(
                f"the mesh is open ({rim} boundary edges, each used by one triangle), but stabilise='center' "
                "treats it as a closed solid: its volume and centre are not the object's (mesh.repair reports "
                "the boundary; close the holes first)"), stacklevel=2)

    edges = unique_edges(f)
    families = [edges]
    if youngs_modulus is not None:
        spokes = np.stack([np.arange(n), np.full(n, n)], axis=1) if solid else np.zeros((0, 2), dtype=np.int64)
        material_k = spring_stiffness(x, f, np.concatenate([edges, spokes]), youngs_modulus,
                                      1.0 if thickness is None else thickness, solid)
        stiffness = [material_k[:len(edges)]]
    else:
        stiffness = [_per_edge(1.0 if k is None else k, len(edges), "k")]
    damping = [_per_edge(0.0 if c is None else c, len(edges), "c")]
    bend = np.zeros((0, 2), dtype=np.int64)
    if bend_k is not None:
        bend = interior_edge_opposites(f).opposites
        families.append(bend)
        stiffness.append(np.full(len(bend), float(bend_k)))
        damping.append(np.full(len(bend), float(bend_c)))

    positions = x
    if total_mass is not None:
        node_mass = lumped_masses(x, f, total_mass, solid)
    elif density is not None:
        size = float(element_sizes(x, f, solid).sum())
        node_mass = lumped_masses(x, f, density * size * (1.0 if solid else thickness), solid)
    else:
        node_mass = np.broadcast_to(np.asarray(1.0 if mass is None else mass, dtype=np.float64), (n,))
    coordinates = None if uv is None else _points(uv, "uv", 2, rows=n)
    pin_mask = _pin_mask(pinned, n)
    if density is not None or total_mass is not None:
        massless = np.flatnonzero((node_mass[:n] == 0.0) & ~pin_mask)
        if len(massless):
            raise ValueError(f"vertex {int(massless[0])} is in no triangle, so a density or total mass gives it no "
                             f"mass ({len(massless)} such vertices): remove them (mesh.repair does) or pin them")
    options = dict(system_options)
    attributes = {name: options.pop(name) for name in _SYSTEM_ATTRIBUTES if name in options}

    stabilising = np.zeros((0, 2), dtype=np.int64)
    if stabilise is not None:
        mean_k = float(np.mean(stiffness[0])) if len(stiffness[0]) else 0.0
        spring_k = mean_k if stabilise_k is None else float(stabilise_k)
        spring_c = (_scalar_or_mean(0.0 if c is None else c, "c") if stabilise_c is None
                    else float(stabilise_c))
        if solid:
            stabilising = np.stack([np.arange(n), np.full(n, n)], axis=1).astype(np.int64)
            positions = np.concatenate([x, x.mean(axis=0, keepdims=True)])
            if len(node_mass) == n:
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
        if solid and youngs_modulus is not None and stabilise_k is None:
            stiffness.append(material_k[len(edges):])
        else:
            stiffness.append(np.full(len(stabilising), spring_k))
        damping.append(np.full(len(stabilising), spring_c))

    springs = np.concatenate(families).astype(np.int64).reshape(-1, 2)
    spring_k_all = np.concatenate(stiffness)
    if damping_ratio is not None:
        spring_c_all = _spring_damping(damping_ratio, spring_k_all, springs, np.asarray(node_mass), pin_mask)
    else:
        spring_c_all = np.concatenate(damping)
    system = System(
        positions,
        springs,
        mass=node_mass,
        k=spring_k_all,
        c=spring_c_all,
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


def _filled(vertices: ArrayLike, faces: ArrayLike, *, mass: ArrayLike | None, k: ArrayLike | None,
            c: ArrayLike | None, bend_k: float | None, stabilise: str | None, density: float | None,
            total_mass: float | None, youngs_modulus: float | None, thickness: float | None,
            damping_ratio: float | None, uv: ArrayLike | None, pinned: ArrayLike | None, return_counts: bool,
            edge_length: float | None, nodes: int | None, mesher: str,
            system_options: dict[str, Any]) -> System | tuple[System, dict[str, int]]:
    """``from_mesh(..., fill="tetrahedra")``: a filled solid, or a sheet for an open or flat surface."""
    from ._solid import MESHERS, STIFFNESS_FACTORS, from_tetrahedra, tetrahedralize

    for name, value in (("stabilise", stabilise), ("bend_k", bend_k), ("uv", uv)):
        if value is not None:
            raise ValueError(f"{name} does not apply to a solid filled with tetrahedra (fill='tetrahedra')")
    if mesher not in MESHERS:
        raise ValueError(f"mesher must be one of {', '.join(repr(m) for m in MESHERS)}, got {mesher!r}")
    x = _points(vertices, "vertices", 3)
    f = _triangles(faces, x.shape[0])
    _check_mesh(x, f, "the filling treats the parts that meet there as one body")
    rim = len(boundary_edges(f))
    flat = len(f) < 4 or _is_flat(x, f)
    if rim or flat:
        if thickness is None:
            edges = unique_edges(f)
            thickness = float(np.median(np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)))
            said = f"thickness {thickness:.4g} m (the median edge length; give thickness= to choose)"
        else:
            said = f"thickness {thickness:.4g} m"
        why = "flat (its vertices lie in one plane)" if flat else f"open ({rim} boundary edges)"
        warnings.warn(MeshWarning(
            f"the surface is {why}, so it cannot be filled with tetrahedra: it is converted as a sheet of {said}, "
            "with membrane values (a third of each triangle's mass rho t A on each corner, k = E t A_e / L^2)"
            + ("" if flat else "; to fill it as a solid, close its holes first with mesh.close_holes")),
            stacklevel=3)
        return from_mesh(x, f, mass=mass, k=k, c=c, density=density, total_mass=total_mass,
                         youngs_modulus=youngs_modulus, thickness=thickness, damping_ratio=damping_ratio,
                         pinned=pinned, return_counts=return_counts, **system_options)
    if thickness is not None:
        raise ValueError("thickness applies to a sheet; fill='tetrahedra' makes a solid, which has none")
    n = x.shape[0]
    if mass is not None and np.ndim(mass) != 0:
        raise ValueError("mass of a filled solid must be a scalar (kg per node): its nodes are made by the filling; "
                         "give density or total_mass, or set s.mass[:] afterwards")
    for name, value in (("k", k), ("c", c)):
        if value is not None and np.ndim(value) != 0:
            raise ValueError(f"{name} of a filled solid must be a scalar: its springs are made by the filling; "
                             f"set s.{name}[:] afterwards")
    pin_mask = _pin_mask(pinned, n)
    filled = tetrahedralize(x, f, edge_length=edge_length, nodes=nodes, mesher=mesher)
    count = filled.nodes.shape[0]
    pins = np.zeros(count, dtype=bool)
    if pin_mask.any():
        if mesher == "builtin":
            pins[:n] = pin_mask
        else:
            from scipy.spatial import cKDTree

            pins[cKDTree(filled.nodes).query(x[pin_mask])[1]] = True
    options = dict(system_options)
    if options.get("velocities") is not None:
        velocity = np.asarray(options["velocities"], dtype=np.float64)
        if velocity.shape == (3,):
            options["velocities"] = np.broadcast_to(velocity, (count, 3)).copy()
        elif velocity.shape != (count, 3):
            raise ValueError(f"velocities of a filled solid must have shape (3,) (one for the body) or ({count}, 3) "
                             f"(one per node of the filling), got {velocity.shape}")
    system = from_tetrahedra(filled.nodes, filled.tets, surface=filled.surface, mass=mass, density=density,
                             total_mass=total_mass, k=k, youngs_modulus=youngs_modulus, c=c,
                             damping_ratio=damping_ratio, pinned=pins, stiffness_factor=STIFFNESS_FACTORS[mesher],
                             **options)
    if return_counts:
        return system, {"structural": int(system.springs.shape[0]), "bend": 0, "stabilise": 0,
                        "tetrahedra": int(filled.tets.shape[0])}
    return system
