"""Command line: ``python -m msprings`` (or ``msprings``) ``demo | list | run SCENE | info``."""
from __future__ import annotations

import argparse
import math
import warnings
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from . import INTEGRATORS, DivergenceError, System, __version__, _core, get_num_threads
from .trajectory import LEDGER_FIELDS


def _scene_table() -> dict[str, tuple[Callable[..., System], str, float, float]]:
    """name -> (builder, description, default dt (s), default duration (s))."""
    from . import scenes

    return {
        "single_spring": (scenes.single_spring, "one damped spring hanging from a pin", 1e-3, 10.0),
        "lab_spring": (scenes.lab_spring, "a 100 g mass bouncing on a 10 N/m lab spring", 1e-3, 10.0),
        "chain": (scenes.chain, "an 11-node chain of 1 kg on 5000 N/m, anchored at one end", 1e-3, 10.0),
        "cloth": (scenes.cloth, "40 x 40 cloth hanging from two corners", 1e-3, 5.0),
        "flag": (scenes.flag, "a flag on a pole in gusty wind", 5e-4, 4.0),
        "tablecloth": (scenes.tablecloth, "a tablecloth falling onto a round table", 2e-3, 5.0),
        "folding_cloth": (scenes.folding_cloth, "a cloth dropped onto the ground, folding without passing "
                          "through itself", 1.0 / 60.0, 3.0),
        "jelly_cube": (scenes.jelly_cube, "a jelly cube dropped on the ground", 1e-3, 3.0),
        "pyramid": (scenes.pyramid, "a spring pyramid dropped on the ground", 1e-3, 3.0),
        "spring_sphere": (scenes.spring_sphere, "a sphere of springs dropped on the ground", 1e-3, 3.0),
        "balloon": (scenes.balloon, "a balloon floating on a string", 1e-3, 5.0),
    }


#: scene -> (the builder's keyword that --resolution sets, its smallest and largest value).  The
#: upper bounds keep a run within minutes and memory: a sphere's nodes grow fourfold per subdivision.
RESOLUTIONS = {
    "chain": ("n", 2, 100_000),
    "cloth": ("n", 2, 400),
    "tablecloth": ("n", 2, 400),
    "folding_cloth": ("n", 3, 400),
    "jelly_cube": ("n", 2, 50),
    "flag": ("columns", 2, 1000),
    "spring_sphere": ("subdivisions", 1, 6),
    "balloon": ("subdivisions", 1, 6),
}


def build_scene(name: str, resolution: int | None = None, wind: float | None = None,
                integrator: str | None = None) -> System:
    """Builds a named scene with an optional resolution, wind speed (m/s along x) and integrator."""
    table = _scene_table()
    if name not in table:
        raise ValueError(f"unknown scene {name!r}; choose one of {', '.join(table)}")
    builder = table[name][0]
    options: dict[str, Any] = {}
    if resolution is not None:
        if name not in RESOLUTIONS:
            raise ValueError(f"scene {name!r} has no resolution to set")
        keyword, low, high = RESOLUTIONS[name]
        if not low <= resolution <= high:
            raise ValueError(f"--resolution {resolution} is out of range for {name}: it must be between {low} "
                             f"and {high}")
        options[keyword] = resolution
    if name in ("spring_sphere",):
        options.setdefault("center", (0.0, 1.0, 0.0))
    system = builder(**options)
    if name in ("spring_sphere",) and not system.colliders:
        system.add_plane(friction=0.5)
    if wind is not None:
        if system.n_faces == 0 and system.drag == 0.0:
            raise ValueError(f"--wind has no effect on {name}: it has no surface and no drag")
        system.wind = (wind, 0.0, 0.0)
        if system.n_faces and system.drag_coefficient == 0.0:
            system.drag_coefficient = 1.0
    if integrator is not None:
        system.integrator = integrator
    return system


LEDGER_COLUMNS = ("kinetic", "spring", "gravity", "dissipated", "work", "total")


