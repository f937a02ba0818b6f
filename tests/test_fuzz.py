"""Property-based operation sequences on small systems (hypothesis).

Whatever a caller does -- steps with any dt and n, options set to any value, values written
through views, colliders added and removed, copies, resets, model files saved and loaded --
the only outcomes are: success; a ValueError, TypeError or KeyError with the system bitwise
unchanged; or a DivergenceError -- or a KeyboardInterrupt, sent to a step that runs too long
(an iteration count at the top of its range makes one step last hours) -- with the positions,
velocities, forces, time and step count bitwise as before the failing step.  A step that
returns leaves a finite state, and a model file loads back bitwise.  The networks may hold the
same spring many times.

Each test runs for a fixed time budget; with the CI environment variable set the examples are
derandomised, so a CI run is repeatable.  Where the atheris fuzzer is installed, a short
coverage-guided run mutates valid OBJ, model and trajectory files (tests/fuzz_targets.py).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import msprings  # noqa: E402
from msprings import io as model_io  # noqa: E402

from package_path import python_path  # noqa: E402  (pytest puts tests/ on the path)
from test_hardening import snapshot  # noqa: E402

BUDGET_SECONDS = 20.0
ROUND_EXAMPLES = 50
CI = bool(os.environ.get("CI"))
FUZZ_SETTINGS = settings(
    max_examples=ROUND_EXAMPLES * 20 if CI else ROUND_EXAMPLES,
    deadline=None,
    derandomize=CI,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def run_for_budget(test: Any, seconds: float = BUDGET_SECONDS) -> None:
    """Runs a hypothesis test in rounds of fresh random examples until ``seconds`` have passed
    (at least one round).  In CI it runs once, derandomised, with a fixed number of examples:
    the same examples on every run."""
    if CI:
        test()
        return
    end = time.monotonic() + seconds
    while True:
        test()
        if time.monotonic() > end:
            return


# ---- values from outside ----------------------------------------------------------------

reals = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-10.0, 10.0),
    st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1e300, -1e300, 1e200, 0.5, 1.0]),
)
integers = st.one_of(st.integers(-3, 70), st.sampled_from([2**31, 2**63, -(2**63) - 1, 2**70, 2**2000]))
texts = st.one_of(st.sampled_from(msprings.INTEGRATORS), st.text(max_size=12),
                  st.sampled_from(["rk4\x00junk", "rk4\ud800", "plane", "sphere\x00"]))
anything = st.one_of(reals, integers, texts, st.none(), st.booleans(), st.just([1.0, 2.0]),
                     st.just(1 + 2j), st.lists(reals, min_size=3, max_size=3))
vectors = st.lists(reals, min_size=3, max_size=3)

OPTIONS = ("integrator", "threads", "newton_max_iter", "cg_max_iter", "newton_tol", "cg_tol", "drag",
           "energy_loss", "strain_limit", "self_collision", "gravity", "wind", "air_density",
           "drag_coefficient", "lift_coefficient", "gust", "gust_frequency", "gust_wavenumber", "iterations",
           "chebyshev")
# iteration counts, small or at the top of the range (one step for hours: it must stay interruptible)
COUNTS = st.one_of(st.integers(0, 5), st.integers(1, 40), st.integers(0, 3), st.sampled_from([2**31 - 1, 2**30, 10**9]))
COUNT_OPTIONS = ("iterations", "newton_max_iter", "cg_max_iter")
# a step that runs this long (s) is interrupted as Ctrl-C would: KeyboardInterrupt
STEP_PATIENCE = 0.1
VIEWS = ("x", "v", "external", "mass", "rest", "k", "c")

operations = st.one_of(
    st.tuples(st.just("step"), st.one_of(reals, st.sampled_from([1e-3, 1e-2])),
              st.one_of(st.integers(1, 30), st.sampled_from([0, -1, 2**63, 2**70]))),
    st.tuples(st.just("set"), st.sampled_from(OPTIONS), anything),
    st.tuples(st.just("set"), st.sampled_from(COUNT_OPTIONS), COUNTS),
    st.tuples(st.just("write"), st.sampled_from(VIEWS), st.integers(0, 200), reals),
    st.tuples(st.just("plane"), vectors, vectors, reals),
    st.tuples(st.just("sphere"), vectors, reals, reals),
    st.tuples(st.just("box"), vectors, vectors, reals),
    st.tuples(st.just("cylinder"), vectors, reals, reals, vectors),
    st.tuples(st.just("remove"), integers),
    st.tuples(st.just("reset")),
    st.tuples(st.just("copy")),
    st.tuples(st.just("save_load")),
)


@st.composite
def systems(draw: Any) -> msprings.System:
    """A small valid network: 2 to 6 nodes, some springs, maybe faces, maybe pins."""
    n = draw(st.integers(2, 6))
    positions = draw(st.lists(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3), min_size=n, max_size=n))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1]),
                          max_size=8))
    if pairs:  # the same spring given many times (xpbd needs a colour for each)
        pairs += pairs[:1] * draw(st.sampled_from([0, 0, 1, 70, 300]))
    s = msprings.System(
        positions, np.array(pairs, dtype=np.int64).reshape(-1, 2),
        mass=draw(st.floats(0.01, 10.0)), k=draw(st.floats(0.0, 1e4)), c=draw(st.floats(0.0, 10.0)),
        pinned=draw(st.lists(st.integers(0, n - 1), max_size=2)),
        integrator=draw(st.sampled_from(msprings.INTEGRATORS)),
    )
    return s


# ---- the properties ----------------------------------------------------------------------


@contextlib.contextmanager
def interrupted_after(seconds: float) -> Iterator[None]:
    """Raises KeyboardInterrupt in the block after ``seconds``, as Ctrl-C would (SIGALRM with
    SIGINT's handler), where the platform has interval timers."""
    if not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)

