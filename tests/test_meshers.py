"""The third-party tetrahedral meshers behind ``mesh._meshers.external_mesher``: each fills an
icosphere and a cube with positively oriented tets of about the requested size whose volumes
add up to the enclosed one, reports a missing package with its pip command, and turns a failure
on bad input (an open or self-intersecting surface, garbage arrays) into ValueError.

A mesher's tests are skipped when its package is not installed.
"""
from __future__ import annotations

import signal
import subprocess
import sys

from pathlib import Path

import numpy as np
import pytest

from msprings import mesh
from msprings.mesh import _meshers
from msprings.mesh._meshers import MESHERS, external_mesher, tet_volumes

PACKAGES = {"tetgen": "tetgen", "ftetwild": "wildmeshing", "gmsh": "gmsh"}
ALTERNATIVES = {"ftetwild": ["pytetwild"]}


def icosphere() -> tuple[np.ndarray, np.ndarray, float]:
    """A sphere of radius 5 cm (642 vertices) and the median length (m) of its edges."""
    sphere = mesh.icosphere(3, radius=0.05, center=(0.01, -0.02, 0.03))
    edges = mesh.unique_edges(sphere.faces)
    length = float(np.median(np.linalg.norm(sphere.vertices[edges[:, 0]] - sphere.vertices[edges[:, 1]], axis=1)))
    return sphere.vertices, sphere.faces, length


def cube() -> tuple[np.ndarray, np.ndarray, float]:
    """A cube of side 10 cm as 12 outward triangles and a target edge of a quarter side (m)."""
    side = 0.1
    vertices = side * np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=np.float64)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], dtype=np.int64)
    return vertices, faces, side / 4


SHAPES = {"icosphere": icosphere, "cube": cube}


def needs(name: str) -> None:
    if _meshers._backend(name) is None:
        pytest.skip(f"no package provides mesher {name!r}")


def surface_area(vertices: np.ndarray, faces: np.ndarray) -> float:
    a, b, c = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    return float(np.linalg.norm(np.cross(b - a, c - a), axis=1).sum() / 2)


def volume_tolerance(name: str, vertices: np.ndarray, faces: np.ndarray) -> float:
    """Allowed relative volume error: round-off for the meshers that keep the polyhedron; for
    fTetWild its envelope (a surface within epsilon * diagonal of the input) times the area."""
    if name != "ftetwild":
        return 1e-9
    diagonal = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
    return _meshers.FTETWILD_EPSILON * diagonal * surface_area(vertices, faces) / mesh.enclosed_volume(vertices, faces)


@pytest.fixture(scope="module")
def filled() -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Each installed mesher's tets for each shape, computed once."""
    return {}


def fill(filled: dict, name: str, shape: str) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    needs(name)
    if (name, shape) not in filled:
        vertices, faces, length = SHAPES[shape]()
        filled[name, shape] = external_mesher(name, vertices, faces, length)
    return filled[name, shape]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", MESHERS)
def test_tets_fill_the_enclosed_volume(filled, name: str, shape: str) -> None:  # type: ignore[no-untyped-def]
    vertices, faces, _ = SHAPES[shape]()
    nodes, tets = fill(filled, name, shape)
    enclosed = mesh.enclosed_volume(vertices, faces)
    assert tet_volumes(nodes, tets).sum() == pytest.approx(enclosed, rel=volume_tolerance(name, vertices, faces))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", MESHERS)
def test_output_follows_the_contract(filled, name: str, shape: str) -> None:  # type: ignore[no-untyped-def]
    nodes, tets = fill(filled, name, shape)
    assert nodes.dtype == np.float64 and nodes.ndim == 2 and nodes.shape[1] == 3
    assert tets.dtype == np.int64 and tets.ndim == 2 and tets.shape[1] == 4
    assert np.all(tet_volumes(nodes, tets) > 0)
    assert np.array_equal(np.unique(tets), np.arange(len(nodes)))  # every node used, indices in range
    assert len(np.unique(np.sort(tets, axis=1), axis=0)) == len(tets)  # no tet twice


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", MESHERS)
def test_edges_are_about_the_requested_length(filled, name: str, shape: str) -> None:  # type: ignore[no-untyped-def]
    _, _, length = SHAPES[shape]()
    nodes, tets = fill(filled, name, shape)
    pairs = np.unique(np.sort(tets[:, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]].reshape(-1, 2), axis=1), axis=0)
    median = float(np.median(np.linalg.norm(nodes[pairs[:, 0]] - nodes[pairs[:, 1]], axis=1)))
    assert length / 2 <= median <= 2 * length