# The integrators whose own damping the ledger books (as numerical).
LARGE_STEP = ("implicit_euler", "projective", "xpbd")


def _print_ledger(trajectory: Any, rows: int, integrator: str) -> None:
    """The energy ledger (J) of ``rows`` records of a trajectory run with ``integrator``,
    evenly spaced, as a table in one number format, then where the energy went by mechanism."""
    width = 12
    header = f"{'t (s)':>8}" + "".join(f"{name:>{width}}" for name in LEDGER_COLUMNS)
    print(header + "   (J)")
    print("-" * len(header))
    for r in np.linspace(0, len(trajectory) - 1, min(len(trajectory), rows)).astype(int):
        values = [trajectory.column(name)[r] for name in LEDGER_COLUMNS]
        print(f"{trajectory.times[r]:8.3f}" + "".join(f"{value:{width}.5g}" for value in values))
    work = LEDGER_FIELDS.index("wind")  # the dissipated parts come first
    for title, names in (("dissipated by", LEDGER_FIELDS[:work]), ("work done by", LEDGER_FIELDS[work:])):
        parts = [f"{name} {trajectory.column(name)[-1]:.5g}" for name in names if trajectory.column(name)[-1] != 0.0]
        print(f"{title:>13} (J): {', '.join(parts) if parts else 'nothing'}")
    why = ("rounding: the solver's own damping is booked as numerical" if integrator in LARGE_STEP
           else "the integrator's error")
    print(f"energy ledger: mechanical + dissipated - work changed by {trajectory.total[-1] - trajectory.total[0]:+.5g} J "
          f"over {trajectory.steps[-1] - trajectory.steps[0]} steps ({why})")


OUTPUT_SUFFIXES = (".gif", ".mp4", ".png", ".npz", ".pvd", ".xdmf")
ANIMATIONS = (".gif", ".mp4")


def _output_kind(path: Path) -> str:
    """".npz", ".png", ".gif", ".mp4", ".pvd", ".xdmf" or "obj" (a folder of OBJ frames)."""
    suffix = path.suffix.lower()
    if suffix == "" or path.is_dir():
        return "obj"
    if suffix not in OUTPUT_SUFFIXES:
        raise ValueError(f"unknown output type {suffix!r}: use .gif, .mp4, .png, .npz, .pvd, .xdmf or a folder for "
                         "OBJ frames")
    return suffix


def check_output(path: Path, system: System | None = None) -> str:
    """Everything about writing ``path`` that can be known before simulating: its type, that
    its folder exists and is writable, and that the tools it needs are installed.  Returns
    its kind (see :func:`_output_kind`); raises ValueError with a one-line message."""
    import importlib.util
    import tempfile

    kind = _output_kind(path)
    if kind == "obj" and system is not None and system.n_faces == 0:
        raise ValueError("OBJ frames need a surface: this scene has no faces")
    if kind == "obj" and path.exists() and not path.is_dir():
        raise ValueError(f"cannot write OBJ frames into {path}: it is a file, not a folder")
    folder = path if kind == "obj" and path.is_dir() else path.parent
    if not folder.is_dir():
        raise ValueError(f"cannot write {path}: the folder {folder} does not exist")
    # Trying is the only reliable test (permissions, read-only file systems, special folders).
    try:
        if kind == "obj":
            with tempfile.TemporaryFile(dir=folder):
                pass
        else:
            existed = path.exists()
            with open(path, "ab"):
                pass
            if not existed:
                path.unlink()
    except OSError as error:
        raise ValueError(f"cannot write {path}: {error.strerror or error}") from None
    if kind in (".pvd", ".xdmf") and importlib.util.find_spec("meshio") is None:
        raise ValueError(f"writing {kind} needs meshio: pip install 'msprings[export]'")
    if kind in (".png", *ANIMATIONS) and importlib.util.find_spec("matplotlib") is None:
        raise ValueError(f"writing {kind} needs matplotlib: pip install 'msprings[plot]'")
    if kind == ".mp4":
        from matplotlib import animation

        if not animation.FFMpegWriter.isAvailable():
            raise ValueError("writing .mp4 needs the ffmpeg program, which was not found: install ffmpeg "
                             "(e.g. apt install ffmpeg) or write a .gif")
    return kind


