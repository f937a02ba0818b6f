"""Mesh benchmark: repairing and converting a large triangle mesh, stepping it, and its memory.

The mesh is a latitude-longitude sphere of radius 1 m, 250 bands of 500 cells (249,000 triangles,
124,502 vertices; --quick: 50 x 100), with a few defects added for the repair row (1 % of its
faces repeated, 1 % of its vertices duplicated). Rows, each the median of --repeats runs:

* ``mesh.repair`` of the damaged mesh;
* ``mesh.from_mesh`` with springs along the edges only, with bending springs, with a centre node
  (``stabilise="center"``), with each vertex tied to its farthest (``stabilise="opposite"``), and as
  a solid of rubber (density, Young's modulus, damping ratio);
* 10 steps of symplectic Euler of the plain conversion, one thread.

Memory: ``System.nbytes`` (the arrays the system shares with Python) and, on glibc, the bytes the
process's allocator handed out for the system (mallinfo2), after construction and after its first
step. Checks: the repair gives back the undamaged mesh, and every vertex's stabilising partner of
"opposite" is its antipode (the sphere is centrally symmetric). Exit status 1 when a check fails.
"""
from __future__ import annotations

import ctypes
import platform
import statistics
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness


def lat_long_sphere(bands: int, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit sphere of ``bands`` latitude bands and ``cells`` cells around: two poles, quads
    between the rings cut into two triangles, fans at the poles; outward faces."""
    polar = np.linspace(0.0, np.pi, bands + 1)[1:-1]
    around = np.arange(cells) * 2.0 * np.pi / cells
    theta, phi = np.meshgrid(polar, around, indexing="ij")
    ring = np.stack([np.sin(theta) * np.cos(phi), np.cos(theta), np.sin(theta) * np.sin(phi)], axis=-1)
    vertices = np.concatenate([[[0.0, 1.0, 0.0]], ring.reshape(-1, 3), [[0.0, -1.0, 0.0]]])
    index = 1 + np.arange((bands - 1) * cells).reshape(bands - 1, cells)
    upper, lower = index[:-1], index[1:]
    upper_next, lower_next = np.roll(upper, -1, axis=1), np.roll(lower, -1, axis=1)
    south = len(vertices) - 1
    faces = np.concatenate([
        np.stack([upper, lower_next, lower], axis=-1).reshape(-1, 3),
        np.stack([upper, upper_next, lower_next], axis=-1).reshape(-1, 3),
        np.stack([np.zeros(cells, dtype=np.int64), np.roll(index[0], -1), index[0]], axis=-1),
        np.stack([np.full(cells, south), index[-1], np.roll(index[-1], -1)], axis=-1),
    ])
    return vertices, faces


def damaged(vertices: np.ndarray, faces: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The mesh with 1 % of its vertices duplicated (faces moved onto the copies) and 1 % of its
    faces repeated at the end."""
    n = len(vertices)
    copies = rng.choice(n, size=n // 100, replace=False)
    copy_of = np.arange(n)
    copy_of[copies] = n + np.arange(len(copies))
    moved = rng.random(len(faces)) < 0.5
    broken = faces.copy()
    broken[moved] = copy_of[faces[moved]]
    repeated = faces[rng.choice(len(faces), size=len(faces) // 100, replace=False)]
    return np.concatenate([vertices, vertices[copies]]), np.concatenate([broken, repeated])


def allocated() -> Callable[[], int] | None:
    """Bytes in use by glibc's malloc (mallinfo2: small blocks plus mmapped ones), or None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = Info

    def in_use() -> int:
        info = libc.mallinfo2()
        return int(info.uordblks + info.hblkhd)

    return in_use


def timed(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median seconds of ``repeats`` calls, and the last result."""
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def main(argv: Sequence[str] | None = None) -> int:
    args = harness.parse_args(__doc__.splitlines()[0], argv, repeats=(3, 1))
    msprings = harness.import_msprings()
    from msprings import mesh

    bands, cells = (50, 100) if args.quick else (250, 500)
    vertices, faces = lat_long_sphere(bands, cells)
    broken_vertices, broken_faces = damaged(vertices, faces, np.random.default_rng(1))
    rows = []
    passed = True

    seconds, (fixed_vertices, fixed_faces, report) = timed(lambda: mesh.repair(broken_vertices, broken_faces),
                                                          args.repeats)
    sound = np.array_equal(fixed_vertices, vertices) and np.array_equal(fixed_faces, faces)
    passed &= sound
    rows.append(("repair (1 % vertices duplicated, 1 % faces repeated)", harness.duration(seconds),
                 f"{report.merged_vertices:,} merged, {report.repeated_faces:,} faces dropped",
                 harness.verdict(sound)))
    conversions: list[tuple[str, dict[str, Any]]] = [
        ("from_mesh: edges", {}),
        ("from_mesh: edges + bending", {"bend_k": 1.0}),
        ("from_mesh: stabilise='center'", {"stabilise": "center"}),
        ("from_mesh: stabilise='opposite'", {"stabilise": "opposite"}),
        ("from_mesh: rubber solid (density, E, zeta)",
         {"stabilise": "center", "density": 1100.0, "youngs_modulus": 5e6, "damping_ratio": 0.05}),
    ]
    plain = None
    for name, options in conversions:
        seconds, system = timed(lambda: mesh.from_mesh(vertices, faces, **options), args.repeats)
        check = "-"
        if options.get("stabilise") == "opposite":
            pairs = system.springs[-(len(vertices) // 2):]
            antipodal = np.abs(vertices[pairs[:, 0]] + vertices[pairs[:, 1]]).max() < 1e-12
            passed &= bool(antipodal)
            check = harness.verdict(bool(antipodal))
        rows.append((name, harness.duration(seconds), f"{system.n_nodes:,} nodes, {system.n_springs:,} springs",
                     check))
        if not options:
            plain = system
        del system
    assert plain is not None
    plain.threads = 1
    seconds, _ = timed(lambda: plain.step(1e-5, 10), args.repeats)
    rows.append(("10 steps, symplectic Euler, 1 thread", harness.duration(seconds), "", "-"))
    del plain

    memory = []
    in_use = allocated()
    before = in_use() if in_use else 0
    system = mesh.from_mesh(vertices, faces)
    built = in_use() - before if in_use else None
    system.step(1e-5, 1)
    stepped = in_use() - before if in_use else None
    memory.append(("System.nbytes", f"{system.nbytes / 1e6:.1f} MB",
                   f"{system.nbytes / system.n_nodes:.0f} B per node"))
    for label, value in (("allocated, after construction", built), ("allocated, after the first step", stepped)):
        memory.append((label, "-" if value is None else f"{value / 1e6:.1f} MB",
                       "-" if value is None else f"{value / system.n_nodes:.0f} B per node"))

    out = harness.header("Mesh repair, conversion and memory", msprings, args.quick, [
        f"latitude-longitude sphere: {len(faces):,} triangles, {len(vertices):,} vertices; "
        f"median of {args.repeats} runs per row"])
    out += [""] + harness.table(["row", ">time", "result", "check"], rows)
    out += ["", f"Memory of the plain conversion ({system.n_nodes:,} nodes, {system.n_springs:,} springs, "
            f"{len(faces):,} faces):", ""]
    out += harness.table(["what", ">bytes", ">per node"], memory)
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
