"""This checkout's msprings beside a previous version, in one run: the msprings rows of the core and
contact suites, timed for both builds taking turns.

    python benchmarks/compare.py --against main          # or HEAD~1, a tag, a commit
    python benchmarks/compare.py --against HEAD~1 --quick

The given git ref is exported (``git archive``) into a temporary directory and its extension built
there (``python setup.py build_ext --inplace``); this checkout must be built in place already.  Each
build runs in its own worker process, which builds the scenes once (the tablecloths from the same
settled state, settled here with this checkout's build) and then, on each request, times every row once
from a fresh copy; the requests alternate between the two workers, so slow spells of a shared machine
fall on both alike.  Step counts are calibrated once, on this checkout, and used by both.  The report
gives each row's median steps/s for both builds and their ratio (above 1: this checkout is faster).
Exit status 1 when the ref cannot be exported or built.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package
    from . import bench_contact, bench_core, harness
except ImportError:  # as a script
    import bench_contact
    import bench_core
    import harness

CLOTHS, QUICK_CLOTHS = (64, 256), (64,)
TABLECLOTHS, QUICK_TABLECLOTHS = bench_contact.SIZES, (40,)


def rows(msprings: Any, settled: Path, quick: bool) -> list[harness.Contender]:
    """The msprings rows of the core and contact suites, named by scene."""
    found: list[tuple[str, list[harness.Contender]]] = []
    for n in QUICK_CLOTHS if quick else CLOTHS:
        found.append((f"cloth-{n}", bench_core.msprings_rows(msprings, harness.cloth(n))))
    with np.load(settled) as states:
        for n in QUICK_TABLECLOTHS if quick else TABLECLOTHS:
            base = msprings.scenes.tablecloth(n)
            base.x[:] = states[f"x{n}"]
            base.v[:] = states[f"v{n}"]
            found.append((f"tablecloth-{n}", bench_contact.msprings_rows(base)))
    for scene, scene_rows in found:
        for row in scene_rows:
            row.name = f"{scene}: {row.name}"
            row.steps_like = row.steps_like and f"{scene}: {row.steps_like}"
    return [row for _, scene_rows in found for row in scene_rows]


def worker(root: Path, settled: Path, quick: bool) -> int:
    """Serves timing requests on stdin, one JSON line each, for the build at ``root``:
    ``{"calibrate": seconds}`` answers the step count of every row, ``{"steps": {...}}`` times every
    row once with those counts and answers seconds per run."""
    msprings = harness.import_msprings(root)
    if Path(msprings.__file__).resolve().parent != root / "msprings":
        raise RuntimeError(f"imported msprings from {msprings.__file__}, not from {root}")
    timed = {row.name: row for row in rows(msprings, settled, quick)}
    print(json.dumps({"build": harness.build_line(msprings), "rows": list(timed)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "calibrate" in request:
            answer = {}
            for name, row in timed.items():
                row.steps = (timed[row.steps_like].steps if row.steps_like
                             else harness.calibrate(row, request["calibrate"]))
                answer[name] = row.steps
        else:
            answer = {}
            for name, steps in request["steps"].items():
                row = timed[name]
                state = row.fresh()
                row.run(state, 1)
                start = time.perf_counter()
                row.run(state, steps)
                answer[name] = time.perf_counter() - start
        print(json.dumps(answer), flush=True)
    return 0


class Worker:
    """A worker process for one build."""

    def __init__(self, root: Path, settled: Path, quick: bool) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(root), "--settled", str(settled)]
        # NumPy's BLAS threads would spin beside the timed steps on a small machine; nothing here uses BLAS
        environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen(command + (["--quick"] if quick else []), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=environment)
        self.hello = self.read()

    def read(self) -> Any:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("a worker ended early (see its error above)")
        return json.loads(line)

    def ask(self, request: dict[str, Any]) -> Any:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def export_and_build(ref: str, directory: Path) -> str:
    """The tree of ``ref`` in ``directory``, with its extension built in place; returns its commit."""
    commit = subprocess.run(["git", "-C", str(harness.ROOT), "rev-parse", "--short", ref], capture_output=True,
                            text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(harness.ROOT), "archive", "--format=tar", ref],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=directory,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building {ref} failed:\n{done.stderr}")
    return commit


def settle(path: Path, quick: bool) -> None:
    """The settled tablecloths' positions and velocities, stepped with this checkout's build."""
    msprings = harness.import_msprings()
    states = {}
    for n in QUICK_TABLECLOTHS if quick else TABLECLOTHS:
        system = bench_contact.settled(msprings, n)
        states[f"x{n}"], states[f"v{n}"] = np.array(system.x), np.array(system.v)
    np.savez(path, **states)


def main(argv: Sequence[str] | None = None) -> int:
    """Builds the ref, runs both workers taking turns, prints the Markdown report."""
    def options(parser: Any) -> None:
        parser.add_argument("--against", help="git ref of the previous version (a branch, tag or commit)")
        parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
        parser.add_argument("--settled", type=Path, help=argparse.SUPPRESS)

    args = harness.parse_args(__doc__.splitlines()[0], argv, options, repeats=(7, 3))
    if args.worker:
        return worker(args.worker.resolve(), args.settled, args.quick)
    if not args.against:
        print("error: --against REF is required", file=sys.stderr)
        return 2
    seconds = 0.1 if args.quick else 0.5
    with tempfile.TemporaryDirectory(prefix="msprings-compare-") as directory:
        previous = Path(directory) / "previous"
        previous.mkdir()
        try:
            commit = export_and_build(args.against, previous)
        except (subprocess.CalledProcessError, RuntimeError) as error:
            print(f"error: cannot export or build {args.against}: {error}", file=sys.stderr)
            return 1
        settled = Path(directory) / "settled.npz"
        settle(settled, args.quick)
        builds = {"previous": Worker(previous, settled, args.quick), "this": Worker(harness.ROOT, settled, args.quick)}
        steps = builds["this"].ask({"calibrate": seconds})
        runs: dict[str, dict[str, list[float]]] = {build: {name: [] for name in steps} for build in builds}
        for round_index in range(args.repeats):
            order = ("previous", "this") if round_index % 2 == 0 else ("this", "previous")
            for build in order:
                for name, elapsed in builds[build].ask({"steps": steps}).items():
                    runs[build][name].append(elapsed)
        hello = {build: process.hello["build"] for build, process in builds.items()}
        for process in builds.values():
            process.close()
    out = harness.header(f"This checkout beside {args.against}: msprings rows of the core and contact suites",
                         harness.import_msprings(), args.quick, [
        f"previous: {args.against} = {commit}: {hello['previous'].split(' (')[0]}, "
        f"{'AVX2' if 'AVX2' in hello['previous'].replace('no AVX2', '') else 'no AVX2'}",
        f"this: {hello['this']}",
        f"Each build in its own process; median of {args.repeats} runs per row and build, the builds taking turns "
        "(previous first in even rounds); the same steps per run for both, calibrated on this checkout"])
    table = []
    for name, count in steps.items():
        before = count / statistics.median(runs["previous"][name])
        after = count / statistics.median(runs["this"][name])
        table.append((name, f"{count:,}", harness.rate(before), harness.rate(after), f"{after / before:.2f}"))
    out += ["", *harness.table(["row", ">steps/run", f">steps/s, {args.against}", ">steps/s, this checkout",
                                ">this / previous"], table)]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
