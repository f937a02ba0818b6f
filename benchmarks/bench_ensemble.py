"""ensemble-springs: many small systems stepped by one msprings.Ensemble call.

* Single springs: B = 10,000 members, each one node of 1 kg hanging 1 m below a pinned node on
  a spring with c = 0.5 N s/m and k spread evenly over 10..100 N/m, gravity on; symplectic
  Euler, h = 1e-3 s, 1,000 steps.
* Chain-11s: B = 10,000 members of chain-11 (``msprings.scenes.chain(11, c=0.3)``: 1 kg nodes 1 m
  apart, k = 20 N/m, c = 0.3 N s/m, node 0 pinned), k spread the same way; same integrator,
  step and count.

Rows: member-steps per second and ns per spring-step of ``ens.step(h, 1000)`` on one thread
and on all; two Python loops over ``System`` objects (one thread each), timed on a subset of
the members and scaled to B: ``for s in systems: s.step(h, 1000)``, and ``s.step(h)`` for
every system at every step (as a loop that looks at the members between steps is written); and cloth-256 (one
``System``) on one thread and on all, whose ns per spring-step the ensemble's are compared
with.  Before timing, every member of a smaller ensemble of each scene is checked bit for bit
against its system stepped alone.  Exit status 1 when a check fails.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1e-3  # s
STEPS = 1000
MEMBERS = 10_000
LOOP_MEMBERS = 200  # members the Python loops step; their time is scaled to MEMBERS
CHECK_MEMBERS = 13  # members checked bit for bit against their systems alone


def single_springs(msprings: Any, count: int) -> list[Any]:
    """The scene's single springs: node 1 hangs 1 m below pinned node 0."""
    stiffness = np.linspace(10.0, 100.0, count)
    return [msprings.System([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0]], [[0, 1]], mass=1.0, k=float(k), c=0.5,
                            pinned=[0]) for k in stiffness]


def chains(msprings: Any, count: int) -> list[Any]:
    """chain-11s with k spread over 10..100 N/m."""
    return [msprings.scenes.chain(11, k=float(k), c=0.3) for k in np.linspace(10.0, 100.0, count)]


def identical(msprings: Any, systems: list[Any]) -> bool:
    """Every member of an ensemble of the systems ends with the bits of its system alone."""
    ens = msprings.Ensemble(systems)
    ens.step(H, 100)
    for i, system in enumerate(systems):
        alone = system.copy()
        alone.threads = 1
        alone.step(H, 100)
        if ens.x[i].tobytes() != alone.x.tobytes() or ens.v[i].tobytes() != alone.v.tobytes():
            return False
    return True


def with_threads(ens: Any, threads: int) -> Any:
    """The ensemble with ``threads`` set (0: all cores)."""
    ens.threads = threads
    return ens


