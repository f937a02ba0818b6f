"""Ctrl-C inside a long step call: a step that would run for hours (a huge iteration count, a
huge number of steps) raises KeyboardInterrupt within a fraction of a second of SIGINT, on one
worker and on two, and leaves the system as a diverged call does.

Each case runs in a subprocess, so a signal that came too early or too late cannot reach the
test runner.  A call of one step is left exactly as it was before the call.  A call of many
steps keeps its completed steps for now (the state of its last completed step, bit for bit
what that many steps give); once a diverged call rolls back to the start of the call, that is
zero steps and the same check holds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from package_path import python_path

SCRIPT = r"""
import json, signal, sys, threading, time
import numpy as np
import msprings
from msprings import scenes

integrator, threads, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
DT = 1e-3
# two workers step networks of 10,000 springs or more
s = scenes.cloth(10 if threads == 1 else 48, integrator=integrator)
s.threads = threads
s.step(DT, 2)
reference = s.copy()
huge = 2**31 - 1
if integrator in ("xpbd", "projective"):
    s.iterations = huge
elif integrator == "implicit_euler":
    s.newton_max_iter = s.cg_max_iter = huge
    s.newton_tol = s.cg_tol = 1e-300
n = 1 if integrator in ("xpbd", "projective", "implicit_euler") else 10**15
if how == "file":  # the iteration count comes from a model file
    import os, tempfile
    from msprings import io as model_io
    folder = tempfile.mkdtemp()
    path = model_io.save(s, os.path.join(folder, "model.npz"))
    with np.load(path) as archive:
        assert int(archive["option_iterations"]) == huge
    s = model_io.load(path)


def state(system):
    return [system.x.tobytes().hex(), system.v.tobytes().hex(), float(system.t).hex(), int(system.steps),
            [float(value).hex() for value in system.ledger()]]


before = state(s)
main = threading.main_thread().ident
timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
out = reference.copy().run(DT, 2) if how == "run" else None
start = time.perf_counter()
timer.start()
try:
    if how == "run":
        s.run(DT, 2, out=out)
    else:
        s.step(DT, n)
    raised = "nothing"
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
seconds = time.perf_counter() - start
timer.join()
taken = s.steps - 2
if taken > 0:
    reference.step(DT, taken)
result = {"raised": raised, "seconds": seconds, "unchanged": state(s) == before, "taken": taken,
          "as_stepped": [s.x.tobytes(), s.v.tobytes(), float(s.t).hex()] ==
                        [reference.x.tobytes(), reference.v.tobytes(), float(reference.t).hex()],
          "workers": s.workers}
if out is not None:
    result["records"] = [int(count) for count in out.steps]
    result["first_record"] = bool(np.array_equal(out.positions[0], reference.x))
s.iterations = 0
if integrator == "implicit_euler":
    s.newton_max_iter, s.cg_max_iter, s.newton_tol, s.cg_tol = 50, 1000, 1e-8, 1e-2
s.step(DT)  # the system steps on afterwards
result["steps_after"] = int(s.steps)
print(json.dumps(result))
"""


def interrupted(integrator: str, threads: int, how: str = "step") -> dict:
    """Runs SCRIPT in a subprocess and returns what it reports."""
    env = dict(os.environ, PYTHONPATH=python_path())
    done = subprocess.run([sys.executable, "-c", SCRIPT, integrator, str(threads), how], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("integrator", ["xpbd", "projective", "implicit_euler"])
def test_iterations_for_hours_interrupted(integrator: str, threads: int) -> None:
    result = interrupted(integrator, threads)
    assert result["raised"] == "KeyboardInterrupt"
    assert result["seconds"] < 3.0  # SIGINT comes after 0.3 s; the call would take hours
    # projective dynamics steps on one worker whatever threads says
    assert result["workers"] == (1 if integrator == "projective" else threads)
    assert result["taken"] == 0 and result["unchanged"]
    assert result["steps_after"] == 3


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("integrator", ["symplectic_euler", "rk4"])
def test_steps_for_hours_interrupted(integrator: str, threads: int) -> None:
    result = interrupted(integrator, threads)
    assert result["raised"] == "KeyboardInterrupt"
    assert result["seconds"] < 3.0
    assert result["workers"] == threads
    # the state of a completed step (none, once a stopped call rolls back to its start)
    assert result["as_stepped"]


def test_model_file_with_huge_iterations_interrupted() -> None:
    """A model file may hold option_iterations = 2**31 - 1 (the setter's range): a step of the
    system it loads stops at Ctrl-C."""
    result = interrupted("xpbd", 1, "file")
    assert result["raised"] == "KeyboardInterrupt"
    assert result["seconds"] < 3.0
    assert result["taken"] == 0 and result["unchanged"]


def test_run_interrupted_keeps_its_records() -> None:
    result = interrupted("xpbd", 1, "run")
    assert result["raised"] == "KeyboardInterrupt"
    assert result["seconds"] < 3.0
    assert result["taken"] == 0 and result["unchanged"]
    # out keeps the record made (the start) and marks the others as not made
    assert result["records"] == [2, -1, -1] and result["first_record"]


FACTOR_SCRIPT = r"""
import json, signal, threading, time
from msprings import scenes

# a jelly cube of 32,768 nodes: projective dynamics' first step factors its matrix for seconds
s = scenes.jelly_cube(32, integrator="projective")
before = [s.x.tobytes(), s.v.tobytes(), float(s.t).hex(), int(s.steps)]
timer = threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
start = time.perf_counter()
timer.start()
try:
    s.step(1e-3)
    raised = "nothing"
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
seconds = time.perf_counter() - start
timer.join()
print(json.dumps({"raised": raised, "seconds": seconds,
                  "unchanged": [s.x.tobytes(), s.v.tobytes(), float(s.t).hex(), int(s.steps)] == before}))
"""


def test_factorisation_interrupted() -> None:
    """Ctrl-C stops projective dynamics while it factors its matrix (12 s here), before any step."""
    env = dict(os.environ, PYTHONPATH=python_path())
    done = subprocess.run([sys.executable, "-c", FACTOR_SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["raised"] == "KeyboardInterrupt"
    assert result["seconds"] < 3.0
    assert result["unchanged"]
