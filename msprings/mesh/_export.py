"""A recorded run written for ParaView: a VTU file per record with a ParaView collection
(.pvd) that times them, or one XDMF time series.  Through meshio (``pip install
"msprings[export]"``), imported only here.  Lengths in m, velocities in m/s, times in s.

Part of :mod:`msprings.mesh`, which re-exports its public names.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import quoteattr

import numpy as np

if TYPE_CHECKING:
    from ..trajectory import Trajectory

__all__ = ["export_vtu_series", "export_xdmf"]


def _meshio() -> Any:
    try:
        import meshio
    except ImportError:
        raise ImportError('writing ParaView files needs meshio: pip install "msprings[export]"') from None
    return meshio


def _cells(trajectory: Trajectory, faces: bool, springs: bool) -> list[tuple[str, np.ndarray]]:
    """The cell blocks: the triangles, then the springs as lines (node indices, int64)."""
    blocks = []
    if faces and len(trajectory.faces):
        blocks.append(("triangle", np.asarray(trajectory.faces, dtype=np.int64)))
    if springs and len(trajectory.springs):
        blocks.append(("line", np.asarray(trajectory.springs, dtype=np.int64)))
    if not blocks:
        raise ValueError("nothing to write as cells: the run has no faces or springs (or both were left out)")
    return blocks


def _point_data(trajectory: Trajectory, record: int) -> dict[str, np.ndarray]:
    data = {"pinned": np.asarray(trajectory.pinned, dtype=np.int32)}
    if trajectory.velocities is not None:
        data["velocity"] = np.ascontiguousarray(trajectory.velocities[record])
    return data


def export_vtu_series(folder: str | os.PathLike[str], trajectory: Trajectory, *, prefix: str = "frame",
                      faces: bool = True, springs: bool = True) -> Path:
    """Writes a recorded run as one VTU file per record and a ParaView collection file that
    gives each its time; returns the collection's path, ``{folder}/{prefix}.pvd``.

    Open the ``.pvd`` in ParaView: the time slider steps through the records.  Each
    ``{prefix}_0000.vtu``, ... holds the node positions of its record (m) as points, the
    triangles (``trajectory.faces``) and the springs (``trajectory.springs``) as line cells,
    and as point data ``pinned`` (0 or 1, int32) and, for a run recorded with
    ``velocities=True``, ``velocity`` (m/s).

    Parameters
    ----------
    folder : str or os.PathLike
        Created if missing.
    trajectory : Trajectory
        From ``system.run(...)`` or :meth:`Trajectory.load`.
    prefix : str, default "frame"
        File names' start.
    faces, springs : bool, default True
        Write the triangles, the springs (at least one of them must have cells).

    Returns
    -------
    pathlib.Path
        The collection file, ``{folder}/{prefix}.pvd``.

    Raises
    ------
    ValueError
        No record, or no cells to write.
    ImportError
        meshio is not installed.
    """
    meshio = _meshio()
    if len(trajectory) == 0:
        raise ValueError("the trajectory has no records")
    cells = _cells(trajectory, faces, springs)
    directory = Path(folder)
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for record, time in enumerate(trajectory.times.tolist()):
        name = f"{prefix}_{record:04d}.vtu"
        frame = meshio.Mesh(np.ascontiguousarray(trajectory.positions[record]), cells,
                            point_data=_point_data(trajectory, record))
        meshio.write(directory / name, frame, file_format="vtu")
        entries.append(f'    <DataSet timestep="{time!r}" part="0" file={quoteattr(name)}/>')
    collection = directory / f"{prefix}.pvd"
    collection.write_text("\n".join([
        '<?xml version="1.0"?>',
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
        "  <Collection>",
        *entries,
        "  </Collection>",
        "</VTKFile>",
        "",
    ]), encoding="utf-8")
    return collection


def export_xdmf(path: str | os.PathLike[str], trajectory: Trajectory, *, cells: str | None = None,
                data_format: str = "XML") -> Path:
    """Writes a recorded run as one XDMF time series and returns its path.

    meshio's XDMF series keeps one mesh for all times, so the points are the first record's
    positions (m) and every time step carries ``displacement`` (m) from them: in ParaView
    apply "Warp By Vector" with ``displacement`` to see the motion.  Also per step:
    ``velocity`` (m/s, for a run recorded with ``velocities=True``) and ``pinned``.  One kind
    of cell per file (meshio's series does not write triangles and lines into one grid):
    :func:`export_vtu_series` writes both.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.xdmf`` file.
    trajectory : Trajectory
        From ``system.run(...)`` or :meth:`Trajectory.load`.
    cells : {"faces", "springs", None}, default None
        The triangles or the springs (as lines); None: the triangles if the run has any.
    data_format : {"XML", "Binary", "HDF"}, default "XML"
        Where the numbers go: inside the ``.xdmf`` as text (default, no further dependency),
        beside it as raw binary files, or in an HDF5 file beside it (needs h5py).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        No record, no cells of the kind asked for, or an unknown ``cells`` or ``data_format``.
    ImportError
        meshio (or, for "HDF", h5py) is not installed.
    """
    meshio = _meshio()
    if data_format not in ("XML", "Binary", "HDF"):
        raise ValueError(f"data_format must be 'XML', 'Binary' or 'HDF', got {data_format!r}")
    if cells not in (None, "faces", "springs"):
        raise ValueError(f"cells must be 'faces', 'springs' or None, got {cells!r}")
    if len(trajectory) == 0:
        raise ValueError("the trajectory has no records")
    if cells is None:
        cells = "faces" if len(trajectory.faces) else "springs"
    blocks = _cells(trajectory, cells == "faces", cells == "springs")
    target = Path(path)
    start = np.ascontiguousarray(trajectory.positions[0])
    with meshio.xdmf.TimeSeriesWriter(target, data_format=data_format) as writer:
        writer.write_points_cells(start, blocks)
        for record, time in enumerate(trajectory.times.tolist()):
            data = _point_data(trajectory, record)
            data["displacement"] = np.ascontiguousarray(trajectory.positions[record] - start)
            writer.write_data(time, point_data=data)
    return target
