"""Command line: ``python -m msprings demo`` runs the hanging-chain demo; ``info`` prints the build."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from . import INTEGRATORS, System, __version__, _core


def hanging_chain(n_nodes: int = 11, integrator: str = "symplectic_euler") -> System:
    """The references' string: ``n_nodes`` nodes 1 m apart on the x axis, mass 1 kg,
    k = 20 N/m, c = 0.3 N s/m between neighbours, node 0 pinned, gravity on.  Released from
    rest, it swings down and settles hanging from its anchor."""
    positions = np.zeros((n_nodes, 3))
    positions[:, 0] = np.arange(n_nodes, dtype=float)
    springs = np.column_stack([np.arange(n_nodes - 1), np.arange(1, n_nodes)])
    return System(positions, springs, mass=1.0, k=20.0, c=0.3, pinned=[0], integrator=integrator)


def demo(seconds: float, dt: float, rows: int, integrator: str) -> int:
    """Simulates the hanging chain and prints time, energy ledger and the free end's position."""
    system = hanging_chain(integrator=integrator)
    steps_total = max(1, round(seconds / dt))
    per_row = max(1, steps_total // rows)
    print(f"msprings {__version__}: 11-node hanging chain (k = 20 N/m, c = 0.3 N s/m, m = 1 kg), "
          f"{integrator}, dt = {dt:g} s")
    header = f"{'t (s)':>7} {'kinetic':>10} {'spring':>10} {'gravity':>11} {'dissipated':>11} {'total (J)':>11}"
    header += f"   {'free end (x, y) m':>20}"
    print(header)
    print("-" * len(header))

    def row() -> None:
        e = system.energy()
        end = system.x[-1]
        print(f"{system.t:7.2f} {e.kinetic:10.3f} {e.spring:10.3f} {e.gravity:11.3f} {e.dissipated:11.3f} "
              f"{e.total:11.3f}   ({end[0]:8.3f}, {end[1]:8.3f})")

    initial_total = system.energy().total
    row()
    done = 0
    while done < steps_total:
        count = min(per_row, steps_total - done)
        system.step(dt, count)
        done += count
        row()
    drift = system.energy().total - initial_total
    print(f"energy ledger: mechanical + dissipated changed by {drift:+.3e} J over {system.steps} steps "
          f"(the integrator's error)")
    return 0


def info() -> int:
    """Prints version and build information."""
    import platform

    print(f"msprings {__version__} (C core {_core.version()})")
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"integrators: {', '.join(INTEGRATORS)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m msprings`` and the ``msprings`` console script."""
    parser = argparse.ArgumentParser(prog="msprings", description="Mass-spring simulation.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="simulate the 11-node hanging chain and print a table")
    demo_parser.add_argument("--seconds", type=float, default=20.0, help="simulated time (s), default 20")
    demo_parser.add_argument("--dt", type=float, default=1e-3, help="time step (s), default 0.001")
    demo_parser.add_argument("--rows", type=int, default=10, help="table rows, default 10")
    demo_parser.add_argument("--integrator", choices=INTEGRATORS, default="symplectic_euler")
    commands.add_parser("info", help="version and build information")
    args = parser.parse_args(argv)
    if args.command == "demo":
        if not (args.seconds > 0 and args.dt > 0 and args.rows >= 1):
            parser.error("--seconds and --dt must be > 0 and --rows >= 1")
        return demo(args.seconds, args.dt, args.rows, args.integrator)
    return info()


if __name__ == "__main__":
    sys.exit(main())
