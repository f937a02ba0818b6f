"""Large steps: msprings' implicit Euler, projective and xpbd solvers beside SciPy and Newton.

Scenes: stiff-cloth-32, stiff-cloth-64 (the cloth-N layout, k = 1e5 N/m, c = 0, 1 kg nodes, two corners
pinned) and the stiff chain, all at h = 1/60 s.  Every solver runs one frame (one 1/60 s step of the
scene; an xpbd row with substeps takes them all inside the frame) per call, on one thread.

The references are written here, one per solver family, and each is held to msprings first:

- SciPy backward Euler (:class:`harness.ScipyNewton`: Newton's method, one ``spsolve`` of the tangent
  system per iteration, msprings' stopping rule).  At ``newton_tol`` = 1e-9 it is also the tightly
  converged backward-Euler reference every row's distance is measured against.
- SciPy Liu et al. 2013 local/global (:class:`ScipyLiu`, the matrix prefactored with
  ``scipy.sparse.linalg.factorized``), the formulation msprings' "projective" solver implements, with the
  same iteration count; it must agree with msprings to 1e-9 m.
- Newton's own hanging-cloth example (XPBD, 10 substeps x 10 iterations per frame, device "cpu") beside
  msprings' xpbd on the same particles, springs and pins.

Exit status 1 when a reference disagrees with msprings beyond its tolerance or a run stops being finite
or bounded.  Rows of solvers this build does not have are reported as "not built yet".

Run as a script, the suite gives NumPy's BLAS one thread (OPENBLAS_NUM_THREADS, when not set): the
SciPy references then run on one thread as msprings' rows do, and idle BLAS threads spinning beside
the timed steps no longer take a core from the rows that run on all cores.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when NumPy loads its BLAS, below

import dataclasses
import math
import sys
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1.0 / 60.0  # s, one frame
FRAMES, QUICK_FRAMES = 60, 10  # distance to the reference after this many frames (and after one)
ENERGY_FRAMES, QUICK_ENERGY_FRAMES = 120, 10  # energy after 2 s (--quick: 1/6 s)
TIGHT_TOL = 1e-9  # newton_tol (and cg_tol) of the tight rows and the reference; near 1e-10 round-off stalls Newton
MAX_NEWTON = 50
TIGHT_CG_MAX_ITER = 20_000
NEWTON_AGREEMENT = 1e-8  # m, SciPy Newton beside msprings' implicit Euler at the same tolerance, after one frame
LIU_AGREEMENT = 1e-9  # m, SciPy Liu beside msprings' projective, same iterations
BOUND = 1.5  # a bounded run keeps every node within this many times the scene's initial extent of node 0
SECONDS, QUICK_SECONDS = 1.0, 0.1  # a timed run's length


@dataclasses.dataclass(frozen=True)
class Solver:
    """A msprings solver setting: integrator, options set on the system, substeps per frame."""

    name: str
    integrator: str
    options: tuple[tuple[str, float], ...] = ()
    substeps: int = 1


SOLVERS = (
    Solver("implicit Euler, defaults", "implicit_euler"),
    Solver(f"implicit Euler, tight (newton_tol = cg_tol = {TIGHT_TOL:g})", "implicit_euler",
           (("newton_tol", TIGHT_TOL), ("cg_tol", TIGHT_TOL), ("cg_max_iter", TIGHT_CG_MAX_ITER))),
    Solver("projective, 10 iterations", "projective", (("iterations", 10),)),
    Solver("projective, 20 iterations", "projective", (("iterations", 20),)),
    Solver("xpbd, 1 iteration x 10 substeps", "xpbd", (("iterations", 1),), 10),
    Solver("xpbd, 10 iterations", "xpbd", (("iterations", 10),)),
)


class ScipyLiu:
    """Liu et al. 2013 local/global steps for springs, prefactored with ``scipy.sparse.linalg.factorized``.

    Per step of h (s): y = x + h v + h^2 M^-1 f_ext, with f_ext every force but the springs' elastic
    ones at the start of the step (gravity, drag, the dampers); start from x = y; each iteration projects
    every spring s = (i, j) to its rest length, d_s = L_s (x_i - x_j) / |x_i - x_j| (0 for a spring
    without length), then solves (M/h^2 + sum_s k_s A_s^T A_s) x = M y / h^2 + sum_s k_s A_s^T d_s with
    A_s x = x_i - x_j over the free nodes (pinned nodes move to x_p + h v_p; their terms go to the right
    side); one factorisation, the three coordinates as right-hand sides.  Then v' = (x' - x) / h.
    Called as ``step(state, n)``: n steps in place."""

    def __init__(self, net: harness.Network, h: float, iterations: int) -> None:
        import scipy.sparse
        import scipy.sparse.linalg

        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        self.h, self.iterations, self.rest = h, iterations, net.rest
        self.first, self.second = net.springs[:, 0].astype(np.intp), net.springs[:, 1].astype(np.intp)
        self.free = ~net.pinned
        springless = dataclasses.replace(net, k=np.zeros(net.n_springs))
        self.external = harness.NumpyStep(springless, h).forces
        self.step_mass = h * h * net.inv_mass[:, None]  # h^2 / m, 0 when pinned
        nodes, index = net.n_nodes, np.arange(net.n_springs)
        # G = sum_s k_s A_s^T as an (nnode, nspring) matrix: +k_s at row i, -k_s at row j
        spread = scipy.sparse.csr_matrix((np.concatenate((net.k, -net.k)),
                                          (np.concatenate((self.first, self.second)), np.concatenate((index, index)))),
                                         shape=(nodes, net.n_springs))
        stiffness = self._laplacian(net)
        self.inertia = (net.mass[self.free] / (h * h))[:, None]  # M / h^2 on the free nodes
        matrix = scipy.sparse.diags(self.inertia[:, 0]) + stiffness[self.free][:, self.free]
        self.coupling = stiffness[self.free][:, ~self.free].tocsr()  # free rows, pinned columns
        self.spread = spread[self.free].tocsr()
        self.solve = scipy.sparse.linalg.factorized(matrix.tocsc())

    @staticmethod
    def _laplacian(net: harness.Network) -> Any:
        """sum_s k_s A_s^T A_s as an (nnode, nnode) sparse matrix."""
        import scipy.sparse

        i, j, k = net.springs[:, 0], net.springs[:, 1], net.k
        return scipy.sparse.csr_matrix((np.concatenate((k, k, -k, -k)),
                                        (np.concatenate((i, j, i, j)), np.concatenate((i, j, j, i)))),
                                       shape=(net.n_nodes, net.n_nodes))

    def __call__(self, state: harness.State, steps: int) -> None:
        free, h = self.free, self.h
        for _ in range(steps):
            x, v = state.x, state.v
            y = x + h * v + self.step_mass * self.external(x, v)
            x_new = y.copy()
            right = self.inertia * y[free] - self.coupling @ x_new[~free]
            for _ in range(self.iterations):
                d = x_new.take(self.first, axis=0) - x_new.take(self.second, axis=0)
                length2 = np.einsum("ij,ij->i", d, d)
                scale = np.divide(self.rest, np.sqrt(length2), out=np.zeros_like(length2),
                                  where=length2 > harness.MIN_LENGTH_SQUARED)
                x_new[free] = self.solve(right + self.spread @ (d * scale[:, None]))
            v_new = v.copy()
            v_new[free] = (x_new[free] - x[free]) / h
            state.x, state.v = x_new, v_new


# ---------------------------------------------------------------------------------------------
# rows


def energy(net: harness.Network, x: np.ndarray, v: np.ndarray) -> float:
    """Kinetic + spring + gravitational energy (J) of a state; gravity's is -m g.x, zero at the origin,
    both of the free nodes only (as msprings' ledger)."""
    free = ~net.pinned
    kinetic = 0.5 * float(np.sum(net.mass[free] * np.einsum("ij,ij->i", v[free], v[free])))
    gravity = -float(np.sum(net.mass[free] * (x[free] @ np.asarray(net.gravity))))
    return kinetic + 0.5 * float(np.sum(net.k * (lengths(net, x) - net.rest) ** 2)) + gravity


def lengths(net: harness.Network, x: np.ndarray) -> np.ndarray:
    """(nspring,) spring lengths (m) at positions x."""
    return np.linalg.norm(x[net.springs[:, 1]] - x[net.springs[:, 0]], axis=1)


@dataclasses.dataclass
class Row:
    """A row of a scene's table: what it runs, and what its recorded run showed."""

    contender: harness.Contender
    work: Callable[[Any], tuple[float, float]]  # state -> (iterations, inner iterations) of its latest frame
    built: bool = True
    after: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)  # frame -> positions
    iterations: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    strain: float = 0.0
    energy: float = float("nan")  # J, after the recorded run
    sound: bool = True

    @property
    def name(self) -> str:
        """The row's name."""
        return self.contender.name


