"""Implicit solver benchmark: msprings' implicit Euler on the stiff-chain scene.

The scene follows the project's benchmark definition exactly:

* stiff-chain: 100 nodes 0.01 m apart on the x axis, mass 0.001 kg each, neighbour springs
  with k = 1e5 N/m and c = 0, node 0 pinned, gravity on.  Released from rest, the chain
  swings down as a stiff pendulum.

Its highest mode has omega = sqrt(lambda_max(M^-1 K)), close to 2 sqrt(k / m) = 2e4 rad/s, so an
explicit integrator needs steps of about 1e-4 s (``s.critical_dt("symplectic_euler")``
measures it).  Implicit Euler (backward Euler solved by Newton's method, each Newton step
by Jacobi-preconditioned conjugate gradients) runs it at h = 1/60 s, over a hundred times
that.  Three runs are reported:

* implicit Euler with the default solver settings (Newton iterated to ``newton_tol``);
* implicit Euler with ``newton_max_iter = 1``: one linear solve per step, the linearised
  step of Baraff and Witkin;
* for scale, symplectic Euler at 0.9 times its critical step over the same simulated time.

For each: steps per second and wall time per simulated second (median of several timed runs
of ``s.step(h, n)``, the configurations taking turns), and from one further run stepped one
step at a time: Newton and CG iterations per step (``s.solver_stats``), whether every
position and velocity stayed finite, the largest distance of any node from the pin (it must
stay within 1.05 chain lengths), and the largest rise of the mechanical energy
(kinetic + spring + gravity) above its initial value.  Without damping the exact motion keeps
that energy constant; implicit Euler removes energy (numerical damping), so a rise would be
a solver error.

Usage, from the repository root::

    python benchmarks/bench_implicit.py            # full run: 300 steps (5 s simulated)
    python benchmarks/bench_implicit.py --quick    # smoke run: 60 steps, 2 repeats

The report is Markdown on stdout.  The exit status is 0 when every run stays finite and
bounded, else 1.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from .common import cpu_model, import_msprings, load_average
except ImportError:  # as a script: python benchmarks/bench_implicit.py
    from common import cpu_model, import_msprings, load_average

#: The stiff-chain scene.
N_NODES = 100
SPACING = 0.01  # m
MASS = 0.001  # kg per node
STIFFNESS = 1e5  # N/m
DAMPING = 0.0  # N s/m
GRAVITY = (0.0, -9.81, 0.0)
CHAIN_LENGTH = SPACING * (N_NODES - 1)  # m

#: Implicit time step (s) and run length.
IMPLICIT_STEP = 1.0 / 60.0
STEPS = 300
QUICK_STEPS = 60
#: A run is bounded when no node gets farther than this many chain lengths from the pin.
BOUND_FACTOR = 1.05
#: The explicit reference steps at this fraction of its critical step.
EXPLICIT_FRACTION = 0.9


@dataclass(frozen=True)
class Config:
    """One way of stepping the scene."""

    name: str
    integrator: str
    newton_max_iter: int | None  # None: the default
    implicit: bool


CONFIGS = (
    Config("implicit Euler, converged (default settings)", "implicit_euler", None, True),
    Config("implicit Euler, linearised (newton_max_iter = 1)", "implicit_euler", 1, True),
    Config(f"symplectic Euler at {EXPLICIT_FRACTION:g} x critical step", "symplectic_euler",
           None, False),
)


def stiff_chain(msprings: ModuleType, config: Config) -> object:
    """The stiff-chain scene as a msprings.System stepped as the configuration says."""
    positions = np.zeros((N_NODES, 3))
    positions[:, 0] = SPACING * np.arange(N_NODES)
    springs = np.stack((np.arange(N_NODES - 1), np.arange(1, N_NODES)), axis=1)
    system = msprings.System(positions, springs, mass=MASS, k=STIFFNESS, c=DAMPING, pinned=[0],
                             gravity=GRAVITY, integrator=config.integrator)
    if config.newton_max_iter is not None:
        system.newton_max_iter = config.newton_max_iter
    return system


@dataclass
class Plan:
    """A configuration with its step size and the number of steps covering the run."""

    config: Config
    h: float
    steps: int  # steps of size h covering the simulated time
    per_sample: int  # steps between two samples of the physics record


@dataclass
class Record:
    """What one run stepped one sample at a time showed."""

    newton_iterations: list[int]  # per step (implicit only)
    cg_iterations: list[int]  # per step (implicit only)
    newton_converged: int  # steps whose Newton residual met newton_tol
    cg_converged: int  # steps whose every CG solve met cg_tol
    cg_failures: int  # steps with a CG solve at its cap
    finite: bool
    samples: int  # samples taken before the run ended (all of them when finite)
    max_distance: float  # m, largest node distance from the pin over the samples
    max_strain: float  # largest spring strain (l - L) / L over the samples
    energy_rise: float  # J, max over samples of mechanical energy minus its initial value
    energy_rise_time: float  # s, when that maximum was reached
    energy_initial: float  # J
    energy_final: float  # J


def record_run(msprings: ModuleType, plan: Plan, samples: int) -> Record:
    """Steps a fresh system sample by sample, recording solver statistics after every
    implicit step and the physics at every sample."""
    system = stiff_chain(msprings, plan.config)
    pin = np.array(system.x[0])
    initial = system.energy().mechanical
    newton: list[int] = []
    cg: list[int] = []
    newton_ok = cg_ok = 0
    max_distance = float(np.linalg.norm(system.x - pin, axis=1).max())
    max_strain = 0.0
    rise, rise_time = -math.inf, 0.0
    finite = True
    taken = 0
    with warnings.catch_warnings():
        # a CG solve at its cap is counted below (cg_failures), not reported as a warning
        warnings.simplefilter("ignore", getattr(msprings, "SolverWarning", RuntimeWarning))
        for _ in range(samples):
            try:
                if plan.config.implicit:
                    system.step(plan.h)
                    stats = system.solver_stats
                    newton.append(int(stats["newton_iterations"]))
                    cg.append(int(stats["cg_iterations"]))
                    newton_ok += bool(stats["newton_converged"])
                    cg_ok += bool(stats["cg_converged"])
                else:
                    system.step(plan.h, plan.per_sample)
            except FloatingPointError:  # msprings.DivergenceError
                finite = False
                break
            x, v = np.array(system.x), np.array(system.v)
            if not (np.isfinite(x).all() and np.isfinite(v).all()):
                finite = False
                break
            taken += 1
            max_distance = max(max_distance, float(np.linalg.norm(x - pin, axis=1).max()))
            max_strain = max(max_strain, float(system.strain().max()))
            energy = system.energy().mechanical - initial
            if energy > rise:
                rise, rise_time = energy, system.t
    return Record(newton, cg, newton_ok, cg_ok, int(system.solver_stats["cg_failures"]), finite,
                  taken, max_distance, max_strain, rise, rise_time, initial,
                  system.energy().mechanical)


def time_runs(msprings: ModuleType, plans: Sequence[Plan], repeats: int) -> list[list[float]]:
    """Wall times (s) of s.step(h, steps) on fresh systems, the plans taking turns; one
    untimed step first, as in the core benchmark."""
    seconds: list[list[float]] = [[] for _ in plans]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", getattr(msprings, "SolverWarning", RuntimeWarning))
        for _ in range(repeats):
            for index, plan in enumerate(plans):
                system = stiff_chain(msprings, plan.config)
                system.step(plan.h)
                start = time.perf_counter()
                try:
                    system.step(plan.h, plan.steps)
                except FloatingPointError:
                    seconds[index].append(math.nan)
                    continue
                seconds[index].append(time.perf_counter() - start)
    return seconds


def _mean(values: Sequence[int]) -> str:
    return f"{statistics.fmean(values):.1f}" if values else "-"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        description="Benchmark msprings' implicit Euler solver on the stiff-chain scene.")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_STEPS} steps and 2 repeats (a smoke test)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per configuration; the median is reported "
                             "(default 5, or 2 with --quick)")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 5
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark and prints a Markdown report; returns the exit status."""
    args = parse_args(argv)
    msprings = import_msprings()
    load = load_average()
    samples = QUICK_STEPS if args.quick else STEPS
    simulated = samples * IMPLICIT_STEP

    critical = stiff_chain(msprings, CONFIGS[2]).critical_dt("symplectic_euler")
    plans = []
    for config in CONFIGS:
        if config.implicit:
            plans.append(Plan(config, IMPLICIT_STEP, samples, 1))
        else:
            # whole explicit steps per implicit step, each at most EXPLICIT_FRACTION x critical
            per_sample = math.ceil(IMPLICIT_STEP / (EXPLICIT_FRACTION * critical))
            plans.append(Plan(config, IMPLICIT_STEP / per_sample, samples * per_sample,
                              per_sample))

    records = [record_run(msprings, plan, samples) for plan in plans]
    seconds = time_runs(msprings, plans, args.repeats)
    limit = BOUND_FACTOR * CHAIN_LENGTH

    out = ["# msprings implicit solver benchmark" + (" (--quick: smoke run)" if args.quick
                                                    else ""), ""]
    out += [
        f"- CPU: {cpu_model()} ({os.cpu_count()} logical CPUs; these steps run on one thread)",
        f"- OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"- Python {platform.python_version()}, NumPy {np.__version__}, msprings "
        f"{getattr(msprings, '__version__', 'unknown')} ({Path(msprings.__file__).parent})",
        f"- Date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}; "
        f"load average at the start: {load}",
        f"- Scene: stiff-chain, {N_NODES} nodes {SPACING:g} m apart (chain length "
        f"{CHAIN_LENGTH:g} m), {MASS:g} kg each, k = {STIFFNESS:g} N/m, c = {DAMPING:g}, node 0 "
        f"pinned, gravity on; {samples} steps of h = 1/60 s ({simulated:g} s simulated)",
        f"- Explicit critical step `s.critical_dt(\"symplectic_euler\")` = {critical:.4g} s; "
        f"h / critical = {IMPLICIT_STEP / critical:.0f}",
        f"- Timing: median of {args.repeats} runs of `s.step(h, n)` per row, each on a new "
        "system after one untimed step, the rows taking turns",
        "",
        "## Speed",
        "",
        "| run | h (s) | h / critical | steps | steps/s | wall time per simulated second (s) "
        "| Newton iterations per step (mean, max) | CG iterations per step (mean, max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for plan, record, times in zip(plans, records, seconds):
        median = statistics.median(times)
        rate = plan.steps / median
        newton = (f"{_mean(record.newton_iterations)}, {max(record.newton_iterations)}"
                  if record.newton_iterations else "-")
        cg = (f"{_mean(record.cg_iterations)}, {max(record.cg_iterations)}"
              if record.cg_iterations else "-")
        out.append(f"| {plan.config.name} | {plan.h:.4g} | {plan.h / critical:.3g} "
                   f"| {plan.steps:,} | {rate:,.0f} | {median / simulated:.3g} "
                   f"| {newton} | {cg} |")
    out += [
        "",
        "## Solver and physics (one run stepped sample by sample: every 1/60 s)",
        "",
        "| run | finite | max node distance from the pin (m) | bound (m) | bounded "
        "| max spring strain | Newton converged (steps) | CG met cg_tol (steps) "
        "| steps with CG at its cap | mechanical energy: initial, final (J) "
        "| max rise above initial (J), at t (s) |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---|---:|",
    ]
    passed = True
    for plan, record in zip(plans, records):
        bounded = record.max_distance <= limit
        passed = passed and record.finite and bounded
        implicit = plan.config.implicit
        out.append(
            f"| {plan.config.name} | {'yes' if record.finite else '**NO**'} "
            f"| {record.max_distance:.4f} | {limit:.4f} | {'yes' if bounded else '**NO**'} "
            f"| {record.max_strain:.2%} "
            f"| {f'{record.newton_converged} of {record.samples}' if implicit else '-'} "
            f"| {f'{record.cg_converged} of {record.samples}' if implicit else '-'} "
            f"| {record.cg_failures if implicit else '-'} "
            f"| {record.energy_initial:.4g}, {record.energy_final:.4g} "
            f"| {record.energy_rise:.3g}, {record.energy_rise_time:.3g} |")
    out += [
        "",
        "Energies are sampled every 1/60 s.  A negative 'max rise' means the mechanical energy "
        "never came back up to its initial value after the first step: implicit Euler's "
        "numerical damping takes energy out.  A positive one is energy the step created, "
        "typically as spring energy of springs it left overstretched (see the strain column).",
    ]
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