@pytest.mark.parametrize("name", ["tetgen", "gmsh"])
def test_surface_vertices_keep_their_indices(filled, name: str) -> None:  # type: ignore[no-untyped-def]
    vertices, _, _ = icosphere()
    nodes, _ = fill(filled, name, "icosphere")
    assert np.array_equal(nodes[:len(vertices)], vertices)


@pytest.mark.parametrize("name", ["tetgen", "gmsh"])
def test_in_process_run_gives_the_same_mesh(filled, name: str) -> None:  # type: ignore[no-untyped-def]
    vertices, faces, length = cube()
    nodes, tets = fill(filled, name, "cube")
    here = external_mesher(name, vertices, faces, length, isolate=False)
    assert np.array_equal(here[0], nodes) and np.array_equal(here[1], tets)


def test_gmsh_leaves_the_callers_session_as_it_was() -> None:
    needs("gmsh")
    import gmsh

    vertices, faces, length = cube()
    gmsh.initialize(argv=[], readConfigFiles=False, interruptible=False)
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("mine")
        gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
        gmsh.model.occ.synchronize()
        gmsh.option.setNumber("Mesh.MeshSizeMax", 0.5)
        nodes, tets = external_mesher("gmsh", vertices, faces, length, isolate=False)
        assert tet_volumes(nodes, tets).sum() == pytest.approx(1e-3, rel=1e-9)
        assert gmsh.isInitialized() and gmsh.model.getCurrent() == "mine"
        assert gmsh.option.getNumber("Mesh.MeshSizeMax") == 0.5
        assert len(gmsh.model.getEntities(3)) == 1
    finally:
        gmsh.finalize()
        # this test's own gmsh.initialize set SIGPIPE to the default, as it does for any caller
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def sigpipe_ignored() -> bool:
    """Whether this process ignores SIGPIPE, as the kernel has it (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGPIPE - 1) & 1)
    raise AssertionError("no SigIgn line")


def test_gmsh_in_process_from_threads_takes_turns() -> None:
    needs("gmsh")
    from concurrent.futures import ThreadPoolExecutor

    vertices, faces, length = cube()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: external_mesher("gmsh", vertices, faces, length, isolate=False), range(4)))
    for nodes, tets in results:
        assert np.array_equal(nodes, results[0][0]) and np.array_equal(tets, results[0][1])
    if sys.platform.startswith("linux"):
        # Gmsh's first initialisation in a process sets SIGPIPE to the default (the process would
        # end at a write to a closed pipe); the adapter puts back Python's "ignore", from a
        # worker thread too: checked in a fresh process, where that first initialisation happens
        script = f"""
