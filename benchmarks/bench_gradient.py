"""Gradient benchmark (gradient-cloth): a differentiable run and its backward pass beside the plain run.

cloth-32 (the cloth-N layout: 1,024 nodes, 5,826 springs), symplectic Euler, h = 1e-3 s, 2,000 steps,
records every 100 steps (21 records).  The loss is the sum of squared distances of the records to a
target run's (the same cloth with every k 2 % higher), so dL/d(records) = 2 (records - target).

Rows (median of --repeats runs, taking turns):

* plain: ``s.run(h, 2000, record_every=100)``;
* differentiable: the same with ``differentiable=True`` (default checkpoints: every 100 steps);
* backward: ``trajectory.backward(dL/d records)``, which steps each stretch between checkpoints again
  and takes its steps back (the whole pass: stepping again and the adjoint);
* tangent: ``trajectory.tangent(k=...)``, one forward-mode direction (one column of a Jacobian).

Memory, each in a fresh process (Linux: the peak resident set of the differentiable run and its
backward pass, over the resident set after a plain run, the peak reset through /proc/self/clear_refs):
with the default checkpoints, and with none (``checkpoint_every=2000``: the backward pass then holds
every state of the run at once).

Checks: the differentiable run's records are the plain run's, bit for bit; the gradient along a random
direction of k agrees with a central difference of the loss to 1e-5.  Newton's differentiable
semi-implicit solver (the scene's peer) is not measured here.  Exit status 1 when a check fails.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1e-3  # s
STEPS, QUICK_STEPS = 2000, 400
RECORD_EVERY = 100

MEMORY = r"""
import json, re, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import numpy as np
import harness
msprings = harness.import_msprings()
steps, checkpoint_every = int(sys.argv[2]), int(sys.argv[3])


def kib(field):
    return int(re.search(field + r":\s+(\d+)", open("/proc/self/status").read()).group(1))


system = harness.build_system(msprings, harness.cloth(32))
system.copy().run(1e-3, steps, 100)
with open("/proc/self/clear_refs", "w") as peak:  # the peak resident set starts again from here
    peak.write("5")
before = kib("VmRSS")
run = system.copy().run(1e-3, steps, 100, differentiable=True,
                        checkpoint_every=None if checkpoint_every == 0 else checkpoint_every)
run.backward(np.ones(run.positions.shape))
print(json.dumps({"grown_kib": kib("VmHWM") - before, "checkpoint_bytes": run._tape.nbytes,
                  "every": run._tape.every}))
"""


def timed(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median seconds of ``repeats`` calls, and the last call's result."""
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def memory(steps: int, checkpoint_every: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", MEMORY, str(harness.ROOT), str(steps), str(checkpoint_every)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    args = harness.parse_args(__doc__.splitlines()[0], argv)
    msprings = harness.import_msprings()
    steps = QUICK_STEPS if args.quick else STEPS
    net = harness.cloth(32)
    system = harness.build_system(msprings, net)
    target_system = harness.build_system(msprings, net)
    target_system.k[:] *= 1.02
    target = target_system.run(H, steps, RECORD_EVERY).positions

    def loss(positions: np.ndarray) -> float:
        return float(np.sum((positions - target) ** 2))

    lines = harness.header("gradient-cloth: differentiable runs and their backward pass", msprings, args.quick,
                           [f"cloth-32: {system.n_nodes} nodes, {system.n_springs} springs; symplectic Euler, "
                            f"h = {H:g} s, {steps} steps, records every {RECORD_EVERY}",
                            f"{args.repeats} timed runs per row, taking turns; the median"])
    rows: dict[str, list[float]] = {"plain": [], "differentiable": [], "backward": [], "tangent": []}
    plain_run = differentiable_run = None
    for _ in range(args.repeats):
        seconds, plain_run = timed(lambda: system.copy().run(H, steps, RECORD_EVERY), 1)
        rows["plain"].append(seconds)
        seconds, differentiable_run = timed(lambda: system.copy().run(H, steps, RECORD_EVERY, differentiable=True), 1)
        rows["differentiable"].append(seconds)
        seed = 2.0 * (differentiable_run.positions - target)
        seconds, gradient = timed(lambda: differentiable_run.backward(seed), 1)
        rows["backward"].append(seconds)
        direction = np.random.default_rng(0).normal(size=system.n_springs)
        seconds, _ = timed(lambda: differentiable_run.tangent(k=direction), 1)
        rows["tangent"].append(seconds)
    plain = statistics.median(rows["plain"])
    lines += ["", *harness.table(["row", ">time", ">ratio to the plain run", ">per step"],
                                 [[name, harness.duration(statistics.median(values)),
                                   f"{statistics.median(values) / plain:.2f}",
                                   harness.duration(statistics.median(values) / steps)]
                                  for name, values in rows.items()])]

    same = bool(np.array_equal(plain_run.positions, differentiable_run.positions))
    direction = np.random.default_rng(1).normal(size=system.n_springs)
    adjoint = float(np.sum(gradient.k * direction))
    eps = 1e-3
    values = {}
    for multiple in (-2, -1, 1, 2):
        moved = system.copy()
        moved.k[:] += multiple * eps * direction
        values[multiple] = loss(moved.run(H, steps, RECORD_EVERY).positions)
    difference = (8.0 * (values[1] - values[-1]) - (values[2] - values[-2])) / (12.0 * eps)
    agrees = abs(adjoint - difference) <= 1e-5 * abs(adjoint)

    with_checkpoints = memory(steps, 0)
    without = memory(steps, steps)
    state_bytes = 2 * system.n_nodes * 3 * 8
    lines += ["", *harness.table(
        ["memory", ">checkpoints kept", ">backward's stretch of states", ">peak resident set growth"],
        [[f"checkpoints every {with_checkpoints['every']} steps",
          f"{with_checkpoints['checkpoint_bytes'] / 2**20:.2f} MiB",
          f"{(with_checkpoints['every'] + 1) * state_bytes / 2**20:.2f} MiB",
          f"{with_checkpoints['grown_kib'] / 1024:.1f} MiB"],
         [f"none (checkpoint_every = {steps})", f"{without['checkpoint_bytes'] / 2**20:.2f} MiB",
          f"{(without['every'] + 1) * state_bytes / 2**20:.2f} MiB", f"{without['grown_kib'] / 1024:.1f} MiB"]])]
    lines += ["", *harness.table(["check", "value", "result"],
                                 [["differentiable records = plain records, bit for bit", str(same),
                                   harness.verdict(same)],
                                  ["dL/dk along a random direction: adjoint, central difference",
                                   f"{adjoint:.10g}, {difference:.10g}", harness.verdict(agrees)]])]
    lines += ["", "Newton's differentiable semi-implicit solver (the scene's peer) is not measured by this suite."]
    print("\n".join(lines))
    return 0 if same and agrees else 1


if __name__ == "__main__":
    sys.exit(main())