def _write_output(system: System, trajectory: Any, path: Path, fps: int) -> None:
    kind = _output_kind(path)
    if kind == ".npz":
        trajectory.save(path)  # msprings.Trajectory.load reads it back
        return
    if kind == "obj":
        from .mesh import export_obj_frames

        export_obj_frames(path, trajectory.positions, system.faces, uv=system.uv)
        return
    if kind == ".pvd":
        from .mesh import export_vtu_series

        export_vtu_series(path.parent, trajectory, prefix=path.stem)  # beside it: {stem}_0000.vtu, ...
        return
    if kind == ".xdmf":
        from .mesh import export_xdmf

        export_xdmf(path, trajectory)
        return
    from . import plot

    if kind == ".png":
        import matplotlib.pyplot as plt

        ax = plot.draw(trajectory)
        ax.figure.savefig(path, dpi=120)
        plt.close(ax.figure)
        return
    else:
        import matplotlib.pyplot as plt

        animation = plot.animate(trajectory, fps=fps)
        plot.save_animation(animation, path)
        plt.close(animation.axes.figure)


def run(name: str, *, steps: int | None, dt: float | None, integrator: str | None, wind: float | None,
        resolution: int | None, output: Path | None, frames: int, fps: int | None, quiet: bool) -> int:
    """Simulates a scene, prints its energy ledger and optionally writes it to ``output``
    (checked before simulating, as are options that do not apply)."""
    table = _scene_table()
    system = build_scene(name, resolution, wind, integrator)
    if output is not None:
        check_output(output, system)
    if dt is not None:
        step = dt
    else:
        # the scene's usual step, or half the stability limit if that is smaller
        step = min(table[name][2], 0.5 * system.critical_dt())
    count = steps if steps is not None else int(round(table[name][3] / step))
    every = max(1, count // max(frames, 1))
    if not quiet:
        print(f"msprings {__version__}: {name} ({system.n_nodes} nodes, {system.n_springs} springs), "
              f"{system.integrator}, dt = {step:g} s, {count} steps")
    try:
        trajectory = system.run(step, count, every, progress=None if not quiet else False)
    except DivergenceError as error:
        raise BlewUp(f"{name}: {error} Nothing was written.") from None
    blown = _blow_up(trajectory, system)
    if blown is not None:
        raise BlewUp(f"{name}: {blown} Nothing was written.")
    if not quiet:
        _print_ledger(trajectory, 6, system.integrator)
    if output is not None:
        _write_output(system, trajectory, output, 20 if fps is None else fps)
        if not quiet:
            print(f"wrote {output}")
    return 0


class BlewUp(Exception):
    """A run whose motion blew up: its message is the paragraph the command line prints."""


#: A run blew up when the energy ledger's balance drifts by more than this many times the
#: scene's energy scale: far beyond any integrator's error on a stable step.
BLOW_UP_FACTOR = 1e6


def _blow_up(trajectory: Any, system: System) -> str | None:
    """What went wrong if a finished run blew up without overflowing (its energies grew a
    millionfold, e.g. at a dt above the stable limit), else None.  The energy scale is the
    largest of the start's kinetic, spring and gravitational energy and the weight of the free
    nodes times the size of the start's bounding box."""
    energy = np.stack([trajectory.column(name) for name in ("kinetic", "spring", "gravity")], axis=1)
    free = ~np.asarray(system.pinned, dtype=bool)
    weight = float(np.sum(np.asarray(system.mass)[free])) * float(np.linalg.norm(system.gravity))
    extent = float(np.linalg.norm(np.ptp(trajectory.positions[0], axis=0)))
    scale = max(float(np.max(np.abs(energy[0]))), weight * extent)
    drift = np.abs(trajectory.total - trajectory.total[0])
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(drift) | (drift > BLOW_UP_FACTOR * scale)
    if not bad.any():
        return None
    r = int(np.argmax(bad))
    system.x[:] = trajectory.positions[0]  # the stable limit where the run began (it depends on x alone)
    limit = system.critical_dt()
    advice = (f"dt = {trajectory.dt:g} s is above {system.integrator}'s stable limit of about {limit:.2g} s for this "
              "scene: use a smaller --dt or a more stable --integrator (implicit_euler)"
              if trajectory.dt > limit else "use a smaller --dt or a more stable --integrator (implicit_euler)")
    return (f"the motion blew up: by t = {trajectory.times[r]:.6g} s (step {trajectory.steps[r]}) the energy "
            f"ledger's balance (mechanical + dissipated - work) had drifted by {drift[r]:.3g} J, more than "
            f"{BLOW_UP_FACTOR:.0e} times the scene's energy scale of {scale:.3g} J, so the motion from there on "
            f"means nothing; {advice}.")


def demo(output: Path, quiet: bool) -> int:
    """The README's main job: the hanging chain as a table, then a tablecloth
    falling onto a round table, written as an animation."""
    from .scenes import chain

    check_output(output)
    if not quiet:
        print(f"msprings {__version__}: the 11-node hanging chain (k = 5000 N/m, c = 5 N s/m, m = 1 kg), "
              "symplectic Euler, dt = 1 ms")
        _print_ledger(chain().run(1e-3, 10_000, 2_000), 6, "symplectic_euler")
        print()
    return run("tablecloth", steps=1500, dt=2e-3, integrator=None, wind=None, resolution=20, output=output,
               frames=50, fps=15, quiet=quiet)


def info() -> int:
    """Prints version and build information."""
    import os
    import platform

    from .scenes import cloth

    print(f"msprings {__version__} (C core {_core.version()})")
    print(f"platform: {platform.system()} {platform.release()}, {platform.machine()}; "
          f"{platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}")
    print(f"integrators: {', '.join(INTEGRATORS)}")
    print(f"threads: {os.cpu_count()} cores; systems whose threads is 0 use {get_num_threads()} "
          f"(msprings.set_num_threads) for networks of >= 10,000 springs (every integrator but projective "
          f"dynamics); any thread count gives the same result, bit for bit")
    print(f"vector path: {_core.vector_path()} (springs four nodes at a time in lane groups; "
          f"every path gives the same result, bit for bit)")
    layers = {"posix": "POSIX threads", "win32": "Windows threads"}
    print(f"thread layer: {_core.thread_layer()} ({layers[_core.thread_layer()]})")
    print(f"example: cloth(40) has {cloth(40).n_springs} springs")
    return 0


#: The benchmark suites in the source tree's ``benchmarks/`` folder, in the order ``bench all`` runs them.
BENCH_SUITES = ("core", "layout", "implicit", "large_steps", "peers", "contact", "plot", "mesh", "ensemble", "gradient")


def bench(suite: str, quick: bool) -> int:
    """Runs one of the benchmarks in the source tree's ``benchmarks/`` folder (``"all"``: each in
    turn); returns the largest exit status."""
    import importlib

    if suite == "all":
        return max([bench(name, quick) for name in BENCH_SUITES])
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / f"bench_{suite}.py").exists():
        raise ValueError(f"benchmarks/bench_{suite}.py not found: run this from a source checkout of msprings")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = importlib.import_module(f"benchmarks.bench_{suite}")
    return int(module.main(["--quick"] if quick else []))