def msprings_row(msprings: Any, net: harness.Network, solver: Solver, threads: int = 1,
                 suffix: str = "") -> Row:
    """A msprings row: ``solver`` on ``threads`` threads (0: all cores), one frame per call."""
    def fresh() -> Any:
        system = harness.build_system(msprings, net, integrator=solver.integrator, threads=threads)
        for option, value in solver.options:
            setattr(system, option, value)
        return system

    def run(system: Any, n: int) -> None:
        system.step(H / solver.substeps, n * solver.substeps)

    def work(system: Any) -> tuple[float, float]:
        if solver.integrator == "implicit_euler":
            return system.solver_stats["newton_iterations"], system.solver_stats["cg_iterations"]
        return float(system.iterations * solver.substeps), 0.0

    built = solver.integrator in msprings.INTEGRATORS
    return Row(harness.Contender(f"msprings {solver.name}{suffix}", fresh, run), work, built)


def scipy_newton_row(net: harness.Network, tol: float, name: str) -> Row:
    """A SciPy backward-Euler row at ``newton_tol`` = tol."""
    newton = harness.ScipyNewton(net, H, tol, MAX_NEWTON)
    return Row(harness.Contender(name, lambda: harness.State.of(net), newton),
               lambda state: (float(newton.solves[-1]), 0.0))


