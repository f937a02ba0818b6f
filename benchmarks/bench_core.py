"""Core stepping benchmark: msprings on one thread and on all cores beside a plain C loop and the
vectorised NumPy step, on cloth-64, cloth-256 (throughput) and chain-2, chain-11 (per-call cost).

* msprings: ``s.step(h, n)`` with ``s.threads = 1`` and ``s.threads = 0`` (all online cores); on the
  chains also n separate ``s.step(h)`` calls from Python, with ``s.threads = 1`` and ``= 0`` (target: at
  most 1 us per call; the core count is read when a state is made, not per call).
* plain C loop: the single-threaded loop below, compiled at run time with ``cc -O3 -shared -fPIC``
  (``$CC`` if set; no ``-march=native``) and called through ctypes, n steps per call.
* NumPy: :class:`harness.NumpyStep`, one vectorised step per Python iteration.

Before timing, every implementation runs 100 steps from the initial state and must agree with
single-threaded msprings to 1e-9 m at every node; two all-core msprings runs of the cloths must end
bitwise identical.  Exit status 1 when a check fails or the C loop does not compile.
"""
from __future__ import annotations

import ctypes
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

H = 1e-3  # s
CHECK_STEPS = 100
TOLERANCE = 1e-9  # m
REPEAT_STEPS = 300
MSPRINGS_ONE, MSPRINGS_ALL = "msprings, 1 thread", f"msprings, all {harness.CORES} cores"
MSPRINGS_CALLS = "msprings, one s.step(h) per call"
MSPRINGS_CALLS_ALL = "msprings, one s.step(h) per call, threads = 0"
PLAIN_C, NUMPY = "plain C loop", "NumPy"
C_FLAGS = ("-O3", "-shared", "-fPIC")
#: Networks with at least this many springs are timed for throughput (one thread and all cores);
#: smaller ones for the cost of a call from Python.
THROUGHPUT_SPRINGS = 1000

PLAIN_C_SOURCE = r"""
#include <math.h>
#include <stdint.h>

/* Symplectic Euler on a damped mass-spring network, one spring at a time.
   x, v, f: (nnode x 3); springs: (nspring x 2); mass, inv_mass (0 when pinned): (nnode);
   rest, k, c: (nspring); gravity: (3). */
void run(int64_t nnode, int64_t nspring, double *x, double *v, double *f, const double *mass,
         const double *inv_mass, const int32_t *springs, const double *rest, const double *k,
         const double *c, const double *gravity, double h, int64_t nsteps)
{
    for (int64_t step = 0; step < nsteps; ++step) {
        for (int64_t a = 0; a < nnode; ++a)
            for (int d = 0; d < 3; ++d) f[3 * a + d] = mass[a] * gravity[d];
        for (int64_t s = 0; s < nspring; ++s) {
            const int64_t i = springs[2 * s], j = springs[2 * s + 1];
            const double dx = x[3 * j] - x[3 * i], dy = x[3 * j + 1] - x[3 * i + 1],
                         dz = x[3 * j + 2] - x[3 * i + 2];
            const double length2 = dx * dx + dy * dy + dz * dz;
            if (length2 <= 1e-24) continue; /* no direction: no force */
            const double length = sqrt(length2), inv_length = 1.0 / length;
            const double nx = dx * inv_length, ny = dy * inv_length, nz = dz * inv_length;
            const double closing = (v[3 * j] - v[3 * i]) * nx + (v[3 * j + 1] - v[3 * i + 1]) * ny
                                 + (v[3 * j + 2] - v[3 * i + 2]) * nz;
            const double tension = k[s] * (length - rest[s]) + c[s] * closing;
            f[3 * i] += tension * nx; f[3 * i + 1] += tension * ny; f[3 * i + 2] += tension * nz;
            f[3 * j] -= tension * nx; f[3 * j + 1] -= tension * ny; f[3 * j + 2] -= tension * nz;
        }
        for (int64_t a = 0; a < nnode; ++a) {
            if (inv_mass[a] == 0.0) continue; /* pinned */
            for (int d = 0; d < 3; ++d) {
                v[3 * a + d] += h * f[3 * a + d] * inv_mass[a];
                x[3 * a + d] += h * v[3 * a + d];
            }
        }
    }
}
"""


