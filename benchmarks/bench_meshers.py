"""Mesher benchmark: the optional tetrahedral meshers (TetGen, fTetWild, Gmsh) filling surfaces.

For every installed mesher of ``msprings.mesh._meshers`` and every surface: the public test
models in /work/models (or --models DIR; each skipped if absent), loaded with ``repair=True``,
and a generated blob (an icosphere of 2,562 vertices with a smooth radial bump, always there),
at two target edge lengths, 1/20 and 1/40 of the bounding-box diagonal. Columns:

* wall time of ``external_mesher`` (its default: the mesher in a child process, which adds its
  start, about 0.2-0.5 s, to every row), nodes and tets;
* quality: the smallest dihedral angle over all tets and its 1st percentile over the tets (a
  regular tet has 70.5 degrees; slivers have angles near 0), and the median radius-edge ratio
  (circumradius / shortest edge; 0.61 for the regular tet);
* volume error: the tets' total volume against the surface's enclosed volume (left out for an
  open surface, whose enclosed volume means nothing);
* robustness, at the coarse size only: whether it succeeds on the file as read without repair
  ("raw"; "same" where the repair changed nothing), and on the repaired surface with 5 faces
  deleted ("hole"; for the blob, spot and fandisk only, to keep the run short: alligator,
  stanford-bunny and teapot are open surfaces already); and once per mesher two overlapping
  copies of a sphere (a self-intersecting input).

Every case is given 60 s (--timeout), after which its child process is killed. A cell says
``ok``, ``error`` (the mesher refused with ValueError), ``crash`` (its process died), or
``timeout``. fTetWild takes 10-60 s per model where the others take seconds, so by default it
meshes the models at the coarse size only (the blob at both): 5-7 minutes on 2 cores.
--full adds its fine size on every model (about 15 minutes, several cases hit the timeout);
--quick: the blob and two models, coarse size only (2 minutes).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

MODELS = Path("/work/models")
QUICK_MODELS = ("spot", "fandisk")
HOLE_SURFACES = ("blob", "spot", "fandisk")  # the damaged-copy check costs a run each; fTetWild's are slow
SIZES = (20, 40)  # edge length = bounding-box diagonal / size


def blob(mesh: Any) -> tuple[np.ndarray, np.ndarray]:
    """A unit icosphere (4 subdivisions) pushed out by a smooth bump: r = 1 + 0.3 sin(2x) cos(3y) z."""
    sphere = mesh.icosphere(4)
    x = sphere.vertices
    radius = 1.0 + 0.3 * np.sin(2 * x[:, 0]) * np.cos(3 * x[:, 1]) * x[:, 2]
    return x * radius[:, None], sphere.faces


def overlapping_spheres(mesh: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two unit icospheres (3 subdivisions) whose centres are 1 m apart: they interpenetrate."""
    sphere = mesh.icosphere(3)
    vertices = np.concatenate([sphere.vertices, sphere.vertices + [1.0, 0.0, 0.0]])
    return vertices, np.concatenate([sphere.faces, sphere.faces + sphere.n_vertices])


def diagonal(vertices: np.ndarray) -> float:
    return float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))


def quality(nodes: np.ndarray, tets: np.ndarray) -> tuple[float, float, float]:
    """Smallest dihedral angle (degrees) of all tets, 1st percentile of the tets' smallest
    dihedral angles (degrees) and the median radius-edge ratio."""
    p = nodes[tets]
    # outward normal of the face opposite each corner
    normals = []
    for corner in range(4):
        a, b, c = (p[:, k] for k in range(4) if k != corner)
        n = np.cross(b - a, c - a)
        inward = np.einsum("ij,ij->i", n, p[:, corner] - a) > 0
        n[inward] *= -1
        normals.append(n / np.linalg.norm(n, axis=1, keepdims=True))
    angles = []
    for i in range(4):
        for j in range(i + 1, 4):
            cosine = np.clip(np.einsum("ij,ij->i", normals[i], normals[j]), -1.0, 1.0)
            angles.append(180.0 - np.degrees(np.arccos(cosine)))
    smallest = np.min(angles, axis=0)
    a, b, c = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]
    denominator = 2.0 * np.einsum("ij,ij->i", a, np.cross(b, c))
    centre = ((a * a).sum(1)[:, None] * np.cross(b, c) + (b * b).sum(1)[:, None] * np.cross(c, a)
              + (c * c).sum(1)[:, None] * np.cross(a, b)) / denominator[:, None]
    edges = [p[:, j] - p[:, i] for i in range(4) for j in range(i + 1, 4)]
    shortest = np.min([np.linalg.norm(e, axis=1) for e in edges], axis=0)
    ratio = np.linalg.norm(centre, axis=1) / shortest
    return float(smallest.min()), float(np.percentile(smallest, 1)), float(np.median(ratio))


def attempt(meshers: Any, name: str, vertices: np.ndarray, faces: np.ndarray, length: float,
            timeout: float) -> tuple[str, float, Any]:
    """('ok' | 'error' | 'crash' | 'timeout' | 'missing', seconds, (nodes, tets) or the message)."""
    start = time.perf_counter()
    try:
        result = meshers.external_mesher(name, vertices, faces, length, timeout=timeout)
    except TimeoutError as error:
        return "timeout", time.perf_counter() - start, str(error)
    except ImportError as error:
        return "missing", time.perf_counter() - start, str(error)
    except ValueError as error:
        kind = "crash" if "crashed" in str(error) else "error"
        return kind, time.perf_counter() - start, str(error)
    return "ok", time.perf_counter() - start, result


