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

Filled solids (the mesh-solid scene of the project's benchmark list, at about 1k, 10k and 50k nodes;
--quick: 1k): a generated blob (an icosphere with smooth bumps) and, when ``/work/models`` (or
``--models``) holds OBJ files, each closed model there (read with ``repair=True``; an open or flat one
is named and skipped), scaled so that its largest extent is 0.3 m, used with the file's y axis up,
resting on y = 0; rho = 1100 kg/m^3, E = 2 MPa, zeta = 0.1. Rows:

* conversion: ``mesh.tetrahedralize`` (built-in mesher, the interior nodes that bring the total to
  the size) and ``mesh.from_tetrahedra``, seconds, nodes, tetrahedra and springs;
* sag: a filled 0.3 m cube on frictionless ground, symplectic Euler at 0.9 x its critical step,
  settled for 0.5 s and averaged over the next 0.25 s (the top's mean height), against the column's
  rho g H^2 / (2E) (at 1k and 10k nodes: settling 50k takes minutes);
* stepping: symplectic Euler at 0.9 x the critical step, implicit Euler at 1 ms and 1/60 s,
  projective and xpbd at 1/60 s, each resting on the ground (its lowest node at y = 0, a plane with
  friction 0.5) and in free fall (no ground): Newton and CG iterations per step
  (``solver_stats`` after every step; implicit Euler only), wall seconds per simulated second, the
  ground's cost (ground / free fall), and the body's height at the end over its height at the start
  (on the ground). Each run takes one untimed step and then steps until --budget seconds have
  passed (at least one step), so large meshes take few steps: their figures are rough. The models are filled and stepped at
  10k nodes only (--quick: 1k; the built-in mesher keeps every surface vertex, so a model's surface
  may be most of its nodes; at least half as many nodes inside as on the surface); --quick steps the
  blob only.
"""
from __future__ import annotations

import ctypes
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

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


timed = harness.timed


# The mesh-solid scene: a body 0.3 m across of rho = 1100 kg/m^3, E = 2 MPa, zeta = 0.1.
SOLID_SIZE = 0.3  # m, the body's largest extent
DENSITY = 1100.0  # kg/m^3
YOUNGS_MODULUS = 2e6  # Pa
DAMPING_RATIO = 0.1
GRAVITY = 9.81  # m/s^2
MODELS = Path("/work/models")
CUBE_FACES = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                       [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
# (integrator, step in s; None: 0.9 x the system's critical step)
STEPPERS: tuple[tuple[str, float | None], ...] = (
    ("symplectic_euler", None), ("implicit_euler", 1e-3), ("implicit_euler", 1 / 60), ("projective", 1 / 60),
    ("xpbd", 1 / 60))


class Shape(NamedTuple):
    """A closed surface to fill: its name, vertices (m) resting on y = 0, faces, and where it came from."""

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    source: str


def on_the_ground(vertices: np.ndarray) -> np.ndarray:
    """The vertices scaled so that the largest extent is SOLID_SIZE, centred over the origin, lowest at y = 0."""
    scaled = vertices * (SOLID_SIZE / np.ptp(vertices, axis=0).max())
    low, high = scaled.min(axis=0), scaled.max(axis=0)
    return scaled - (0.5 * (low[0] + high[0]), low[1], 0.5 * (low[2] + high[2]))


def blob(subdivisions: int) -> Shape:
    """An icosphere with smooth bumps (a closed, star-shaped body), 0.3 m across."""
    from msprings import mesh

    sphere = mesh.icosphere(subdivisions)
    u = sphere.vertices
    radius = 1.0 + 0.1 * np.sin(3 * u[:, 0] + 1) * np.cos(2 * u[:, 1]) + 0.08 * np.sin(4 * u[:, 2] + 2 * u[:, 0])
    return Shape("blob", on_the_ground(u * radius[:, None] * (1.0, 0.8, 1.1)), sphere.faces,
                 f"icosphere({subdivisions}) with bumps")


def models(folder: Path) -> tuple[list[Shape], list[str]]:
    """The closed OBJ models in ``folder`` (repaired, scaled, y up), and a line for each one skipped."""
    from msprings import mesh

    shapes, skipped = [], []
    for path in sorted(folder.glob("*.obj")):
        loaded = mesh.load_obj(path, repair=True)
        extent = np.ptp(loaded.vertices, axis=0)
        size = " x ".join(f"{value:.3g}" for value in extent)
        if loaded.repair_report.boundary_edges or extent.min() <= 1e-9 * extent.max():
            why = "flat" if extent.min() <= 1e-9 * extent.max() else f"open ({loaded.repair_report.boundary_edges} boundary edges)"
            skipped.append(f"{path.stem}: {why}, cannot be filled; {loaded.n_vertices:,} vertices, {size} (x, y, z)")
            continue
        shapes.append(Shape(path.stem, on_the_ground(loaded.vertices), loaded.faces,
                            f"{loaded.n_vertices:,} vertices, {size} (x, y, z) in the file's units"))
    return shapes, skipped


def fill(shape: Shape, nodes: int) -> tuple[Any, Any, float, float]:
    """The shape filled to about ``nodes`` nodes in all (at least half as many inside as on the
    surface, which the built-in mesher keeps whole): the system, the TetMesh and the seconds of
    tetrahedralize and of from_tetrahedra.  ValueError when the mesher refuses the shape."""
    from msprings import mesh

    start = time.perf_counter()
    inside = max(nodes - len(shape.vertices), len(shape.vertices) // 2)
    filling = mesh.tetrahedralize(shape.vertices, shape.faces, nodes=inside)
    middle = time.perf_counter()
    system = mesh.from_tetrahedra(filling.nodes, filling.tets, surface=filling.surface, density=DENSITY,
                                  youngs_modulus=YOUNGS_MODULUS, damping_ratio=DAMPING_RATIO)
    return system, filling, middle - start, time.perf_counter() - middle


def block_sag(nodes: int) -> tuple[int, float, float]:
    """A filled cube of side SOLID_SIZE settled on frictionless ground: its nodes, the sag of its top (m)
    and the column's rho g H^2 / (2E) (m)."""
    from msprings import mesh

    height = SOLID_SIZE
    vertices = height * np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    filling = mesh.tetrahedralize(vertices, CUBE_FACES, nodes=nodes)
    system = mesh.from_tetrahedra(filling.nodes, filling.tets, surface=filling.surface, density=DENSITY,
                                  youngs_modulus=YOUNGS_MODULUS, damping_ratio=DAMPING_RATIO)
    system.add_plane(friction=0.0)
    top = np.flatnonzero(np.abs(system.x[:, 1] - height) < 1e-12)
    dt = 0.9 * system.critical_dt()
    system.step(dt, int(0.5 / dt))
    sags = []
    for _ in range(25):
        system.step(dt, max(1, int(0.01 / dt)))
        sags.append(height - system.x[top, 1].mean())
    return system.n_nodes, float(np.mean(sags)), DENSITY * GRAVITY * height ** 2 / (2 * YOUNGS_MODULUS)


class Stepping(NamedTuple):
    """One timed run: steps, wall seconds per simulated second, mean Newton and CG iterations per step
    (None unless implicit Euler), the body's height at the end over its height at the start, warnings."""

    steps: int
    wall_per_simulated: float
    newton: float | None
    cg: float | None
    height_kept: float
    warned: str


def stepping(system: Any, integrator: str, h: float, ground: bool, budget: float) -> Stepping:
    """A copy of ``system`` stepped with ``integrator`` at ``h`` on the ground or in free fall: one
    untimed step, then steps until ``budget`` seconds have passed (at least one)."""
    body = system.copy()
    body.integrator = integrator
    if ground:
        body.add_plane(friction=0.5)
    height = np.ptp(body.x[:, 1])
    implicit = integrator == "implicit_euler"
    newton, cg = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        body.step(h)
        steps, chunk, elapsed = 0, 1, 0.0
        while elapsed < budget:
            start = time.perf_counter()
            body.step(h, chunk)
            elapsed += time.perf_counter() - start
            steps += chunk
            if implicit:
                newton.append(body.solver_stats["newton_iterations"])
                cg.append(body.solver_stats["cg_iterations"])
            elif elapsed < 0.25 * budget:
                chunk *= 2
    names = sorted({type(warning.message).__name__ for warning in caught})
    if not np.isfinite(body.x).all():
        names.append("not finite")
    return Stepping(steps, elapsed / (steps * h), float(np.mean(newton)) if implicit else None,
                    float(np.mean(cg)) if implicit else None, float(np.ptp(body.x[:, 1]) / height), ", ".join(names))


def solid_rows(shape: Shape, system: Any, budget: float) -> list[tuple[object, ...]]:
    """The stepping table's rows of one filled shape: each integrator on the ground and in free fall."""
    rows = []
    for integrator, step in STEPPERS:
        h = 0.9 * system.critical_dt(integrator) if step is None else step
        free = stepping(system, integrator, h, False, budget)
        ground = stepping(system, integrator, h, True, budget)
        newton = "-" if ground.newton is None else f"{ground.newton:.1f} / {free.newton:.1f}"
        cg = "-" if ground.cg is None else f"{ground.cg:.0f} / {free.cg:.0f}"
        notes = "; ".join(f"{where}: {what}" for where, what in (("ground", ground.warned), ("free", free.warned))
                          if what)
        rows.append((shape.name, f"{system.n_nodes:,}", integrator, harness.duration(h), newton, cg,
                     f"{ground.wall_per_simulated:.3g}", f"{free.wall_per_simulated:.3g}",
                     f"{ground.wall_per_simulated / free.wall_per_simulated:.2f}",
                     f"{ground.height_kept:.3f} after {ground.steps * h:.3g} s",
                     f"{ground.steps} / {free.steps}", notes or "-"))
    return rows


def solids(quick: bool, budget: float, folder: Path) -> list[str]:
    """The report's section on filled solids."""
    sizes = (1000,) if quick else (1000, 10000, 50000)
    middle = sizes[len(sizes) // 2]
    subdivisions = {1000: 3, 10000: 4, 50000: 5}
    shapes, skipped = models(folder) if folder.is_dir() else ([], [f"{folder} not found: no models"])
    conversions, steps, sags = [], [], []
    for size in sizes:
        generated = blob(subdivisions[size])
        for shape in [generated, *shapes]:
            if shape is not generated and size != middle:
                continue
            try:
                system, filling, tetrahedralize, springs = fill(shape, size)
            except ValueError as error:
                conversions.append((shape.name, shape.source, f"{size:,}", "-", "-", "-", "-", "-",
                                    f"refused: {error}"))
                continue
            conversions.append((shape.name, shape.source, f"{size:,}", f"{system.n_nodes:,}", f"{len(filling.tets):,}",
                                f"{system.n_springs:,}", harness.duration(tetrahedralize), harness.duration(springs),
                                harness.duration(tetrahedralize + springs)))
            if shape is generated or not quick:
                steps += solid_rows(shape, system, budget)
            del system, filling
        if size > 10000:
            continue  # settling takes thousands of explicit steps: minutes at 50k nodes
        nodes, sag, column = block_sag(size)
        sags.append((f"{nodes:,}", f"{sag * 1e3:.4f}", f"{column * 1e3:.4f}", f"{(sag / column - 1) * 100:+.1f} %"))
    out = ["", "## Filled solids (mesh-solid)", "",
           f"rho = {DENSITY:g} kg/m^3, E = {YOUNGS_MODULUS / 1e6:g} MPa, zeta = {DAMPING_RATIO:g}; every shape scaled "
           f"to {SOLID_SIZE} m, the file's y axis up, resting on y = 0."]
    out += [f"- skipped: {line}" for line in skipped]
    out += ["", "Conversion (tetrahedralize, built-in mesher, + from_tetrahedra):", ""]
    out += harness.table(["shape", "source", ">size", ">nodes", ">tets", ">springs", ">tetrahedralize",
                          ">from_tetrahedra", ">total"], conversions)
    out += ["", f"Sag of a filled {SOLID_SIZE} m cube on frictionless ground (symplectic Euler, 0.9 x critical step):",
            ""]
    out += harness.table([">nodes", ">sag (mm)", ">rho g H^2 / (2E) (mm)", ">error"], sags)
    out += ["", f"Stepping, each run at least --budget = {budget:g} s of steps after one untimed step "
            "(ground: lowest node on a plane with friction 0.5; free: no ground). Newton and CG: mean per step, "
            "ground / free. Wall: wall seconds per simulated second. Height kept: on the ground, the body's "
            "height at the end of the timed steps over its height at the start.", ""]
    out += harness.table(["shape", ">nodes", "integrator", ">h", ">Newton", ">CG", ">wall, ground", ">wall, free",
                          ">ground / free", ">height kept", ">steps (ground / free)", "warnings"], steps)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    def options(parser: Any) -> None:
        parser.add_argument("--models", type=Path, default=MODELS, help=f"a folder of OBJ models (default {MODELS})")
        parser.add_argument("--budget", type=float, default=None,
                            help="seconds of stepping per solid run (default 1, 0.2 with --quick)")

    args = harness.parse_args(__doc__.splitlines()[0], argv, options, repeats=(3, 1))
    budget = args.budget if args.budget is not None else (0.2 if args.quick else 1.0)
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
    del system
    out += solids(args.quick, budget, args.models)
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