def compile_plain_c(directory: Path) -> tuple[Callable[..., None], str]:
    """The plain C loop, compiled into ``directory``, and the command that built it."""
    source, library = directory / "plain_loop.c", directory / "plain_loop.so"
    source.write_text(PLAIN_C_SOURCE)
    command = [*shlex.split(os.environ.get("CC", "cc")), *C_FLAGS, "-o", str(library), str(source), "-lm"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"compiling the plain C loop failed: {shlex.join(command)}\n{done.stderr}")
    function = ctypes.CDLL(str(library)).run
    doubles = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
    function.argtypes = [ctypes.c_int64, ctypes.c_int64, doubles, doubles, doubles, doubles, doubles,
                         np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS"), doubles, doubles, doubles,
                         doubles, ctypes.c_double, ctypes.c_int64]
    function.restype = None
    return function, shlex.join(command[:-4])  # without the file names


def plain_c_stepper(function: Callable[..., None], net: harness.Network) -> Callable[[harness.State, int], None]:
    """n steps of the plain C loop on a peer state of the network."""
    force = np.zeros_like(net.positions)
    inv_mass = net.inv_mass
    gravity = np.array(net.gravity)

    def run(state: harness.State, n: int) -> None:
        function(net.n_nodes, net.n_springs, state.x, state.v, force, net.mass, inv_mass, net.springs, net.rest,
                 net.k, net.c, gravity, H, n)

    return run


def batched(system: Any, n: int) -> None:
    """n steps in one ``s.step(h, n)`` call."""
    system.step(H, n)


def msprings_rows(msprings: Any, net: harness.Network) -> list[harness.Contender]:
    """msprings on one thread, and on all cores (as many steps) when the network is large enough
    for the worker threads, else through n separate ``s.step(h)`` calls."""
    one = harness.build_system(msprings, net, threads=1)
    if net.n_springs >= THROUGHPUT_SPRINGS:
        return [harness.Contender(MSPRINGS_ONE, one.copy, batched),
                harness.Contender(MSPRINGS_ALL, harness.build_system(msprings, net, threads=0).copy, batched,
                                  MSPRINGS_ONE)]

    def calls(system: Any, n: int) -> None:
        for _ in range(n):
            system.step(H)

    # threads = 0 (all online cores, the default): the core count is the state's, read once
    every = harness.build_system(msprings, net, threads=0)
    return [harness.Contender(MSPRINGS_ONE, one.copy, batched), harness.Contender(MSPRINGS_CALLS, one.copy, calls),
            harness.Contender(MSPRINGS_CALLS_ALL, every.copy, calls)]


def contenders(msprings: Any, net: harness.Network, plain_c: Callable[..., None]) -> list[harness.Contender]:
    """The rows of one scene; the C loop takes as many steps as msprings on one thread."""
    def fresh() -> harness.State:
        return harness.State.of(net)

    return [*msprings_rows(msprings, net),
            harness.Contender(PLAIN_C, fresh, plain_c_stepper(plain_c, net), MSPRINGS_ONE),
            harness.Contender(NUMPY, fresh, harness.NumpyStep(net, H))]


def check(rows: Sequence[harness.Contender]) -> list[tuple[str, float]]:
    """Largest node distance (m) of every row from single-threaded msprings after CHECK_STEPS steps."""
    states = []
    for row in rows:
        state = row.fresh()
        row.run(state, CHECK_STEPS)
        states.append(np.array(state.x))
    return [(row.name, harness.largest_distance(x, states[0])) for row, x in zip(rows[1:], states[1:])]


