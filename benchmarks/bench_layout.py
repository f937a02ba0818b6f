"""Node orders and call costs: msprings' explicit step on one thread whatever the node numbering,
and what stepping through many calls or recording every step costs beside one call.

* Orders: cloth-256 as the benchmark list numbers it (row by row), the same cloth with its nodes
  numbered at random, an icosphere of 40,962 nodes (six subdivisions of the icosahedron; a spring
  along every edge and one across every edge, joining the two opposite corners) in the order
  ``msprings.mesh.icosphere`` numbers it, and numbered at random.  Rows: spring evaluations per
  second of ``s.step(h, n)`` with ``s.threads = 1``, and each scene's rate over the grid's.
* Calls, on cloth-256: one ``s.step(h, n)``, n calls of ``s.step(h)``, ``s.run(h, n,
  record_every=1)``, and mapping in the memory of that run's records alone (as ``run`` allocates
  it, then freed: what the operating system charges for fresh memory, no stepping), each as many
  steps, the rows taking turns; then, in a second round, one
  ``s.step(h, n)`` again and the run recorded into an earlier run's trajectory (``out=``, made
  before timing: no fresh memory to map).  The earlier trajectory lives only in that round: on a
  virtual machine, the memory a process holds can change what mapping in fresh memory costs.

Before timing, each renumbered scene runs 100 steps beside its own numbering and must end within
1e-9 m of it at every node (the sums run in another order: equal to round-off, not bitwise).
Exit status 1 when a check fails.
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
CHECK_STEPS = 100
TOLERANCE = 1e-9  # m
SHUFFLE_SEED = 2026
ONE_CALL, CALLS, RECORDED = "one s.step(h, n)", "n calls of s.step(h)", "s.run(h, n, record_every=1)"
MAPPING = "mapping in that run's record memory alone"
RECORDED_INTO = "s.run(h, n, record_every=1, out=trajectory)"


def icosphere(msprings: Any, subdivisions: int = 6) -> harness.Network:
    """icosphere-S: the subdivided icosahedron scaled so its edges are about as long as cloth-256's
    (0.625 m); 1 kg nodes, edge and bend springs with the cloth's k = 2500 N/m, c = 1 N s/m; node 0
    pinned, gravity on."""
    mesh = msprings.mesh.icosphere(subdivisions)
    edges = msprings.mesh.unique_edges(mesh.faces)
    bends = msprings.mesh.interior_edge_opposites(mesh.faces).opposites
    vertices = np.asarray(mesh.vertices, dtype=float)
    edge = float(np.linalg.norm(vertices[edges[:, 1]] - vertices[edges[:, 0]], axis=1).mean())
    return harness._network(f"icosphere-{subdivisions}", vertices * (0.625 / edge), np.concatenate([edges, bends]),
                            2500.0, 1.0, 1.0, (0,), len(vertices) - 1)


def shuffled(net: harness.Network, seed: int = SHUFFLE_SEED) -> tuple[harness.Network, np.ndarray]:
    """The network with its nodes numbered at random, and the new number of each old node."""
    place = np.random.default_rng(seed).permutation(net.n_nodes)
    old = np.argsort(place)  # the old node at each new number
    springs = place[net.springs].astype(np.int32)
    return (harness.Network(f"{net.name}, shuffled", net.positions[old], springs, net.rest, net.k, net.c,
                            net.mass[old], net.pinned[old], int(place[net.watched]), net.gravity, net.drag), place)


def batched(system: Any, n: int) -> None:
    """n steps in one ``s.step(h, n)`` call."""
    system.step(H, n)


def order_rows(msprings: Any, nets: Sequence[harness.Network]) -> list[harness.Contender]:
    """One thread, ``s.step(h, n)``, every scene as many steps as the first."""
    rows = []
    for net in nets:
        system = harness.build_system(msprings, net, threads=1)
        rows.append(harness.Contender(net.name, system.copy, batched, nets[0].name if rows else None))
    return rows


def agreement(msprings: Any, net: harness.Network, renumbered: harness.Network, place: np.ndarray) -> float:
    """Largest node distance (m) between the two numberings after CHECK_STEPS steps."""
    ends = []
    for network in (net, renumbered):
        system = harness.build_system(msprings, network, threads=1)
        system.step(H, CHECK_STEPS)
        ends.append(np.array(system.x))
    return harness.largest_distance(ends[0], ends[1][place])


def call_rows(msprings: Any, net: harness.Network) -> list[harness.Contender]:
    """One call, single-step calls and a recorded run, as many steps each."""
    system = harness.build_system(msprings, net, threads=1)

    def calls(s: Any, n: int) -> None:
        for _ in range(n):
            s.step(H)

    def recorded(s: Any, n: int) -> None:
        s.run(H, n, record_every=1, progress=False)

    def mapping(s: Any, n: int) -> None:
        from msprings.trajectory import _states_array

        _states_array((n + 1, s.n_nodes, 3))  # mapped in at once, then freed, as a run's records

    return [harness.Contender(ONE_CALL, system.copy, batched),
            harness.Contender(CALLS, system.copy, calls, ONE_CALL),
            harness.Contender(RECORDED, system.copy, recorded, ONE_CALL),
            harness.Contender(MAPPING, system.copy, mapping, ONE_CALL)]


def recorded_into_rows(msprings: Any, net: harness.Network, steps: int, seconds: float,
                       repeats: int) -> list[harness.Contender]:
    """Times one call and a run recorded into an earlier run's trajectory, ``steps`` each."""
    system = harness.build_system(msprings, net, threads=1)
    # the trajectories recorded into, for the untimed first step and for the timed run
    earlier = {n: system.copy().run(H, n, record_every=1, progress=False) for n in (1, steps)}

    def recorded_into(s: Any, n: int) -> None:
        s.run(H, n, record_every=1, progress=False, out=earlier[n])

    rows = [harness.Contender(ONE_CALL, system.copy, batched, steps=steps),
            harness.Contender(RECORDED_INTO, system.copy, recorded_into, ONE_CALL)]
    harness.time_interleaved(rows, seconds, repeats)
    return rows