def loop_row(name: str, systems: list[Any], steps: int, per_step: bool = False) -> harness.Contender:
    """A Python loop over System objects, each stepped alone on one thread: ``s.step(h, n)``
    for each system, or (per_step) ``s.step(h)`` for each system at every step."""

    def fresh() -> list[Any]:
        copies = [system.copy() for system in systems]
        for system in copies:
            system.threads = 1
        return copies

    def run(copies: list[Any], n: int) -> None:
        if per_step:
            for _ in range(n):
                for system in copies:
                    system.step(H)
            return
        for system in copies:
            system.step(H, n)

    return harness.Contender(name, fresh, run, steps=steps)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv, repeats=(3, 1))
    msprings = harness.import_msprings()
    import msprings.scenes  # noqa: F401

    members = 1000 if args.quick else MEMBERS
    steps = 100 if args.quick else STEPS
    cores = harness.CORES
    out = harness.header("msprings ensemble-springs", msprings, args.quick, [
        f"Symplectic Euler, h = {H:g} s, {steps:,} steps per run; B = {members:,} members; median of "
        f"{args.repeats} runs per row, each on a fresh ensemble after one untimed step, the rows taking turns",
        f"Python loops: {LOOP_MEMBERS} systems (one thread each), scaled to B"])

    checks, passed = [], True
    scenes = {"single spring": single_springs, "chain-11": chains}
    for name, build in scenes.items():
        same = identical(msprings, build(msprings, CHECK_MEMBERS))
        passed &= same
        checks.append((name, CHECK_MEMBERS, harness.verdict(same)))

    cloth = harness.cloth(256)
    cloth_rows = [harness.Contender(f"cloth-256, {label}", (lambda t=threads: harness.build_system(
        msprings, cloth, threads=t)), lambda s, n: s.step(H, n)) for label, threads in (("1 thread", 1),
                                                                                     ("all threads", 0))]
    harness.time_interleaved(cloth_rows, 0.05 if args.quick else 1.0, args.repeats)
    cloth_ns = [row.per_step / cloth.n_springs * 1e9 for row in cloth_rows]

    rows, targets = [], []
    for name, build in scenes.items():
        systems = build(msprings, members)
        springs = systems[0].n_springs
        contenders = [harness.Contender(f"{name}: Ensemble, {label}",
                                        (lambda t=threads, s=systems: with_threads(msprings.Ensemble(s), t)),
                                        lambda e, n: e.step(H, n), steps=steps)
                      for label, threads in (("1 thread", 1), (f"all threads ({cores})", 0))]
        contenders.append(loop_row(f"{name}: Python loop, s.step(h, n) per System", systems[:LOOP_MEMBERS], steps))
        contenders.append(loop_row(f"{name}: Python loop, s.step(h) per System and step", systems[:LOOP_MEMBERS],
                                   steps, per_step=True))
        harness.time_interleaved(contenders, 1.0, args.repeats)
        one, every, loop, stepwise = contenders
        loop_per_member_step = loop.per_step / LOOP_MEMBERS
        stepwise_per_member_step = stepwise.per_step / LOOP_MEMBERS
        for row, count in ((one, members), (every, members), (loop, LOOP_MEMBERS), (stepwise, LOOP_MEMBERS)):
            member_step = row.per_step / count
            reference = cloth_ns[1] if row is every else cloth_ns[0]
            rows.append((row.name, f"{1.0 / member_step / 1e6:.1f} M", f"{member_step / springs * 1e9:.2f}",
                         f"{loop_per_member_step / member_step:.1f}",
                         f"{member_step / springs * 1e9 / reference:.2f}"))
        one_ns = one.per_step / members / springs * 1e9
        over_loop = loop_per_member_step * members / every.per_step
        over_stepwise = stepwise_per_member_step * members / every.per_step
        over_stepwise_one = stepwise_per_member_step * members / one.per_step
        # The target's loop is the one a user writes to step many systems together: every system
        # advanced by one s.step(h) at each step, paying a step call's fixed cost each time.  The
        # loop that runs each system's whole run in one s.step(h, n) call already steps in C; its
        # ratio is reported beside it.
        targets += [
            f"{name}: Ensemble (all threads) over the loop of s.step(h) = {over_stepwise:.1f} (target >= 50): "
            f"{'met' if over_stepwise >= 50 else 'MISSED'}; on 1 thread {over_stepwise_one:.1f}; over the loop "
            f"of s.step(h, n) {over_loop:.1f}",
            f"{name}: ns per spring-step over cloth-256's (1 thread) = {one_ns / cloth_ns[0]:.2f} (target <= 2): "
            f"{'met' if one_ns / cloth_ns[0] <= 2 else 'MISSED'}",
            f"{name}: all threads over 1 thread = {one.per_step / every.per_step:.2f} (target >= 1.7 with 2 "
            f"threads): {'met' if one.per_step / every.per_step >= 1.7 else 'MISSED'}"]

    out += ["", f"## Bit equality with each system alone ({CHECK_MEMBERS} members, 100 steps)", ""]
    out += harness.table(["scene", ">members", "check"], checks)
    out += ["", "## Throughput", "",
            "'x loop': member-steps per second over the loop of s.step(h, n)'s; 'x cloth-256': ns per spring-step over "
            "cloth-256's on as many threads (1 thread for the loop).", ""]
    out += harness.table(["how", ">member-steps/s", ">ns per spring-step", ">x loop", ">x cloth-256"], rows)
    out += ["", "cloth-256: " + ", ".join(f"{row.name.split(', ')[1]} {ns:.2f} ns per spring-step"
                                           for row, ns in zip(cloth_rows, cloth_ns))]
    out += ["", "## Targets", "", *(f"- {line}" for line in targets)]
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
