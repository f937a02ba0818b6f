"""Gradient benchmark (gradient-cloth): a differentiable run and its backward pass beside the plain run.

cloth-32 (the cloth-N layout: 1,024 nodes, 5,826 springs), symplectic Euler, h = 1e-3 s, 2,000 steps,
records every 100 steps (21 records).  The loss is the sum of squared distances of the records to a
target run's (the same cloth with every k 2 % higher), so dL/d(records) = 2 (records - target).

Rows (median of --repeats runs, taking turns):

* plain: ``s.run(h, 2000, record_every=100)``;
* differentiable: the same with ``differentiable=True`` (default checkpoints: every 100 steps);
* backward: ``trajectory.backward(dL/d records)``, which steps each stretch between checkpoints again
  and takes its steps back (the whole pass: stepping again and the adjoint; with two threads or more,
  each stretch is stepped again on a second thread while the next one is taken back);
* tangent: ``trajectory.tangent(k=...)``, one forward-mode direction (one column of a Jacobian).

Memory, each in a fresh process (Linux: the peak resident set of the differentiable run and its
backward pass, over the resident set after a plain run, the peak reset through /proc/self/clear_refs):
with the default checkpoints, and with none (``checkpoint_every=2000``: the backward pass then holds
every state of the run at once).

Beside them, the same network in Newton's differentiable semi-implicit solver (``pip install newton``,
which brings warp-lang; skipped when missing) on device "cpu": its plain forward run, the forward run
recorded on a ``wp.Tape`` (every state kept: its memory grows with the run), and ``tape.backward``.  Newton
computes in float32; its dL/dk is compared with msprings' (relative difference of the vectors).

Checks: the differentiable run's records are the plain run's, bit for bit; the gradient along a random
direction of k agrees with a central difference of the loss to 1e-5; Newton's dL/dk agrees with
msprings' to 1e-2 (it computes in float32).  Exit status 1 when a check fails.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1e-3  # s
STEPS, QUICK_STEPS = 2000, 400
RECORD_EVERY = 100
TARGET_SCALE = 1.02  # the target run's k, relative

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


timed = harness.timed


def newton_peer(net: harness.Network, steps: int, target_scale: float, repeats: int) -> dict[str, Any] | str:
    """Newton's SolverSemiImplicit on the network (device "cpu"): median seconds of the plain forward
    run, the taped forward run and the backward pass, and dL/dk of the same loss; or why not."""
    try:
        import warp as wp

        wp.config.quiet = True
        import newton
    except ImportError as error:
        return f"Newton is not installed ({error}); `pip install newton` adds it"
    wp.set_device("cpu")

    def build(k_scale: float) -> Any:
        builder = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=harness.GRAVITY)
        for i, position in enumerate(net.positions):
            builder.add_particle(tuple(position), (0.0, 0.0, 0.0), 0.0 if net.pinned[i] else float(net.mass[i]),
                                 radius=0.0)
        for s, (i, j) in enumerate(net.springs):
            builder.add_spring(int(i), int(j), float(net.k[s] * k_scale), float(net.c[s]), 0.0)
        model = builder.finalize(requires_grad=True)
        model.particle_grid = None  # no particle contact: the springs, gravity and pins only
        return model

    @wp.kernel
    def squared_distance(q: wp.array(dtype=wp.vec3), target: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        tid = wp.tid()
        wp.atomic_add(loss, 0, wp.length_sq(q[tid] - target[tid]))

    def records_of(model: Any) -> list[Any]:
        solver = newton.solvers.SolverSemiImplicit(model)
        pair = [model.state(), model.state()]
        records = [wp.array(pair[0].particle_q.numpy(), dtype=wp.vec3)]
        for step in range(steps):
            pair[0].clear_forces()
            solver.step(pair[0], pair[1], None, None, H)
            pair.reverse()
            if (step + 1) % RECORD_EVERY == 0 or step + 1 == steps:
                records.append(wp.array(pair[0].particle_q.numpy(), dtype=wp.vec3))
        return records

    targets = records_of(build(target_scale))
    model = build(1.0)
    solver = newton.solvers.SolverSemiImplicit(model)
    states = [model.state() for _ in range(steps + 1)]
    recorded = [r * RECORD_EVERY for r in range(len(targets) - 1)] + [steps]
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    def forward(with_loss: bool) -> None:
        for step in range(steps):
            states[step].clear_forces()
            solver.step(states[step], states[step + 1], None, None, H)
        if with_loss:
            for r, step in enumerate(recorded):
                wp.launch(squared_distance, dim=model.particle_count,
                          inputs=[states[step].particle_q, targets[r], loss])
        wp.synchronize_device("cpu")

    times: dict[str, list[float]] = {"plain": [], "taped": [], "backward": []}
    for repeat in range(repeats + 1):  # the first compiles the kernels: not timed
        start = time.perf_counter()
        forward(False)
        plain = time.perf_counter() - start
        tape = wp.Tape()
        loss.zero_()
        start = time.perf_counter()
        with tape:
            forward(True)
        taped = time.perf_counter() - start
        start = time.perf_counter()
        tape.backward(loss)
        wp.synchronize_device("cpu")
        backward = time.perf_counter() - start
        gradient = model.spring_stiffness.grad.numpy().astype(float)
        tape.zero()
        if repeat > 0:
            times["plain"].append(plain)
            times["taped"].append(taped)
            times["backward"].append(backward)
    return {name: statistics.median(values) for name, values in times.items()} | {"k": gradient}


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
    target_system.k[:] *= TARGET_SCALE
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

    def stretches(every: int) -> str:
        """The backward pass's states: one stretch, or two when a second thread steps the next."""
        count = 2 if every < steps and msprings.get_num_threads() >= 2 else 1
        return f"{count} x {(every + 1) * state_bytes / 2**20:.2f} MiB"

    lines += ["", *harness.table(
        ["memory", ">checkpoints kept", ">backward's stretches of states", ">peak resident set growth"],
        [[f"checkpoints every {with_checkpoints['every']} steps",
          f"{with_checkpoints['checkpoint_bytes'] / 2**20:.2f} MiB", stretches(with_checkpoints['every']),
          f"{with_checkpoints['grown_kib'] / 1024:.1f} MiB"],
         [f"none (checkpoint_every = {steps})", f"{without['checkpoint_bytes'] / 2**20:.2f} MiB",
          stretches(without['every']), f"{without['grown_kib'] / 1024:.1f} MiB"]])]
    checks = [["differentiable records = plain records, bit for bit", str(same), harness.verdict(same)],
              ["dL/dk along a random direction: adjoint, central difference", f"{adjoint:.10g}, {difference:.10g}",
               harness.verdict(agrees)]]
    peer = newton_peer(net, steps, TARGET_SCALE, args.repeats)
    peer_agrees = True
    if isinstance(peer, str):
        lines += ["", f"Newton: not measured. {peer}."]
    else:
        ours = statistics.median(rows["differentiable"]) + statistics.median(rows["backward"])
        lines += ["", "## The same network in Newton's SolverSemiImplicit (warp-lang, device cpu, float32)", "",
                  *harness.table(["row", ">time", ">ratio to msprings' plain run"],
                                 [["Newton: plain forward run", harness.duration(peer["plain"]),
                                   f"{peer['plain'] / plain:.2f}"],
                                  ["Newton: forward run on a wp.Tape", harness.duration(peer["taped"]),
                                   f"{peer['taped'] / plain:.2f}"],
                                  ["Newton: tape.backward", harness.duration(peer["backward"]),
                                   f"{peer['backward'] / plain:.2f}"],
                                  ["Newton: taped forward + backward",
                                   harness.duration(peer["taped"] + peer["backward"]),
                                   f"{(peer['taped'] + peer['backward']) / plain:.2f}"],
                                  ["msprings: differentiable run + backward", harness.duration(ours),
                                   f"{ours / plain:.2f}"]])]
        relative = float(np.linalg.norm(peer["k"] - gradient.k) / np.linalg.norm(gradient.k))
        peer_agrees = relative <= 1e-2  # float32 over the run
        checks.append(["Newton's dL/dk against msprings' (relative difference)", f"{relative:.2e}",
                       harness.verdict(peer_agrees)])
    lines += ["", *harness.table(["check", "value", "result"], checks)]
    print("\n".join(lines))
    return 0 if same and agrees and peer_agrees else 1


if __name__ == "__main__":
    sys.exit(main())
