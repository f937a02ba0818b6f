"""Triangle meshes: Wavefront OBJ files, an icosphere, edge topology and conversion to springs.

Everything here is NumPy only (the ParaView export uses meshio, imported when called).
Lengths are in metres, masses in kilograms, stiffnesses in N/m and damping coefficients in
N s/m, as in :class:`msprings.System`.

A mesh is turned into a spring network by :func:`from_mesh`: one structural spring per
edge, optionally a bending spring across every interior edge and stabilising springs that
keep a closed surface (a jelly, a balloon) from folding flat; it can be given material
values (a density, a Young's modulus, a damping ratio) instead of per-node and per-spring
ones.  With ``fill="tetrahedra"`` a closed surface becomes a solid instead: filled with
tetrahedra (:func:`tetrahedralize`) and made into springs along their edges
(:func:`from_tetrahedra`, which also takes a volume mesh the user already has).
:func:`repair` cleans a mesh that the converter would refuse.
:func:`export_obj_frames` writes a simulation back out as one OBJ file per frame for Blender
or MeshLab, :func:`export_vtu_series` and :func:`export_xdmf` as time series for ParaView.

The subpackage holds one private module per part: geometry in :mod:`msprings.mesh._geometry`,
OBJ files in :mod:`msprings.mesh._obj`, repair in :mod:`msprings.mesh._repair`, material
values in :mod:`msprings.mesh._material`, solids in :mod:`msprings.mesh._solid`, the conversion in :mod:`msprings.mesh._springs`
and ParaView files in :mod:`msprings.mesh._export`; this module gathers their public names.
"""
from __future__ import annotations

from ._export import export_vtu_series, export_xdmf
from ._geometry import MAX_SUBDIVISIONS  # noqa: F401 (mesh.MAX_SUBDIVISIONS: icosphere's documented bound)
from ._geometry import (
    InteriorEdges,
    Mesh,
    enclosed_volume,
    face_normals,
    icosphere,
    interior_edge_opposites,
    unique_edges,
    vertex_normals,
)
from ._material import element_sizes, lumped_masses, spring_stiffness
from ._obj import export_obj_frames, load_obj, save_obj
from ._repair import RepairReport, boundary_edges, close_holes, repair
from ._solid import TetMesh, boundary_faces, from_tetrahedra, read_tetrahedra, tetrahedralize, tetrahedron_stiffness, tetrahedron_volumes
from ._springs import MeshWarning, OpenMeshWarning, from_mesh

__all__ = [
    "InteriorEdges",
    "Mesh",
    "MeshWarning",
    "OpenMeshWarning",
    "RepairReport",
    "TetMesh",
    "boundary_edges",
    "boundary_faces",
    "close_holes",
    "element_sizes",
    "enclosed_volume",
    "export_obj_frames",
    "export_vtu_series",
    "export_xdmf",
    "face_normals",
    "from_mesh",
    "from_tetrahedra",
    "icosphere",
    "interior_edge_opposites",
    "load_obj",
    "read_tetrahedra",
    "lumped_masses",
    "repair",
    "save_obj",
    "spring_stiffness",
    "tetrahedralize",
    "tetrahedron_stiffness",
    "tetrahedron_volumes",
    "unique_edges",
    "vertex_normals",
]
