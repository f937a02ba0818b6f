"""Contact benchmark: msprings' step with colliders beside the NumPy step with the same contact rule, on
the tablecloth draped over its round table (``msprings.scenes.tablecloth(n)``, n = 40 and 80).

The cloth falls for 2,500 untimed steps of h = 2 ms (the 5 s that ``python -m msprings run tablecloth``
simulates) and drapes over the table; every row starts from a fresh copy of that settled state:

* msprings, colliders: ``s.step(h, n)`` with ``s.threads = 1``;
* msprings, colliders removed: the same after ``s.remove_collider`` on both colliders; the difference
  is what contact costs msprings per step;
* NumPy, contact and NumPy, no contact: :class:`harness.NumpyStep` with and without the contact rule
  (static colliders in the system's order: pushed out to ``thickness`` along the nearest surface's
  normal, restitution and Coulomb friction on approaching nodes, no creep for nodes friction holds);
* msprings, colliders, all cores: the first row with ``s.threads = 0``.

msprings also sweeps each node's path through a collider's contact zone; the NumPy step leaves that out,
which changes nothing while no node moves half the thickness in one step (the report shows the largest
displacement).  Checks: from the settled state, 100 steps of each NumPy row agree with the matching
msprings row to 1e-9 m at every node, and at least 20 % of the nodes are in contact when settled.
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

H = 2e-3  # s
SIZES = (40, 80)
SETTLE_STEPS = 2500
CHECK_STEPS = 100
TOLERANCE = 1e-9  # m
MIN_CONTACT_FRACTION = 0.2
WITH, WITHOUT = "msprings, colliders", "msprings, colliders removed"
NUMPY_WITH, NUMPY_WITHOUT = "NumPy, contact", "NumPy, no contact"
ALL_CORES = "msprings, colliders, all cores"
PEER = {WITH: NUMPY_WITH, WITHOUT: NUMPY_WITHOUT, NUMPY_WITH: NUMPY_WITH, NUMPY_WITHOUT: NUMPY_WITHOUT,
        ALL_CORES: NUMPY_WITH}


def settled(msprings: Any, n: int) -> Any:
    """tablecloth-n after SETTLE_STEPS steps on one thread."""
    system = harness.set_threads(msprings.scenes.tablecloth(n), 1)
    system.step(H, SETTLE_STEPS)
    return system


def without_colliders(system: Any) -> Any:
    """A copy of the system with every collider removed, on one thread."""
    copy = harness.set_threads(system.copy(), 1)
    for collider in copy.colliders:
        copy.remove_collider(collider)
    return copy


def msprings_rows(base: Any) -> list[harness.Contender]:
    """The msprings rows, one thread with and without colliders then all cores with them."""
    def run(system: Any, n: int) -> None:
        system.step(H, n)

    return [harness.Contender(WITH, lambda: harness.set_threads(base.copy(), 1), run),
            harness.Contender(WITHOUT, lambda: without_colliders(base), run, WITH),
            harness.Contender(ALL_CORES, lambda: harness.set_threads(base.copy(), 0), run, WITH)]


def numpy_rows(base: Any, name: str) -> list[harness.Contender]:
    """The NumPy rows, with and without the contact rule."""
    net = harness.network_of(base, name)
    return [harness.Contender(NUMPY_WITH, lambda: harness.State.of(base),
                              harness.NumpyStep(net, H, harness.contacts_of(base))),
            harness.Contender(NUMPY_WITHOUT, lambda: harness.State.of(base), harness.NumpyStep(net, H), NUMPY_WITH)]


def check(rows: dict[str, harness.Contender]) -> tuple[list[tuple[str, str, float]], float, float]:
    """After CHECK_STEPS steps from the settled state: the largest node distance of each NumPy row from
    its msprings row, how far contact moves the nodes (colliders against removed), and the largest
    displacement of a node in one step of the NumPy run with contact (m)."""
    ends = {}
    largest = 0.0
    for name in (WITH, WITHOUT, NUMPY_WITHOUT):
        state = rows[name].fresh()
        rows[name].run(state, CHECK_STEPS)
        ends[name] = np.array(state.x)
    state = rows[NUMPY_WITH].fresh()
    for _ in range(CHECK_STEPS):
        start = state.x.copy()
        rows[NUMPY_WITH].run(state, 1)
        largest = max(largest, harness.largest_distance(state.x, start))
    ends[NUMPY_WITH] = state.x
    distances = [(NUMPY_WITH, WITH, harness.largest_distance(ends[NUMPY_WITH], ends[WITH])),
                 (NUMPY_WITHOUT, WITHOUT, harness.largest_distance(ends[NUMPY_WITHOUT], ends[WITHOUT]))]
    return distances, harness.largest_distance(ends[WITH], ends[WITHOUT]), largest


def in_contact(system: Any) -> int:
    """Nodes within thickness + 1e-6 m of a collider (a node the rule pushed sits at the thickness)."""
    x = np.asarray(system.x)
    touching = np.zeros(len(x), dtype=bool)
    for rule in harness.contacts_of(system):
        touching[rule.shape.contacts(x, rule.thickness + 1e-6)[0]] = True
    return int(touching.sum())


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv)
    allocator = harness.keep_freed_memory()
    msprings = harness.import_msprings()
    seconds = 0.05 if args.quick else 0.5
    out = harness.header("Contact cost per step: tablecloth", msprings, args.quick, [
        f"Symplectic Euler, h = {H:g} s, after {SETTLE_STEPS} untimed steps; median of {args.repeats} runs per "
        "row, each on a fresh copy of the settled state after one untimed step, the rows taking turns",
        f"NumPy temporaries: {allocator}"])
    checks, speed, cost, passed = [], [], [], True
    for n in SIZES:
        name = f"tablecloth-{n}"
        base = settled(msprings, n)
        contacts = in_contact(base)
        dense = contacts >= MIN_CONTACT_FRACTION * base.n_nodes
        rows = {row.name: row for row in msprings_rows(base) + numpy_rows(base, name)}
        distances, contact_effect, largest = check(rows)
        thickness = harness.contacts_of(base)[0].thickness
        passed &= dense and all(distance <= TOLERANCE for *_, distance in distances)
        checks += [(name, row, reference, f"{distance:.1e}", harness.verdict(distance <= TOLERANCE))
                   for row, reference, distance in distances]
        checks.append((name, WITH, WITHOUT, f"{contact_effect:.1e}", "for scale: what contact changes"))
        checks.append((name, "nodes in contact when settled", f"{contacts:,} of {base.n_nodes:,}",
                       f"{contacts / base.n_nodes:.0%}", harness.verdict(dense)))
        checks.append((name, "largest node displacement in one step", "thickness", f"{largest / thickness:.2f} x",
                       "swept test inactive" if largest < 0.5 * thickness else "swept test may act"))
        timed = list(rows.values())
        harness.time_interleaved(timed, seconds, args.repeats)
        for row in timed:
            speed.append((name, f"{base.n_springs:,}", row.name, f"{row.steps:,}", harness.rate(row.rate),
                          harness.duration(row.per_step), f"{rows[PEER[row.name]].per_step / row.per_step:.2f}"))
        ours = rows[WITH].per_step - rows[WITHOUT].per_step
        theirs = rows[NUMPY_WITH].per_step - rows[NUMPY_WITHOUT].per_step
        cost.append((name, f"{contacts:,}", harness.duration(ours), f"{ours / rows[WITH].per_step:.0%}",
                     harness.duration(theirs), f"{theirs / rows[NUMPY_WITH].per_step:.0%}",
                     f"{theirs / ours:.2f}" if ours > 0 else "not measurable"))
    out += ["", f"## Checks after {CHECK_STEPS} steps from the settled state (tolerance {TOLERANCE:g} m)", ""]
    out += harness.table(["scene", "row", "compared with", ">max node distance (m)", "check"], checks)
    out += ["", "## Speed", "", "'x NumPy': the NumPy row with the same contact setting over this row, in time per "
            "step (above 1: faster than NumPy).", ""]
    out += harness.table(["scene", ">springs", "row", ">steps/run", ">steps/s", ">time per step", ">x NumPy"], speed)
    out += ["", "## Contact cost per step (with colliders minus without)", ""]
    out += harness.table(["scene", ">nodes in contact", ">msprings", ">share of its step", ">NumPy",
                          ">share of its step", ">NumPy / msprings"], cost)
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