def surfaces(mesh: Any, folder: Path, quick: bool) -> list[tuple[str, Any, Any]]:
    """(name, (vertices, faces) repaired, (vertices, faces) as read or None) per surface."""
    found = [("blob", blob(mesh), None)]
    for path in sorted(folder.glob("*.obj")) if folder.is_dir() else []:
        if quick and path.stem not in QUICK_MODELS:
            continue
        raw = mesh.load_obj(path)
        fixed = mesh.load_obj(path, repair=True)
        found.append((path.stem, (fixed.vertices, fixed.faces), (raw.vertices, raw.faces)))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--models", type=Path, default=MODELS, help="folder of OBJ files (default /work/models)")
        parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
        parser.add_argument("--full", action="store_true", help="fTetWild at the fine size on every model too")

    args = harness.parse_args(__doc__.splitlines()[0], argv, extra=extra, repeats=(1, 1))
    msprings = harness.import_msprings()
    from msprings import mesh
    from msprings.mesh import _meshers as meshers

    available = [name for name in meshers.MESHERS if meshers._backend(name)]
    missing = sorted(set(meshers.MESHERS) - set(available))
    sizes = SIZES[:1] if args.quick else SIZES
    started = time.perf_counter()
    rows = []
    failures = []
    for surface, (vertices, faces), raw in surfaces(mesh, args.models, args.quick):
        closed = len(mesh.boundary_edges(faces)) == 0
        enclosed = mesh.enclosed_volume(vertices, faces) if closed else math.nan
        for name in available:
            for size in sizes:
                if name == "ftetwild" and size != sizes[0] and surface != "blob" and not args.full:
                    continue
                length = diagonal(vertices) / size
                outcome, seconds, result = attempt(meshers, name, vertices, faces, length, args.timeout)
                cells: list[object] = [name, surface, f"{len(faces):,}", f"1/{size}", outcome]
                if outcome == "ok":
                    nodes, tets = result
                    smallest, first, ratio = quality(nodes, tets)
                    error = (meshers.tet_volumes(nodes, tets).sum() - enclosed) / enclosed
                    cells += [f"{seconds:.2f}", f"{len(nodes):,}", f"{len(tets):,}", f"{smallest:.2f}",
                              f"{first:.1f}", f"{ratio:.2f}", "-" if not closed else f"{error:+.1e}"]
                else:
                    failures.append(f"{name} on {surface} at 1/{size}: {result}")
                    cells += [f"{seconds:.2f}", "-", "-", "-", "-", "-", "-"]
                if size == sizes[0]:
                    if raw is None:
                        cells.append("-")
                    elif (raw[0].shape == vertices.shape and raw[1].shape == faces.shape
                          and np.array_equal(raw[0], vertices) and np.array_equal(raw[1], faces)):
                        cells.append("same")
                    else:
                        robust, _, said = attempt(meshers, name, *raw, length, args.timeout)
                        cells.append(robust)
                        if robust != "ok":
                            failures.append(f"{name} on {surface} as read: {said}")
                    if surface in HOLE_SURFACES:
                        holed = faces[np.setdiff1d(np.arange(len(faces)),
                                                   np.linspace(0, len(faces) - 1, 5).astype(int))]
                        robust, _, said = attempt(meshers, name, vertices, holed, length, args.timeout)
                        cells.append(robust)
                        if robust != "ok":
                            failures.append(f"{name} on {surface} with a hole: {said}")
                    else:
                        cells.append("-")
                else:
                    cells += ["", ""]
                rows.append(cells)
                print(" | ".join(str(cell) for cell in cells), file=sys.stderr, flush=True)
    overlap_rows = []
    for name in available:
        vertices, faces = overlapping_spheres(mesh)
        outcome, seconds, said = attempt(meshers, name, vertices, faces, diagonal(vertices) / 20, args.timeout)
        overlap_rows.append([name, outcome, f"{seconds:.2f}",
                             "-" if outcome == "ok" else str(said)[:160].replace("|", "/")])
    total = time.perf_counter() - started

    versions = []
    for name in available:
        module = meshers._backend(name)
        try:
            from importlib.metadata import version
            versions.append(f"{name}: {module} {version(module)}")
        except Exception:  # noqa: BLE001 (metadata is informative only)
            versions.append(f"{name}: {module}")
    lines = harness.header("Tetrahedral meshers", msprings, args.quick, [
        "Meshers: " + ("; ".join(versions) or "none installed") + (f"; not installed: {', '.join(missing)}"
                                                                    if missing else ""),
        f"Edge length = bounding-box diagonal / {' and '.join(map(str, sizes))}"
        + ("" if args.full or args.quick else " (fTetWild: the coarse size only, except on the blob; --full for all)")
        + f"; {args.timeout:g} s per case; whole run {total:.0f} s",
    ])
    lines += ["", *harness.table(
        ["mesher", "surface", ">faces", ">L", "result", ">time s", ">nodes", ">tets", ">min dihedral",
         ">1% dihedral", ">median R/l", ">volume error", "raw", "hole"], rows)]
    lines += ["", "Two overlapping spheres (a self-intersecting surface):", "",
              *harness.table(["mesher", "result", ">time s", "message"], overlap_rows)]
    if failures:
        lines += ["", "Messages of the failed cases:", "", *(f"- {text[:240]}" for text in failures)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