def target(what: str, ratio: float, bound: float, at_least: bool) -> str:
    """A target line: the ratio, the bound and whether it is met."""
    met = ratio >= bound if at_least else ratio <= bound
    return f"{what} = {ratio:.2f} (target {'>=' if at_least else '<='} {bound:g}): {'met' if met else 'MISSED'}"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv)
    msprings = harness.import_msprings()
    import msprings.mesh  # noqa: F401  (the icosphere)

    seconds = 0.05 if args.quick else 1.0
    cloth, sphere = harness.cloth(256), icosphere(msprings)
    (cloth_shuffled, cloth_place), (sphere_shuffled, sphere_place) = shuffled(cloth), shuffled(sphere)
    out = harness.header("msprings node orders and call costs", msprings, args.quick, [
        f"Symplectic Euler, h = {H:g} s, one thread; median of {args.repeats} runs per row, each on a fresh "
        "copy of the initial state after one untimed step, the rows taking turns"])
    checks, passed = [], True
    for net, renumbered, place in ((cloth, cloth_shuffled, cloth_place), (sphere, sphere_shuffled, sphere_place)):
        distance = agreement(msprings, net, renumbered, place)
        passed &= distance <= TOLERANCE
        checks.append((renumbered.name, net.name, f"{distance:.1e}", harness.verdict(distance <= TOLERANCE)))

    nets = [cloth, cloth_shuffled, sphere, sphere_shuffled]
    orders = order_rows(msprings, nets)
    harness.time_interleaved(orders, seconds, args.repeats)
    grid = cloth.n_springs * orders[0].rate
    speed, targets = [], []
    for net, row in zip(nets, orders):
        evaluations = net.n_springs * row.rate
        speed.append((net.name, f"{net.n_nodes:,}", f"{net.n_springs:,}", f"{row.steps:,}",
                      harness.duration(row.per_step), f"{evaluations / 1e6:.1f} M", f"{evaluations / grid:.2f}"))
        if "shuffled" in net.name:
            targets.append(target(f"{net.name}: spring evaluations/s over cloth-256's", evaluations / grid, 0.7, True))

    calls = call_rows(msprings, cloth)
    harness.time_interleaved(calls, seconds, args.repeats)
    one = calls[0].per_step
    costs = [(row.name, f"{row.steps:,}", harness.duration(row.per_step), f"{row.per_step / one:.2f}")
             for row in calls]
    again, into = recorded_into_rows(msprings, cloth, calls[0].steps, seconds, args.repeats)
    costs += [(f"{row.name} (second round)", f"{row.steps:,}", harness.duration(row.per_step),
               f"{row.per_step / again.per_step:.2f}") for row in (again, into)]
    targets += [target(f"cloth-256: {CALLS} / {ONE_CALL}", calls[1].per_step / one, 1.1, False),
                target(f"cloth-256: {RECORDED} / {ONE_CALL}", calls[2].per_step / one, 1.3, False),
                target(f"cloth-256: ({RECORDED} - {MAPPING}) / {ONE_CALL}, recording's own cost",
                       (calls[2].per_step - calls[3].per_step) / one, 1.3, False),
                target(f"cloth-256: {RECORDED_INTO} / {ONE_CALL}", into.per_step / again.per_step, 1.3, False)]

    out += ["", f"## Agreement with the user's numbering after {CHECK_STEPS} steps (tolerance {TOLERANCE:g} m)", ""]
    out += harness.table(["scene", "beside", ">max node distance (m)", "check"], checks)
    out += ["", "## Node orders (one thread)", "",
            "'x grid': the row's spring evaluations per second over cloth-256's in its own numbering.", ""]
    out += harness.table(["scene", ">nodes", ">springs", ">steps/run", ">time per step", ">springs/s", ">x grid"],
                         speed)
    out += ["", "## Call costs (cloth-256, one thread)", "", "'x one call': time per step over one s.step(h, n)'s.", ""]
    out += harness.table(["how", ">steps/run", ">time per step", ">x one call"], costs)
    out += ["", "## Targets", "", *(f"- {line}" for line in targets)]
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