def scipy_liu_row(net: harness.Network, iterations: int) -> Row:
    """A SciPy Liu 2013 row with ``iterations`` local/global iterations per step."""
    liu = ScipyLiu(net, H, iterations)
    return Row(harness.Contender(f"SciPy Liu 2013, {iterations} iterations", lambda: harness.State.of(net), liu),
               lambda state: (float(iterations), 0.0))


def record(row: Row, net: harness.Network, frames: int, energy_frames: int) -> None:
    """Runs a fresh state frame by frame for ``energy_frames`` frames: positions after frame 1 and
    ``frames``, work per frame, the largest strain, the energy at the end, and whether every frame
    stayed finite and every node within BOUND times the initial extent of node 0."""
    state = row.contender.fresh()
    origin = net.positions[0]
    reach = BOUND * float(np.linalg.norm(net.positions - origin, axis=1).max())
    for frame in range(1, energy_frames + 1):
        try:
            row.contender.run(state, 1)
        except FloatingPointError:  # msprings.DivergenceError
            row.sound = False
            return
        x, v = np.array(state.x, dtype=float), np.array(state.v, dtype=float)
        row.iterations.append(row.work(state))
        if not (np.isfinite(x).all() and np.isfinite(v).all()
                and np.linalg.norm(x - origin, axis=1).max() <= reach):
            row.sound = False
            return
        row.strain = max(row.strain, float(np.abs(lengths(net, x) / net.rest - 1.0).max()))
        if frame in (1, frames):
            row.after[frame] = x
    row.energy = energy(net, x, v)


# ---------------------------------------------------------------------------------------------
# one scene


def pairs(default_tol: float) -> list[tuple[str, str, float, bool]]:
    """(msprings row, SciPy row, tolerance (m), whether the tolerance holds after ``frames`` frames too
    rather than after one) for every reference held to a msprings solver.  Backward Euler's two solutions
    agree to the tolerance's scale after a frame and may part as the cloth swings; the same local/global
    iterations must stay together."""
    return [(f"msprings {SOLVERS[0].name}", f"SciPy Newton, newton_tol = {default_tol:g}", NEWTON_AGREEMENT, False),
            (f"msprings {SOLVERS[1].name}", f"SciPy Newton, newton_tol = {TIGHT_TOL:g} (the reference)",
             NEWTON_AGREEMENT, False),
            (f"msprings {SOLVERS[2].name}", "SciPy Liu 2013, 10 iterations", LIU_AGREEMENT, True),
            (f"msprings {SOLVERS[3].name}", "SciPy Liu 2013, 20 iterations", LIU_AGREEMENT, True)]


