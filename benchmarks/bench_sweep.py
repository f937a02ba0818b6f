"""Sweeps: msprings.sweep on local threads beside the same sweep on a two-worker Dask LocalCluster.

Scenes (the ensemble-springs scene of the project's benchmark list, at B = 1,000): 1,000 members, each
one node hanging 1 m below a pinned node on a spring (1 kg, c = 0.5 N s/m, k spread evenly over
10..100 N/m), gravity on, symplectic Euler, h = 1e-3 s, 1,000 steps: 10^6 member-steps; and 1,000
chain-11s (k spread the same way) for 1,000 steps.  Each member is built where it runs, and its final
positions and end height come back.

Rows, every one the whole sweep (building the members, stepping them, gathering labelled results):

- a Python loop: build and step each System in turn (what a user writes without msprings.sweep);
- msprings.sweep on one thread, and on all cores (threads: System.step releases the GIL when a call
  is long enough);
- msprings.sweep on worker processes, one per core (local="processes": the pool is started for each
  sweep, so its start-up counts);
- msprings.sweep through a Dask LocalCluster of two worker processes of one thread each, started
  once before the timing (the target: within 1.5 times the local sweep on all cores).

Exit status 1 when the cluster's results differ from the local ones in any bit, or a member is
not the system stepped alone.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1e-3  # s
STEPS, QUICK_STEPS = 1000, 100
MEMBERS, QUICK_MEMBERS = 1000, 200
TARGET = 1.5  # the cluster's time over the local sweep's, at most

msprings = harness.import_msprings()


def spring(k: float) -> Any:
    """One 1 kg node hanging 1 m below a pinned node (ensemble-springs)."""
    return msprings.System([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0]], [[0, 1]], mass=1.0, k=k, c=0.5, pinned=[0])


def chain(k: float) -> Any:
    """chain-11 with stiffness k: 11 nodes 1 m apart along x, node 0 pinned, 1 kg, c = 0.3 N s/m."""
    return msprings.scenes.chain(11, 1.0, mass=1.0, k=k, c=0.3)


def end_height(system: Any) -> dict[str, float]:
    """The last node's height (m)."""
    return {"end_y": system.x[-1, 1]}


def python_loop(build: Callable[[float], Any], ks: np.ndarray, steps: int) -> np.ndarray:
    """Every member built and stepped in turn: (B, n, 3) final positions."""
    out = []
    for k in ks:
        system = build(float(k))
        system.step(H, steps)
        out.append(system.x.copy())
    return np.array(out)


def sweeps(build: Callable[[float], Any], ks: np.ndarray, steps: int, cores: int,
           client: Any) -> dict[str, Callable[[], Any]]:
    """The rows: each a call that runs the whole sweep of ``build`` over ``ks``."""
    grid = {"k": ks}
    return {
        "Python loop of Systems, 1 thread": lambda: python_loop(build, ks, steps),
        "msprings.sweep, 1 thread": lambda: msprings.sweep(build, grid, H, steps, measure=end_height, workers=1),
        f"msprings.sweep, {cores} threads": lambda: msprings.sweep(build, grid, H, steps, measure=end_height),
        f"msprings.sweep, {cores} processes": lambda: msprings.sweep(build, grid, H, steps, measure=end_height,
                                                                     local="processes"),
        "msprings.sweep, Dask LocalCluster (2 x 1)": lambda: msprings.sweep(build, grid, H, steps,
                                                                            measure=end_height, client=client),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv, repeats=(5, 2))
    from distributed import Client, LocalCluster

    steps = QUICK_STEPS if args.quick else STEPS
    members = QUICK_MEMBERS if args.quick else MEMBERS
    ks = np.linspace(10.0, 100.0, members)
    cores = harness.CORES
    started = time.perf_counter()
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
    startup = time.perf_counter() - started
    out = harness.header("Sweeps: local threads beside a two-worker Dask LocalCluster", msprings, args.quick, [
        f"{members:,} members x {steps:,} steps of h = {H:g} s, symplectic Euler: {members * steps:,} member-steps "
        f"per sweep; final positions and the end's height kept",
        f"every row is the whole sweep (build, step, gather); median of {args.repeats} runs, the rows taking turns",
        f"Dask LocalCluster: 2 worker processes x 1 thread, started once before the timing "
        f"({startup:.2f} s; not counted)",
        f"local processes: {cores} worker processes started by each sweep (forkserver)"])
    passed = True
    try:
        for name, build in (("ensemble-springs", spring), ("chain-11", chain)):
            rows = sweeps(build, ks, steps, cores, client)
            seconds: dict[str, list[float]] = {row: [] for row in rows}
            results: dict[str, Any] = {}
            for row, run in rows.items():  # one untimed run each: imports, first calls, worker warm-up
                results[row] = run()
            for _ in range(args.repeats):
                for row, run in rows.items():
                    start = time.perf_counter()
                    run()
                    seconds[row].append(time.perf_counter() - start)
            local_row, cluster_row = f"msprings.sweep, {cores} threads", "msprings.sweep, Dask LocalCluster (2 x 1)"
            local, remote = results[local_row], results[cluster_row]
            same = all(np.array_equal(local[v].values, remote[v].values) for v in local.data_vars)
            alone = python_loop(build, ks[:: max(1, members // 10)], steps)
            as_alone = np.array_equal(local.x.values[:: max(1, members // 10)], alone)
            as_processes = results[f"msprings.sweep, {cores} processes"].identical(local)
            local_median = statistics.median(seconds[local_row])
            table = []
            for row in rows:
                median = statistics.median(seconds[row])
                table.append((row, harness.duration(median), harness.rate(members * steps / median),
                              f"{median / local_median:.2f}"))
            ratio = statistics.median(seconds[cluster_row]) / local_median
            within = ratio <= TARGET
            out += ["", f"## {name}", ""] + harness.table(
                ["row", ">sweep", ">member-steps/s", f">x sweep on {cores} threads"], table)
            verdict = "not judged (--quick)" if args.quick else harness.verdict(within)
            out += ["", f"- cluster / local threads: {ratio:.2f} (target <= {TARGET}): {verdict}",
                    f"- cluster results equal to local, every variable bit for bit: {harness.verdict(same)}",
                    f"- processes equal to threads: {harness.verdict(as_processes)}; every tenth member equal to "
                    f"its System stepped alone: {harness.verdict(as_alone)}"]
            passed &= same and as_alone and as_processes
    finally:
        client.close()
        cluster.close()
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