STATE = ("x", "v", "f", "clock")


def apply(s: msprings.System, operation: tuple[Any, ...], folder: Path) -> msprings.System:
    """Applies one operation and checks its outcome; returns the system to go on with."""
    kind, *arguments = operation
    before = snapshot(s)
    try:
        if kind == "step":
            with interrupted_after(STEP_PATIENCE):
                s.step(*arguments)
            assert np.isfinite(s.x).all() and np.isfinite(s.v).all(), "a step returned a non-finite state"
        elif kind == "set":
            setattr(s, *arguments)
        elif kind == "write":
            view, index, value = arguments
            array = getattr(s, view).reshape(-1)
            if array.size:
                array[index % array.size] = value
        elif kind == "plane":
            s.add_plane(arguments[0], arguments[1], restitution=0.5, thickness=abs(arguments[2]) % 1.0)
        elif kind == "sphere":
            s.add_sphere(arguments[0], arguments[1], friction=abs(arguments[2]) % 2.0)
        elif kind == "box":
            s.add_box(arguments[0], arguments[1], thickness=abs(arguments[2]) % 1.0)
        elif kind == "cylinder":
            s.add_cylinder(arguments[0], arguments[1], arguments[2], axis=arguments[3])
        elif kind == "remove":
            s.remove_collider(arguments[0])
        elif kind == "reset":
            s.reset()
        elif kind == "copy":
            duplicate = s.copy()
            assert snapshot(duplicate) == snapshot(s)
            return duplicate
        elif kind == "save_load":
            # a model file holds only valid values: refused on saving or loading otherwise
            loaded = model_io.load(model_io.save(s, folder / "model.npz"))
            assert snapshot(loaded) == snapshot(s), "the model file did not load back bitwise"
            assert loaded._watched_energy() == s._watched_energy() or (
                math.isnan(loaded._watched_energy()) and math.isnan(s._watched_energy()))
            return loaded
    except (msprings.DivergenceError, KeyboardInterrupt) as error:
        assert kind == "step"
        after = snapshot(s)
        if isinstance(error, KeyboardInterrupt) and after["clock"][1] == before["clock"][1] + arguments[1]:
            # the signal came as the call returned: the steps were taken
            assert np.isfinite(s.x).all() and np.isfinite(s.v).all()
            return s
        assert np.isfinite(s.x).all() and np.isfinite(s.v).all(), "rolled back to a non-finite state"
        assert after["f"] == before["f"], "f was not rolled back"
        if arguments[1] == 1:
            for key in STATE:
                assert after[key] == before[key], f"{key} was not rolled back"
    except (ValueError, TypeError, KeyError) as error:
        if kind == "save_load":
            # a state written through a view but not stepped yet can be invalid: only loading refuses it
            assert isinstance(error, ValueError) and "model file" in str(error), error
            return s
        if kind == "write":
            return s  # e.g. a float into the pinned flags: refused by NumPy, nothing written
        after = snapshot(s)
        for key, value in before.items():
            assert after[key] == value, f"{kind} raised {error!r} but changed {key}"
    return s