def run_scene(msprings: Any, net: harness.Network, args: Any, frames: int,
              energy_frames: int) -> tuple[list[str], dict[str, Row], float, bool]:
    """Records and times every row on one scene; returns its report lines, its rows by name, msprings'
    default newton_tol and whether every check passed."""
    rows = [msprings_row(msprings, net, solver) for solver in SOLVERS]
    default_tol = float(harness.build_system(msprings, net, integrator="implicit_euler").newton_tol)
    rows += [scipy_newton_row(net, default_tol, f"SciPy Newton, newton_tol = {default_tol:g}"),
             scipy_newton_row(net, TIGHT_TOL, f"SciPy Newton, newton_tol = {TIGHT_TOL:g} (the reference)"),
             scipy_liu_row(net, 10), scipy_liu_row(net, 20)]
    by_name = {row.name: row for row in rows}
    reference = rows[len(SOLVERS) + 1]
    built = [row for row in rows if row.built]
    with warnings.catch_warnings():  # a CG solve at its cap shows in the iteration counts
        warnings.simplefilter("ignore", getattr(msprings, "SolverWarning", RuntimeWarning))
        for row in built:
            start = time.perf_counter()
            record(row, net, frames, energy_frames)
            print(f"{net.name}: {row.name}: {energy_frames} frames in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr, flush=True)  # progress: the SciPy rows of stiff-cloth-64 take minutes
        harness.time_interleaved([row.contender for row in built if row.sound],
                                 QUICK_SECONDS if args.quick else SECONDS, args.repeats)
    passed = all(row.sound for row in built)
    agreement: dict[str, tuple[float, float, bool]] = {}  # SciPy row -> (after 1, after frames, within)
    for ours, theirs, tolerance, throughout in pairs(default_tol):
        if by_name[ours].built and by_name[ours].sound and by_name[theirs].sound:
            far = [harness.largest_distance(by_name[ours].after[f], by_name[theirs].after[f]) for f in (1, frames)]
            agreement[theirs] = (far[0], far[1], max(far if throughout else far[:1]) <= tolerance)
            passed &= agreement[theirs][2]

    def distance(row: Row, frame: int) -> str:
        if not (row.sound and reference.sound):
            return "-"
        return f"{harness.largest_distance(row.after[frame], reference.after[frame]):.1e}"

    table = []
    for row in rows:
        if not row.built:
            table.append((row.name, "not built yet", *["-"] * 8))
            continue
        timed = bool(row.contender.seconds)
        mean = np.mean(row.iterations, axis=0) if row.iterations else (math.nan, math.nan)
        work = f"{mean[0]:.1f}" + (f" ({mean[1]:.0f} CG)" if mean[1] else "")
        check = "-"
        if row.name in agreement:
            first, last, within = agreement[row.name]
            check = f"{first:.1e} / {last:.1e} m: {harness.verdict(within)}"
        table.append((row.name, harness.rate(row.contender.rate) if timed else "-",
                      f"{row.contender.per_step * 1e3:.3g}" if timed else "-", work,
                      f"{row.strain:.2e}" if row.sound else "-", f"{row.energy:.4g}" if row.sound else "-",
                      distance(row, 1), distance(row, frames), "yes" if row.sound else "**NO**", check))
    out = ["", f"## {net.name}: {net.n_nodes} nodes, {net.n_springs} springs, k = {net.k[0]:g} N/m, "
           f"{net.mass[0]:g} kg nodes, c = 0", ""]
    out += harness.table(["row", ">frames/s", ">ms per frame", ">iterations per frame",
                          ">max strain", f">energy after {energy_frames * H:.3g} s (J)",
                          ">to reference, 1 frame (m)", f">to reference, {frames} frames (m)",
                          "finite and bounded", f"agreement with msprings after 1 / {frames} frames"], table)
    return out, by_name, default_tol, passed


def ratio_lines(scenes: dict[str, tuple[dict[str, Row], float]]) -> list[str]:
    """msprings over its SciPy reference, frames per second, on every scene (scene -> its rows by name
    and msprings' default newton_tol)."""
    table = []
    for scene, (rows, default_tol) in scenes.items():
        for ours, theirs, _, _ in pairs(default_tol)[::2]:
            a, b = rows[ours], rows[theirs]
            if a.built and a.contender.seconds and b.contender.seconds:
                value = f"{a.contender.rate / b.contender.rate:.1f}"
            else:
                value = "not built yet" if not a.built else "-"
            table.append((scene, ours, theirs, value))
    return ["", "## msprings beside its SciPy reference (frames/s ratio; the target is >= 20 on stiff-chain "
            "and stiff-cloth-64 for implicit Euler, on stiff-cloth-64 for projective)", ""] + harness.table(
        ["scene", "msprings", "SciPy", ">x SciPy"], table)


# ---------------------------------------------------------------------------------------------
# threads and the Newton peer


THREADED = (SOLVERS[2], SOLVERS[4], SOLVERS[0])  # projective, xpbd, implicit Euler


def thread_lines(msprings: Any, net: harness.Network, args: Any) -> list[str]:
    """One thread beside all cores for projective, xpbd and implicit Euler on one scene."""
    pairs_ = [(msprings_row(msprings, net, solver, 1, ", 1 thread"),
               msprings_row(msprings, net, solver, 0, ", all cores")) for solver in THREADED]
    timed = [row.contender for pair in pairs_ for row in pair if row.built]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", getattr(msprings, "SolverWarning", RuntimeWarning))
        harness.time_interleaved(timed, QUICK_SECONDS if args.quick else SECONDS, args.repeats)
    table = []
    for one, every in pairs_:
        if not one.built:
            table.append((one.name.removesuffix(", 1 thread"), "not built yet", "-", "-", "-"))
            continue
        workers = every.contender.last.workers
        table.append((one.name.removesuffix(", 1 thread"), harness.rate(one.contender.rate),
                      harness.rate(every.contender.rate), str(workers),
                      f"{every.contender.rate / one.contender.rate:.2f}"))
    return ["", f"## {net.name}: all cores ({harness.CORES}) beside one thread (target >= 1.6)", ""] + harness.table(
        ["solver", ">1 thread, frames/s", ">all cores, frames/s", ">workers of the last step", ">x one thread"],
        table)


def newton_example(frames: int) -> tuple[Any, harness.Network, float] | str:
    """Newton's hanging-cloth example with its XPBD solver on device "cpu": the example, its particles,
    springs, masses and fixed particles as a network, and its particles' contact radius (m); or why it
    cannot run."""
    try:
        import warp as wp

        wp.config.quiet = True
        import newton.viewer
        from newton.examples.cloth import example_cloth_hanging
    except ImportError as error:
        return f"Newton is not installed ({error}); `pip install newton` adds it"
    wp.set_device("cpu")
    args = example_cloth_hanging.Example.create_parser().parse_args(
        ["--solver", "xpbd", "--device", "cpu", "--viewer", "null", "--width", "64", "--height", "32"])
    example = example_cloth_hanging.Example(newton.viewer.ViewerNull(num_frames=frames + 10), args)
    model = example.model
    mass = model.particle_mass.numpy().astype(float)
    pinned = model.particle_inv_mass.numpy() == 0.0
    springs = model.spring_indices.numpy().reshape(-1, 2).astype(np.int32)
    gravity = tuple(float(g) for g in model.gravity.numpy().reshape(-1, 3)[0])
    net = harness.Network("newton-hanging-cloth", model.particle_q.numpy().astype(float), springs,
                          model.spring_rest_length.numpy().astype(float), model.spring_stiffness.numpy().astype(float),
                          model.spring_damping.numpy().astype(float), np.where(pinned, mass.max(), mass), pinned,
                          model.particle_count - 1, gravity)
    return example, net, float(model.particle_radius.numpy().max())


def newton_lines(msprings: Any, args: Any) -> list[str]:
    """Newton's hanging cloth (XPBD, device "cpu") beside msprings' xpbd on the same network."""
    title = ["", "## newton-hanging-cloth: Newton's own example (XPBD, 10 substeps x 10 iterations per "
             "1/60 s frame, device \"cpu\") beside msprings' xpbd on its particles, springs and pins", ""]
    frames = 2 if args.quick else 10
    made = newton_example(frames * (args.repeats + 2))
    if isinstance(made, str):
        return title + [f"Not run: {made}."]
    import warp as wp

    example, net, radius = made
    iterations, substeps = example.iterations, example.sim_substeps

    def run_newton(state: Any, n: int) -> None:
        for _ in range(n):
            example.step()
        wp.synchronize_device("cpu")

    newton_row = harness.Contender("Newton (warp-lang, device cpu), XPBD", lambda: example, run_newton, steps=frames)
    solver = Solver(f"xpbd, {iterations} iterations x {substeps} substeps", "xpbd", (("iterations", iterations),),
                    substeps)
    ours = msprings_row(msprings, net, solver, 0, ", all cores")
    up = tuple(-g / np.linalg.norm(net.gravity) for g in net.gravity)
    fresh = ours.contender.fresh
    ours.contender.fresh = lambda: _with_ground(fresh(), up, radius)
    ours.contender.steps = frames
    rows = [newton_row] + ([ours.contender] if ours.built else [])
    harness.time_interleaved(rows, 0.0, args.repeats)  # Newton's state carries on from frame to frame
    lines = [f"{net.n_nodes} particles ({int(net.pinned.sum())} fixed), {net.n_springs} springs "
             f"(k = {net.k[0]:g} N/m, c = {net.c[0]:g} N s/m), {frames} frames per run; Newton also solves its "
             "bending edges and its particle contacts with the ground, msprings has the springs and a ground plane",
             ""]
    table = [(newton_row.name, f"{newton_row.per_step * 1e3:.3g}", "1.00")]
    if ours.built:
        table.append((ours.name, f"{ours.contender.per_step * 1e3:.3g}",
                      f"{newton_row.per_step / ours.contender.per_step:.1f}"))
    else:
        table.append((ours.name, "not built yet", "-"))
    return title + lines + harness.table(["row", ">ms per frame", ">x Newton (target >= 20)"], table)


def _with_ground(system: Any, up: tuple[float, ...], thickness: float) -> Any:
    """The system with a ground plane through the origin facing ``up`` (friction 1 as Newton's example,
    ``thickness`` (m) its particle radius) added; returns the system."""
    system.add_plane((0.0, 0.0, 0.0), up, friction=1.0, thickness=thickness)
    return system


# ---------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv, repeats=(3, 1))
    harness.keep_freed_memory()
    msprings = harness.import_msprings()
    frames = QUICK_FRAMES if args.quick else FRAMES
    energy_frames = QUICK_ENERGY_FRAMES if args.quick else ENERGY_FRAMES
    nets = [harness.stiff_chain(), harness.stiff_cloth(32)] + ([] if args.quick else [harness.stiff_cloth(64)])
    missing = [name for name in ("projective", "xpbd") if name not in msprings.INTEGRATORS]
    out = harness.header("Large steps: implicit Euler, projective and xpbd beside SciPy and Newton", msprings,
                         args.quick, [
        f"h = 1/60 s per frame; every row on one thread from rest; {energy_frames} frames recorded one by one, "
        f"then timed: median of {args.repeats} runs, the rows taking turns",
        f"'to reference': largest node distance from SciPy backward Euler at newton_tol = {TIGHT_TOL:g}; "
        f"'agreement': SciPy Newton beside msprings implicit Euler at the same newton_tol (after one frame "
        f"within {NEWTON_AGREEMENT:g} m), SciPy Liu beside msprings projective ({LIU_AGREEMENT:g} m after 1 and "
        f"{frames} frames)",
        "bounded: every node within 1.5 times the scene's initial extent of node 0",
        "not built yet in this msprings: " + (", ".join(missing) if missing else "nothing")])
    passed = True
    scenes: dict[str, tuple[dict[str, Row], float]] = {}
    for net in nets:
        lines, rows, default_tol, ok = run_scene(msprings, net, args, frames, energy_frames)
        out += lines
        scenes[net.name] = (rows, default_tol)
        passed &= ok
    out += ratio_lines(scenes)
    out += thread_lines(msprings, nets[-1], args)
    out += newton_lines(msprings, args)
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
