"""ParaView export of a recorded run: a VTU file per record with a .pvd collection, and an XDMF
time series, read back with meshio and compared with the trajectory they came from.
"""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

from msprings import mesh

meshio = pytest.importorskip("meshio")


@pytest.fixture(scope="module")
def run():  # type: ignore[no-untyped-def]
    """A ball with a pinned vertex falling and swinging: 6 records with velocities."""
    sphere = mesh.icosphere(1, radius=0.3, center=(0.0, 1.0, 0.0))
    ball = mesh.from_mesh(sphere.vertices, sphere.faces, mass=0.01, k=20.0, stabilise="center", pinned=[0],
                          velocities=np.tile([0.5, 0.0, 0.0], (sphere.n_vertices, 1)))
    return ball.run(1e-3, 200, record_every=40, velocities=True)


def test_vtu_series_reads_back_as_the_trajectory(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    collection = mesh.export_vtu_series(tmp_path / "out", run, prefix="ball")
    assert collection == tmp_path / "out" / "ball.pvd"
    entries = ElementTree.parse(collection).getroot().find("Collection")
    assert entries is not None
    times = [float(entry.get("timestep")) for entry in entries]
    np.testing.assert_array_equal(times, run.times)
    assert len(run) == 6 and np.abs(run.positions[-1] - run.positions[0]).max() > 0.01
    for record, entry in enumerate(entries):
        frame = meshio.read(collection.parent / entry.get("file"))
        np.testing.assert_array_equal(frame.points, run.positions[record])
        np.testing.assert_array_equal(frame.point_data["velocity"], run.velocities[record])
        np.testing.assert_array_equal(frame.point_data["pinned"], run.pinned.astype(int))
        kinds = {block.type: block.data for block in frame.cells}
        np.testing.assert_array_equal(kinds["triangle"], run.faces)
        np.testing.assert_array_equal(kinds["line"], run.springs)


def test_xdmf_series_reads_back_as_the_trajectory(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    for cells, kind, expected in ((None, "triangle", run.faces), ("springs", "line", run.springs)):
        path = mesh.export_xdmf(tmp_path / f"run-{kind}.xdmf", run, cells=cells)
        with meshio.xdmf.TimeSeriesReader(path) as reader:
            points, blocks = reader.read_points_cells()
            assert [block.type for block in blocks] == [kind]
            np.testing.assert_array_equal(blocks[0].data, expected)
            assert reader.num_steps == len(run)
            for record in range(reader.num_steps):
                time, point_data, _ = reader.read_data(record)
                assert time == run.times[record]
                np.testing.assert_allclose(points + point_data["displacement"], run.positions[record],
                                           rtol=0.0, atol=1e-15)
                np.testing.assert_array_equal(point_data["velocity"], run.velocities[record])


def test_a_run_without_velocities_and_bad_options(tmp_path: Path) -> None:
    sphere = mesh.icosphere(0)
    plain = mesh.from_mesh(sphere.vertices, sphere.faces).run(1e-3, 10, record_every=5)
    frame = meshio.read(mesh.export_vtu_series(tmp_path, plain, springs=False).parent / "frame_0002.vtu")
    assert "velocity" not in frame.point_data and [block.type for block in frame.cells] == ["triangle"]
    with pytest.raises(ValueError, match="nothing to write"):
        mesh.export_vtu_series(tmp_path, plain, faces=False, springs=False)
    with pytest.raises(ValueError, match="data_format"):
        mesh.export_xdmf(tmp_path / "x.xdmf", plain, data_format="CSV")
    with pytest.raises(ValueError, match="cells"):
        mesh.export_xdmf(tmp_path / "x.xdmf", plain, cells="tetra")


def test_without_meshio_the_error_says_what_to_install(tmp_path: Path, run,  # type: ignore[no-untyped-def]
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "meshio", None)
    with pytest.raises(ImportError, match=r'pip install "msprings\[export\]"'):
        mesh.export_vtu_series(tmp_path, run)
    # meshio is only imported by the export itself.
    code = "import sys, msprings, msprings.mesh; print('meshio' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