def list_scenes() -> int:
    """Prints the scenes ``run`` knows."""
    for name, (_, description, dt, seconds) in _scene_table().items():
        print(f"{name:14} {description} (dt = {dt:g} s, {seconds:g} s)")
    return 0


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} -h)\n")


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m msprings`` and the ``msprings`` console script.

    A user error (bad option, unknown scene, an output that cannot be written, a missing
    tool) is one line on stderr and exit status 2.  A run whose motion blew up (a position or
    velocity became non-finite, or the energies grew a millionfold) prints one paragraph on
    stderr that says when and what to change, writes nothing and exits with status 3.  Output
    piped into a program that stops reading (``| head``) ends the command quietly."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, where a closed pipe can still be handled
        return status
    except BrokenPipeError:
        # the reader went away: nothing more can be shown, and the interpreter's final flush
        # of stdout must not complain either
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1


def _main(argv: Sequence[str] | None) -> int:
    parser = _Parser(prog="msprings", description="Mass-spring simulation.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="simulate a scene and write its animation")
    demo_parser.add_argument("-o", "--output", type=Path, default=Path("msprings-demo.gif"),
                             help="where to write the animation (.gif, .mp4 or .png), default msprings-demo.gif")
    demo_parser.add_argument("-q", "--quiet", action="store_true")
    commands.add_parser("list", help="the scenes that run knows")
    run_parser = commands.add_parser("run", help="simulate a scene")
    run_parser.add_argument("scene")
    run_parser.add_argument("--steps", type=int, help="number of steps (default: the scene's duration / dt)")
    run_parser.add_argument("--dt", type=float, help="time step (s)")
    run_parser.add_argument("--integrator", choices=INTEGRATORS)
    run_parser.add_argument("--wind", type=float, help="wind speed along x (m/s)")
    run_parser.add_argument("--resolution", type=int,
                            help="nodes per side (or sphere subdivisions); each scene has its own range")
    run_parser.add_argument("-o", "--output", type=Path,
                            help=".gif/.mp4 animation, .png last frame, .npz trajectory, .pvd (VTU files) or .xdmf for "
                                 "ParaView, or a folder of OBJ frames")
    run_parser.add_argument("--frames", type=int, default=60, help="records kept (frames), default 60")
    run_parser.add_argument("--fps", type=int, help="frames per second of a .gif or .mp4, default 20")
    run_parser.add_argument("-q", "--quiet", action="store_true")
    commands.add_parser("info", help="version and build information")
    bench_parser = commands.add_parser("bench", help="the side-by-side benchmarks (from the source tree)")
    bench_parser.add_argument("suite", nargs="?", default="core",
                              choices=(*BENCH_SUITES, "all"))
    bench_parser.add_argument("--quick", action="store_true", help="short runs: rough numbers")
    args = parser.parse_args(argv)
    quiet = getattr(args, "quiet", False)

    def one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                         file: Any = None, line: str | None = None) -> None:
        if not quiet:
            print(f"msprings: warning: {_one_line(message)}", file=sys.stderr)

    warnings.showwarning = one_line_warning
    try:
        if args.command == "demo":
            return demo(args.output, args.quiet)
        if args.command == "list":
            return list_scenes()
        if args.command == "run":
            for name in ("steps", "resolution", "frames", "fps"):
                value = getattr(args, name)
                if value is not None and value < 1:
                    run_parser.error(f"--{name} must be >= 1")
            if args.dt is not None and not (args.dt > 0 and math.isfinite(args.dt)):
                run_parser.error("--dt must be a finite time step > 0 (s)")
            if args.fps is not None and (args.output is None or _output_kind(args.output) not in ANIMATIONS):
                run_parser.error("--fps applies only to an animation output (-o with .gif or .mp4)")
            return run(args.scene, steps=args.steps, dt=args.dt, integrator=args.integrator, wind=args.wind,
                       resolution=args.resolution, output=args.output, frames=args.frames, fps=args.fps,
                       quiet=args.quiet)
        if args.command == "bench":
            return bench(args.suite, args.quick)
        return info()
    except BlewUp as error:
        print(f"msprings: {_one_line(error)}", file=sys.stderr)
        return 3
    except (ValueError, DivergenceError, OSError) as error:
        if isinstance(error, BrokenPipeError):
            raise
        print(f"msprings: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except ImportError as error:
        print(f"msprings: error: {_one_line(error)} (install the plotting extra: pip install 'msprings[plot]')",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