import sys, threading
sys.path[:0] = {[str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]!r}
from test_meshers import cube, sigpipe_ignored
from msprings.mesh._meshers import external_mesher
vertices, faces, length = cube()
worker = threading.Thread(target=lambda: external_mesher("gmsh", vertices, faces, length, isolate=False))
worker.start()
worker.join()
print(sigpipe_ignored())
"""
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == "True"


@pytest.mark.parametrize("name", MESHERS)
def test_missing_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    for module in [PACKAGES[name], *ALTERNATIVES.get(name, [])]:
        monkeypatch.setitem(sys.modules, module, None)
    vertices, faces, length = cube()
    for isolate in (True, False):
        with pytest.raises(ImportError, match=f"pip install {PACKAGES[name]}"):
            external_mesher(name, vertices, faces, length, isolate=isolate)


def test_ftetwild_through_pytetwild_when_wildmeshing_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pytetwild")
    monkeypatch.setitem(sys.modules, "wildmeshing", None)
    monkeypatch.chdir(tmp_path)  # fTetWild leaves __tracked_surface.stl in the current directory
    vertices, faces, length = cube()
    nodes, tets = external_mesher("ftetwild", vertices, faces, length, isolate=False)
    assert np.all(tet_volumes(nodes, tets) > 0)
    assert tet_volumes(nodes, tets).sum() == pytest.approx(mesh.enclosed_volume(vertices, faces),
                                                           rel=volume_tolerance("ftetwild", vertices, faces))


@pytest.mark.parametrize("name", ["tetgen", "gmsh"])
def test_open_surface_is_refused(name: str) -> None:
    needs(name)
    vertices, faces, length = icosphere()
    with pytest.raises(ValueError, match=name):
        external_mesher(name, vertices, faces[5:], length)


def test_ftetwild_closes_a_hole() -> None:
    needs("ftetwild")
    vertices, faces, length = icosphere()
    nodes, tets = external_mesher("ftetwild", vertices, faces[5:], 2 * length)
    assert tet_volumes(nodes, tets).sum() == pytest.approx(mesh.enclosed_volume(vertices, faces), rel=0.02)


@pytest.mark.parametrize("name", ["tetgen", "gmsh"])
def test_overlapping_spheres_are_refused(name: str) -> None:
    """Two interpenetrating copies of a sphere: TetGen may abort its process (corrupted heap),
    Gmsh reports intersecting facets; either way the caller gets ValueError."""
    needs(name)
    vertices, faces, length = icosphere()
    two = np.concatenate([vertices, vertices + [0.03, 0.0, 0.0]]), np.concatenate([faces, faces + len(vertices)])
    with pytest.raises(ValueError, match=name):
        external_mesher(name, *two, length)


@pytest.mark.parametrize("name", ["tetgen", "gmsh"])
def test_volume_check_holds_far_from_the_origin(name: str) -> None:
    """A 10 cm cube 10 km away: the enclosed volume is computed about the centre, so the
    check on the filled volume does not lose its digits to cancellation."""
    needs(name)
    vertices, faces, length = cube()
    nodes, tets = external_mesher(name, vertices + [1e4, -2e4, 3e4], faces, length)
    assert tet_volumes(nodes, tets).sum() == pytest.approx(1e-3, rel=1e-6)


@pytest.mark.parametrize("timeout", [0, -1.0, True, "60"])
def test_bad_timeout_is_refused(timeout: object) -> None:
    vertices, faces, length = cube()
    with pytest.raises(ValueError, match="timeout"):
        external_mesher("gmsh", vertices, faces, length, timeout=timeout)  # type: ignore[arg-type]


def test_timeout_kills_the_mesher() -> None:
    needs("ftetwild")
    vertices, faces, length = icosphere()
    with pytest.raises(TimeoutError, match="ftetwild"):
        external_mesher("ftetwild", vertices, faces, length / 4, timeout=0.05)


def garbage() -> list[tuple[str, dict[str, object], type[Exception]]]:
    vertices, faces, length = cube()
    nan = vertices.copy()
    nan[3, 1] = np.nan
    good = {"vertices": vertices, "faces": faces, "edge_length": length}
    return [
        ("vertices", {**good, "vertices": nan}, ValueError),
        ("vertices", {**good, "vertices": vertices[:, :2]}, ValueError),
        ("vertices", {**good, "vertices": [["a", "b", "c"]] * 8}, ValueError),
        ("vertices", {**good, "vertices": vertices[:3], "faces": [[0, 1, 2]] * 4}, ValueError),
        ("faces", {**good, "faces": faces + 1}, ValueError),
        ("faces", {**good, "faces": -faces}, ValueError),
        ("faces", {**good, "faces": faces.astype(np.float64)}, ValueError),
        ("faces", {**good, "faces": faces[:, :2]}, ValueError),
        ("faces", {**good, "faces": faces[:3]}, ValueError),
        ("edge_length", {**good, "edge_length": 0.0}, ValueError),
        ("edge_length", {**good, "edge_length": -1.0}, ValueError),
        ("edge_length", {**good, "edge_length": float("nan")}, ValueError),
        ("edge_length", {**good, "edge_length": 10.0}, ValueError),
        ("edge_length", {**good, "edge_length": "0.1"}, TypeError),
        ("edge_length", {**good, "edge_length": True}, TypeError),
    ]


@pytest.mark.parametrize("name", MESHERS)
@pytest.mark.parametrize("argument, arguments, error", garbage())
def test_garbage_input_is_refused_naming_the_argument(name: str, argument: str, arguments: dict[str, object],
                                                      error: type[Exception]) -> None:
    with pytest.raises(error, match=argument):
        external_mesher(name, **arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["delaunay", "TetGen", 3])
def test_unknown_mesher_is_refused(name: object) -> None:
    vertices, faces, length = cube()
    with pytest.raises((ValueError, TypeError), match="mesher"):
        external_mesher(name, vertices, faces, length)  # type: ignore[arg-type]


def test_import_loads_no_mesher() -> None:
    code = ("import sys, msprings.mesh._meshers; "
            "print(sorted(m for m in ('tetgen', 'wildmeshing', 'gmsh', 'pytetwild', 'pyvista', 'vtk') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
