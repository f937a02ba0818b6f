"""Material values for a mesh's springs: lumped masses from a density or a total mass, and
spring stiffnesses from a Young's modulus.  NumPy only; SI units (m, kg, Pa, N/m).

A surface (membrane) of thickness t is cut into its triangles, a solid (a closed surface with
a centre node) into the tetrahedra that join each triangle to the centre.  Every element gives
its corners equal shares of its mass (a third of a triangle's, a quarter of a tetrahedron's:
lumped masses), and every spring gets the stiffness

    membrane:  k = E t (sum of the areas of the triangles on the edge) / L^2
    solid:     k = E (sum of the volumes of the tetrahedra on the edge) / L^2

with L its rest length.  The membrane rule is the simplest form of Van Gelder's (A. Van Gelder,
"Approximate simulation of elastic membranes by triangulated spring meshes", Journal of
Graphics Tools 3(2), 1998): a mesh of equilateral triangles is then exactly an isotropic
membrane of modulus E and Poisson's ratio 1/3, and a grid of squares cut by one diagonal
stretched along its grid lines is exactly one of modulus E and Poisson's ratio 0.  The solid
rule is its analogue in volume: a regular tetrahedron's six springs then have the bulk modulus
of a solid of modulus E and Poisson's ratio 1/4.  Both scale so that a finer mesh of the same
object keeps its stiffness and mass per area or volume, hence the same sag and frequencies.

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._system import real_scalar
from ._geometry import _elements, _mesh_arrays


def _non_negative(value: float, name: str) -> float:
    """A finite real number >= 0, with errors naming ``name``."""
    number = real_scalar(value, name)
    if not (math.isfinite(number) and number >= 0.0):
        raise ValueError(f"{name} = {number} must be finite and >= 0")
    return number


__all__ = ["lumped_masses", "spring_stiffness", "element_sizes"]


def _triangle_areas(x: np.ndarray, faces: np.ndarray) -> np.ndarray:
    a, b, c = x[faces[:, 0]], x[faces[:, 1]], x[faces[:, 2]]
    return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)


def _tetrahedron_volumes(x: np.ndarray, faces: np.ndarray, centre: np.ndarray) -> np.ndarray:
    a, b, c = x[faces[:, 0]] - centre, x[faces[:, 1]] - centre, x[faces[:, 2]] - centre
    return np.abs(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6.0


def element_sizes(vertices: ArrayLike, faces: ArrayLike, solid: bool = False) -> np.ndarray:
    """Each element's size, shape (F,): the triangles' areas (m^2), or with ``solid`` the
    volumes (m^3) of the tetrahedra joining each triangle to the mean of the vertices (the
    centre node of ``from_mesh(..., stabilise="center")``), taken positive.

    Their sum is the surface's area, or for a solid the volume of a closed surface that is
    star-shaped from its vertex mean (every convex body, a blob); a surface that folds back
    behind the centre counts those folds twice.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.
    solid : bool, default False
        Volumes of the centre tetrahedra instead of the triangles' areas.

    Returns
    -------
    numpy.ndarray, shape (F,)
        Areas (m^2) or volumes (m^3).

    Raises
    ------
    TypeError
        If ``vertices`` is not real numbers or ``faces`` not integers.
    ValueError
        If ``vertices`` is not (n, 3) or not finite, ``faces`` is not (F, 3) or refers
        to a vertex outside ``0..n-1``.
    """
    x, f = _mesh_arrays(vertices, faces)
    return _element_sizes(x, f, solid)


def _element_sizes(x: np.ndarray, f: np.ndarray, solid: bool) -> np.ndarray:
    if solid:
        return _tetrahedron_volumes(x, f, x.mean(axis=0))
    return _triangle_areas(x, f)


def lumped_masses(vertices: ArrayLike, faces: ArrayLike, total: float, solid: bool = False) -> np.ndarray:
    """Node masses (kg) that lump ``total`` kg over the elements in proportion to their size.

    A surface: shape (n,), every vertex gets a third of the mass of each triangle it is a
    corner of.  A solid: shape (n + 1,), the last entry the centre node's; every node gets a
    quarter of the mass of each tetrahedron it is a corner of (so the centre node carries a
    quarter of the body).  Vertices in no face get nothing (0 kg).

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.
    total : float
        Total mass (kg).
    solid : bool, default False
        Lump the centre tetrahedra's volumes instead of the triangles' areas.

    Returns
    -------
    numpy.ndarray, shape (n,) or (n + 1,)
        Node masses (kg).

    Raises
    ------
    TypeError
        If ``vertices`` is not real numbers or ``faces`` not integers, or ``total`` is not a real number.
    ValueError
        If ``vertices`` is not (n, 3) or not finite, ``faces`` is not (F, 3) or refers
        to a vertex outside ``0..n-1``, or ``total`` is negative or not finite.
    """
    x, f = _mesh_arrays(vertices, faces)
    total = _non_negative(total, "total")
    sizes = _element_sizes(x, f, solid)
    element_mass = total * sizes / sizes.sum()
    share = element_mass / (4.0 if solid else 3.0)
    n = x.shape[0]
    mass = np.zeros(n + 1 if solid else n)
    for corner in range(3):
        mass[:n] += np.bincount(f[:, corner], weights=share, minlength=n)
    if solid:
        mass[n] = share.sum()
    return mass


def spring_stiffness(vertices: ArrayLike, faces: ArrayLike, edges: ArrayLike, modulus: float,
                     thickness: float = 1.0, solid: bool = False) -> np.ndarray:
    """Stiffness (N/m) of the springs on ``edges`` from a Young's modulus ``modulus`` (Pa).

    Surface: ``k = E t A / L^2``, A the summed area of the triangles that have the edge, t the
    ``thickness`` (m).  Solid: ``edges`` are the structural edges followed by the n spokes
    (vertex i, centre); ``k = E V / L^2``, V the summed volume of the tetrahedra (triangle and
    centre) that have the spring as an edge.  L is the edge's length in ``vertices`` (for a
    solid the centre is the vertex mean).  See the module notes for the reference.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (m).
    faces : array_like of int, shape (F, 3)
        Triangles, 0-based vertex indices.
    edges : array_like of int, shape (E, 2) or (E + n, 2)
        The springs: the mesh's :func:`unique_edges`, followed for a solid by the n spokes.
    modulus : float
        Young's modulus E (Pa).
    thickness : float, default 1.0
        Surface thickness t (m); not used for a solid.
    solid : bool, default False
        Treat the mesh as the solid of the centre tetrahedra.

    Returns
    -------
    numpy.ndarray, shape (E,)
        Spring stiffnesses (N/m).

    Raises
    ------
    TypeError
        If ``vertices`` is not real numbers, ``faces`` or ``edges`` not integers, or
        ``modulus`` or ``thickness`` not a real number.
    ValueError
        If ``vertices`` is not (n, 3) or not finite, ``faces`` is not (F, 3) or refers to a
        vertex outside ``0..n-1``, ``edges`` is not (E, 2), refers to a node outside the
        mesh (``0..n`` for a solid) or lacks an edge of ``faces`` (or for a solid a spoke),
        ``modulus`` is negative or not finite, or ``thickness`` is not finite and > 0.
    """
    x, f = _mesh_arrays(vertices, faces)
    n = x.shape[0]
    pairs = _elements(edges, "edges", 2, n + 1 if solid else n, "node")
    modulus = _non_negative(modulus, "modulus")
    thickness = real_scalar(thickness, "thickness")
    if not (math.isfinite(thickness) and thickness > 0.0):
        raise ValueError(f"thickness = {thickness} must be finite and > 0 (m)")
    sizes = _element_sizes(x, f, solid)
    # Sum each element's size onto its edges, looked up through sorted integer keys (i n + j).
    points = np.concatenate([x, x.mean(axis=0, keepdims=True)]) if solid else x
    width = n + 1
    low, high = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    keys = low * width + high
    order = np.argsort(keys)
    sides = [(0, 1), (1, 2), (2, 0)]
    element_edges = [(f[:, p], f[:, q]) for p, q in sides]
    if solid:
        element_edges += [(f[:, corner], np.full(len(f), n)) for corner in range(3)]
    summed = np.zeros(len(pairs))
    for i, j in element_edges:
        key = np.minimum(i, j) * width + np.maximum(i, j)
        found = np.minimum(np.searchsorted(keys, key, sorter=order), max(len(keys) - 1, 0))
        missing = (keys[order[found]] != key) if len(keys) else np.ones(len(key), dtype=bool)
        if missing.any():
            bad = int(np.flatnonzero(missing)[0])
            raise ValueError(f"edges lacks the edge ({int(i[bad])}, {int(j[bad])}) of faces[{bad}]: give every edge "
                             "of the mesh (unique_edges, then the spokes for a solid)")
        slot = order[found]
        summed += np.bincount(slot, weights=sizes, minlength=len(pairs))
    length2 = np.einsum("ij,ij->i", points[pairs[:, 1]] - points[pairs[:, 0]], points[pairs[:, 1]] - points[pairs[:, 0]])
    factor = modulus if solid else modulus * thickness
    return factor * summed / length2