def repeatable(msprings: Any, net: harness.Network, steps: int) -> bool:
    """Whether two all-core runs end with bitwise the same positions, velocities and forces."""
    runs = []
    for _ in range(2):
        system = harness.build_system(msprings, net, threads=0)
        system.step(H, steps)
        runs.append([np.array(system.x), np.array(system.v), np.array(system.f)])
    return all(np.array_equal(a, b) for a, b in zip(*runs))


def target(what: str, ratio: float, least: float) -> str:
    """A target line: the ratio, the target and whether it is met."""
    return f"{what} = {ratio:.2f} (target >= {least:g}): {'met' if ratio >= least else 'MISSED'}"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    args = harness.parse_args(__doc__.splitlines()[0], argv)
    allocator = harness.keep_freed_memory()
    msprings = harness.import_msprings()
    seconds = 0.05 if args.quick else 1.0
    nets = [harness.cloth(64), harness.cloth(256), harness.chain(2), harness.chain(11)]
    with tempfile.TemporaryDirectory(prefix="msprings-bench-") as directory:
        try:
            plain_c, command = compile_plain_c(Path(directory))
        except (OSError, RuntimeError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        out = harness.header("msprings core benchmark", msprings, args.quick, [
            f"C loop built with `{command}`; NumPy temporaries: {allocator}",
            f"Symplectic Euler, h = {H:g} s; median of {args.repeats} runs per row, each on a fresh copy of the "
            "initial state after one untimed step, the rows taking turns"])
        checks, speed, targets, passed = [], [], [], True
        for net in nets:
            rows = contenders(msprings, net, plain_c)
            for name, distance in check(rows):
                passed &= distance <= TOLERANCE
                checks.append((net.name, name, f"{distance:.1e}", harness.verdict(distance <= TOLERANCE)))
            if net.n_springs >= THROUGHPUT_SPRINGS:
                same = repeatable(msprings, net, 20 if args.quick else REPEAT_STEPS)
                passed &= same
                checks.append((net.name, "two all-core msprings runs", "bitwise" if same else "differ",
                               harness.verdict(same)))
            harness.time_interleaved(rows, seconds, args.repeats)
            by_name = {row.name: row for row in rows}
            for row in rows:
                speed.append((net.name, f"{net.n_springs:,}", row.name, f"{row.steps:,}", harness.rate(row.rate),
                              harness.duration(row.per_step), f"{row.rate / by_name[PLAIN_C].rate:.2f}",
                              f"{row.rate / by_name[NUMPY].rate:.1f}", harness.vector(row.last.x[net.watched])))
            one = by_name[MSPRINGS_ONE].rate
            if MSPRINGS_ALL in by_name:
                every = by_name[MSPRINGS_ALL].rate
                targets += [target(f"{net.name}: 1 thread / plain C loop", one / by_name[PLAIN_C].rate, 1.0),
                            target(f"{net.name}: 1 thread / NumPy", one / by_name[NUMPY].rate, 10.0),
                            target(f"{net.name}: all cores / NumPy", every / by_name[NUMPY].rate, 10.0),
                            target(f"{net.name}: all cores / 1 thread (on 2 cores)", every / one, 1.7)]
            else:
                for name, threads in ((MSPRINGS_CALLS, 1), (MSPRINGS_CALLS_ALL, 0)):
                    call = by_name[name].per_step * 1e6
                    targets.append(f"{net.name}: one `s.step(h)` call, threads = {threads}: {call:.3f} us "
                                   f"(target <= 1 us): {'met' if call <= 1.0 else 'MISSED'}")
    out += ["", f"## Agreement with {MSPRINGS_ONE} after {CHECK_STEPS} steps (tolerance {TOLERANCE:g} m)", ""]
    out += harness.table(["scene", "implementation", ">max node distance (m)", "check"], checks)
    out += ["", "## Speed", "", "'x' columns: the row's rate over that peer's on the same scene (above 1: faster).", ""]
    out += harness.table(["scene", ">springs", "implementation", ">steps/run", ">steps/s", ">time per step",
                          ">x plain C loop", ">x NumPy", "watched node after the last run (m)"], speed)
    out += ["", "## Targets", "", *(f"- {line}" for line in targets)]
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
