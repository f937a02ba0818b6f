"""Implicit solver benchmark: msprings' implicit Euler beside a SciPy backward-Euler Newton solver on
the stiff chain (100 nodes, k = 1e5 N/m, 0.001 kg, h = 1/60 s: about 167 times its explicit critical step).

Rows, each run for 300 steps (60 with --quick) from rest:

* msprings, converged: ``integrator="implicit_euler"`` with default settings (Newton to ``newton_tol``,
  each Newton system by conjugate gradients, preconditioned by a sparse Cholesky factor where it stays
  sparse and by 3x3 block Jacobi elsewhere);
* msprings, linearised: ``newton_max_iter = 1`` (Baraff and Witkin's one linear solve per step);
* SciPy, converged: Newton's method on g(dv) = M dv - h f(x + h (v + dv), v + dv) = 0 over the free nodes,
  the Jacobian M - h df/dv - h^2 df/dx assembled as a sparse matrix each iteration and solved with
  ``scipy.sparse.linalg.spsolve``, stopped by msprings' criterion (|g| <= newton_tol x the largest of
  |M dv|, |h f| and the weight impulse); forces from :class:`harness.NumpyStep`;
* SciPy, linearised: one such Newton iteration per step.

Checks: every run stays finite and within 1.05 chain lengths of the pin, and the converged rows agree
(largest node distance after the run at most 1e-6 m: both solve the same equations to newton_tol).
The linearised rows differ by design (msprings clamps the compressed springs' transverse stiffness
and stops CG at ``cg_tol``), so their distance is shown but not checked.  Exit status 1 when a check fails.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1.0 / 60.0  # s
STEPS, QUICK_STEPS = 300, 60
BOUND = 1.05  # chain lengths
TOLERANCE = 1e-6  # m, converged rows


def msprings_run(msprings: Any, net: harness.Network, newton_max_iter: int | None) -> harness.Contender:
    """A msprings row: implicit Euler, converged or with ``newton_max_iter`` iterations."""
    def fresh() -> Any:
        system = harness.build_system(msprings, net, integrator="implicit_euler")
        if newton_max_iter is not None:
            system.newton_max_iter = newton_max_iter
        return system

    def run(system: Any, n: int) -> None:
        system.step(H, n)

    name = "msprings, " + ("converged" if newton_max_iter is None else "linearised (newton_max_iter = 1)")
    return harness.Contender(name, fresh, run)


def record(row: harness.Contender, steps: int, bound: float) -> tuple[np.ndarray, str, bool]:
    """Steps a fresh state one step at a time: its end positions, its solver work per step (mean), and
    whether it stayed finite and within ``bound`` (m) of the pin."""
    state = row.fresh()
    newton, cg = [], []
    pin = np.array(state.x[0])
    sound = True
    for _ in range(steps):
        try:
            row.run(state, 1)
        except FloatingPointError:  # msprings.DivergenceError: the state is as before the failed step
            return np.array(state.x), "diverged", False
        if isinstance(row.run, harness.ScipyNewton):
            newton.append(row.run.solves[-1])
        else:
            newton.append(state.solver_stats["newton_iterations"])
            cg.append(state.solver_stats["cg_iterations"])
        x = np.array(state.x)
        sound &= bool(np.isfinite(x).all() and np.linalg.norm(x - pin, axis=1).max() <= bound)
    work = f"{np.mean(newton):.1f} Newton iterations, " + (f"{np.mean(cg):.0f} CG iterations" if cg
                                                           else "one spsolve each")
    return np.array(state.x), work, sound


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv)
    msprings = harness.import_msprings()
    net = harness.stiff_chain()
    steps = QUICK_STEPS if args.quick else STEPS
    bound = BOUND * float(np.linalg.norm(net.positions[-1] - net.positions[0]))
    critical = harness.build_system(msprings, net).critical_dt("symplectic_euler")
    defaults = harness.build_system(msprings, net, integrator="implicit_euler")  # msprings' Newton settings
    tol, max_newton = float(defaults.newton_tol), int(defaults.newton_max_iter)
    rows = [msprings_run(msprings, net, None), msprings_run(msprings, net, 1),
            harness.Contender("SciPy, converged", lambda: harness.State.of(net), harness.ScipyNewton(net, H, tol, max_newton)),
            harness.Contender("SciPy, linearised (one Newton iteration)", lambda: harness.State.of(net),
                              harness.ScipyNewton(net, H, tol, 1))]
    with warnings.catch_warnings():  # a CG solve at its cap shows in the iteration counts
        warnings.simplefilter("ignore", getattr(msprings, "SolverWarning", RuntimeWarning))
        records = [record(row, steps, bound) for row in rows]
        passed = all(sound for _, _, sound in records)
        for row in rows:
            row.steps = steps
        if passed:  # an unsound run is reported, not timed
            harness.time_interleaved(rows, 0.0, args.repeats)
    ends = {row.name: end for row, (end, _, _) in zip(rows, records)}
    out = harness.header("Implicit Euler: msprings beside SciPy (spsolve) on the stiff chain", msprings, args.quick, [
        f"stiff-chain: {net.n_nodes} nodes, k = {net.k[0]:g} N/m, {net.mass[0]:g} kg, c = 0, node 0 pinned, "
        f"gravity on; h = 1/60 s = {H / critical:.0f} x the explicit critical step ({critical:.3g} s)",
        f"Each row: {steps} steps from rest ({steps * H:g} s simulated), median of {args.repeats} runs, "
        f"the rows taking turns; newton_tol = {tol:g} (msprings' default) for both"])
    table = []
    for index, (row, (end, work, sound)) in enumerate(zip(rows, records)):
        reference = rows[index % 2].name  # the msprings row with the same Newton setting
        distance = harness.largest_distance(end, ends[reference])
        checked = row.name == "SciPy, converged"
        passed &= distance <= TOLERANCE or not checked
        timed = bool(row.seconds)
        table.append((row.name, harness.rate(row.rate) if timed else "-", f"{row.per_step * 1e3:.3g}" if timed else "-",
                      work, "yes" if sound else "**NO**",
                      f"{rows[index % 2].per_step / row.per_step:.2f}" if timed else "-",
                      f"{distance:.1e}" if index >= 2 else "-",
                      harness.verdict(distance <= TOLERANCE) if checked else "-"))
    out += ["", f"'x msprings' and 'distance': against the msprings row with the same Newton setting; the converged "
            f"rows must agree to {TOLERANCE:g} m.", ""]
    out += harness.table(["row", ">steps/s", ">ms per step", "solver work per step", "finite and bounded",
                          ">x msprings", ">max node distance (m)", "check"], table)
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