@FUZZ_SETTINGS
@given(systems(), st.lists(operations, min_size=1, max_size=25))
def operation_sequences(s: msprings.System, sequence: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for operation in sequence:
            s = apply(s, operation, Path(folder))


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning", "ignore::msprings.SolverWarning")
def test_operation_sequences() -> None:
    run_for_budget(operation_sequences)


@FUZZ_SETTINGS
@given(systems(), st.integers(0, 40), st.floats(1e-5, 1e-2))
def stepped_round_trip(s: msprings.System, steps: int, dt: float) -> None:
    try:
        for _ in range(steps):
            s.step(dt)
    except msprings.DivergenceError:
        pass
    with tempfile.TemporaryDirectory() as folder:
        loaded = model_io.load(model_io.save(s, Path(folder) / "model.npz"))
    assert snapshot(loaded) == snapshot(s)
    outcomes = []
    for system in (s, loaded):
        try:
            system.step(dt, 5)
            outcomes.append(("ok", system.x.tobytes(), system.v.tobytes(), system.ledger()))
        except msprings.DivergenceError as error:
            outcomes.append(("diverged", error.step, system.x.tobytes()))
    assert outcomes[0] == outcomes[1]


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning", "ignore::msprings.SolverWarning")
def test_stepped_systems_round_trip_bitwise() -> None:
    """A model file written at any point of a run loads back bitwise and steps on bitwise alike."""
    run_for_budget(stepped_round_trip, BUDGET_SECONDS / 2)


# ---- coverage-guided runs over the file readers (where atheris is installed) -------------

COVERAGE_SECONDS = 5


def _seed_corpus(target: str, folder: Path) -> None:
    folder.mkdir()
    if target == "load_obj":
        (folder / "triangle.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvn 0 0 1\n"
                                             "f 1/1/1 2/2/1 3/3/1\nf -3 -2 -1\n")
        return
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0, 1], [1, 2]], pinned=[0],
                        faces=[[0, 1, 2]], uv=[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    s.add_plane((0.0, -1.0, 0.0))
    if target == "load_model":
        model_io.save(s, folder / "model.npz")
    else:
        s.run(1e-3, 4).save(folder / "run.npz")


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="the atheris fuzzer is not installed")
@pytest.mark.parametrize("target", ["load_obj", "load_model", "load_trajectory"])
def test_coverage_guided_readers(target: str, tmp_path: Path) -> None:
    """libFuzzer (through atheris) mutates a valid file for a few seconds: the reader raises
    nothing but ValueError, and nothing crashes."""
    _seed_corpus(target, tmp_path / "corpus")
    script = Path(__file__).resolve().parent / "fuzz_targets.py"
    environment = dict(os.environ, PYTHONPATH=python_path())
    result = subprocess.run(
        [sys.executable, str(script), target, f"-max_total_time={COVERAGE_SECONDS}", "-rss_limit_mb=4096",
         *(["-seed=1"] if CI else []), str(tmp_path / "corpus")],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120 + COVERAGE_SECONDS, check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert re.search(r"Done \d+ runs", result.stderr), result.stderr[-4000:]
