"""Property-based operation sequences on small systems (hypothesis).

Whatever a caller does -- steps with any dt and n, options set to any value, values written
through views, colliders added and removed, copies, resets, model files saved and loaded --
the only outcomes are: success; a ValueError, TypeError or KeyError with the system bitwise
unchanged; or a DivergenceError with the system bitwise as before the call (a step call is all
or nothing: the ledger too, after a write of 1e155 through a view).  A step that returns leaves
a finite state, and a model file loads back bitwise.  Networks large enough for two workers,
with coordinates from 1e150 to 1e300 over colliders, return within seconds on every integrator.

Two more properties: any self-collision distance is either refused with a ValueError (outside
[0, 1e6] m) or steps without an out-of-memory error; and a node thrown among random static
and moving colliders keeps the contact ledger's bounds (no work from a collider at rest,
contact dissipation never decreasing nor exceeding the energy there was and the work done,
the ledger closed to the integrator's closed-form error under gravity).
A DivergenceError may also be a KeyboardInterrupt, sent to a step that runs too long (an
iteration count at the top of its range makes one step last hours): the call is undone just
the same.  The networks may hold the same spring many times.

Each test runs for a fixed time budget; with the CI environment variable set the examples are
derandomised, so a CI run is repeatable.  Where the atheris fuzzer is installed, a short
coverage-guided run mutates valid OBJ, model and trajectory files (tests/fuzz_targets.py).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from numpy.lib import format as npy_format  # noqa: E402

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
    st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1e300, -1e300, 1e200, 0.5, 1.0, 1e150, 1e155, -1e155]),
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
        for key, value in before.items():  # the call is undone: the ledger, x, v, f, t, colliders...
            assert after[key] == value, f"a failed step changed {key}"
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


# ---- hostile model and trajectory files ----------------------------------------------------

def _npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    npy_format.write_array(stream, array, allow_pickle=False)
    return stream.getvalue()


def _npy_claiming(shape: tuple[int, ...], descr: str, data: bytes) -> bytes:
    """A member whose header claims ``shape`` of ``descr`` whatever data follows."""
    stream = io.BytesIO()
    npy_format.write_array_header_1_0(stream, {"descr": descr, "fortran_order": False, "shape": shape})
    return stream.getvalue() + data


def _seed_files() -> dict[str, dict[str, bytes]]:
    """The members of a valid model file and a valid trajectory, written once."""
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.2]],
                        [[0, 1], [1, 2], [2, 3], [3, 0]], pinned=[0], faces=[[0, 1, 2]],
                        uv=[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], c=0.1)
    s.add_plane((0.0, -1.0, 0.0))
    s.add_sphere((0.0, 2.0, 0.0), 0.3, velocity=(0.0, -1.0, 0.0))
    s.strain_limit = 0.1
    s.step(1e-3, 3)
    with tempfile.TemporaryDirectory() as folder:
        files = {"model": model_io.save(s, Path(folder) / "model.npz"),
                 "trajectory": s.run(1e-3, 4, velocities=True).save(Path(folder) / "run.npz")}
        contents = {}
        for kind, path in files.items():
            with zipfile.ZipFile(path) as archive:
                contents[kind] = {info.filename[:-4]: archive.read(info) for info in archive.infolist()}
    return contents


SEED_FILES = _seed_files()
MEMBER_KEYS = {kind: sorted(members) for kind, members in SEED_FILES.items()}
HOSTILE_REALS = st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 1e308, -1e308, 5e-324])
HOSTILE_DESCRS = st.sampled_from(["<f8", "<i8", "|b1", "<U16", "<c16", "<f4", ">f8", "<u8", "|u1"])
# JSON that is valid but hostile, or not JSON at all
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children,
                                                                                max_size=4)),
    max_leaves=20,
)
# JSON for a trajectory's colliders, as (how, value): made into text when the file is written,
# so that a failing example prints small
HOSTILE_JSON = st.one_of(
    st.tuples(st.just("json"), JSON_VALUES),
    st.tuples(st.just("nested lists"), st.integers(1, 200_000)),
    st.tuples(st.just("nested center"), st.integers(1, 100_000)),
    st.tuples(st.just("text"), st.one_of(st.sampled_from([
        '[{"kind": "sphere", "center": [NaN, 0, 0]}]', '[{"kind": "plane", "center": [0, 0, 1e999]}]',
        '[{"kind": "sphere", "center": [0, 0, 0], "size": -Infinity}]', "[", "", "\x00",
        '[{"kind": "sphere", "center": [0, 0, 0]}]', '[{"kind": "box"}]']), st.text(max_size=40))),
)


def _json_text(how: str, value: Any) -> str:
    if how == "json":
        return json.dumps(value)
    if how == "nested lists":
        return "[" * value + "]" * value
    if how == "nested center":
        return '[{"kind": "sphere", "center": ' + "[" * value + "0" + "]" * value + "}]"
    return value


# One damage to a member: (how, the member, what with).  Drawn small, applied when the file is
# written.
@st.composite
def damage_plans(draw: Any, kind: str) -> list[tuple[str, str, Any]]:
    plan = []
    keys = MEMBER_KEYS[kind]
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(keys))
        how = draw(st.sampled_from(["non-finite", "rows", "header lie", "dtype", "drop", "bomb", "json"]))
        if how == "non-finite":
            what: Any = (draw(st.integers(0, 10**6)), draw(HOSTILE_REALS))
        elif how == "rows":
            what = draw(st.integers(0, 12))
        elif how == "header lie":
            what = (tuple(draw(st.lists(st.sampled_from([0, 1, 3, 4, 2**20, 2**40, 2**62]), max_size=3))),
                    draw(HOSTILE_DESCRS), draw(st.sampled_from([0, 8, 96, 200])))
        elif how == "dtype":
            what = draw(HOSTILE_DESCRS)
        elif how == "bomb":
            what = draw(st.sampled_from([2**20, 3 * 2**20]))
        elif how == "json" and kind == "trajectory":
            key, what = "colliders", draw(HOSTILE_JSON)
        else:
            what = None
        plan.append((how, key, what))
    return plan


def _damaged_members(kind: str, plan: list[tuple[str, str, Any]]) -> dict[str, bytes]:
    """A file's members with the plan's damage done (a step on a member already dropped, or
    that does not apply to it, is skipped)."""
    members = dict(SEED_FILES[kind])
    for how, key, what in plan:
        if key not in members:
            continue
        original = np.load(io.BytesIO(SEED_FILES[kind][key]))
        if how == "non-finite" and original.dtype.kind == "f" and original.size:
            damaged = np.array(original)
            damaged.reshape(-1)[what[0] % original.size] = what[1]
            members[key] = _npy(damaged)
        elif how == "rows":
            members[key] = _npy(np.resize(original, (what, *original.shape[1:])))
        elif how == "header lie":
            members[key] = _npy_claiming(what[0], what[1], bytes(what[2]))
        elif how == "dtype":
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # complex to real, NaN to integer, ...
                    members[key] = _npy(original.astype(np.dtype(what)))
            except (ValueError, TypeError, OverflowError):
                members[key] = _npy(np.zeros(original.shape, dtype=np.dtype(what)))
        elif how == "drop":
            members.pop(key)
        elif how == "bomb":
            dtype = original.dtype if original.dtype.kind in "fiub" else np.float64
            members[key] = _npy(np.zeros((what, *original.shape[1:]), dtype=dtype))
        elif how == "json" and what is not None:
            members[key] = _npy(np.array(_json_text(*what)))
    return members


def _write_members(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key, data in members.items():
            archive.writestr(f"{key}.npy", data)


def _check_hostile_load(kind: str, plan: list[tuple[str, str, Any]]) -> None:
    """Loading gives a system or trajectory, or a ValueError that starts with the file's name
    and names an entry; never another exception, and never an allocation near a claimed size."""
    load = model_io.load if kind == "model" else msprings.Trajectory.load
    members, done = _damaged_members(kind, plan), repr(plan)[:300]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{kind}.npz"
        _write_members(path, members)
        tracemalloc.start()
        try:
            load(path)
        except ValueError as error:
            message = str(error)
            assert message.startswith(str(path)), f"{done}: {message}"
            named = [key for key in (*MEMBER_KEYS[kind], "integrator", "collider") if re.search(
                rf"(?<!\w){re.escape(key)}(?!\w)", message)]
            assert named or "not an msprings" in message or "format version" in message, f"{done}: {message}"
        except BaseException as error:
            raise AssertionError(f"{done}: {type(error).__name__}: {error}") from None
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < 30e6, f"{done}: {peak / 1e6:.0f} MB allocated"


@FUZZ_SETTINGS
@given(damage_plans("model"))
def hostile_model_files(plan: list[tuple[str, str, Any]]) -> None:
    _check_hostile_load("model", plan)


@FUZZ_SETTINGS
@given(damage_plans("trajectory"))
def hostile_trajectory_files(plan: list[tuple[str, str, Any]]) -> None:
    _check_hostile_load("trajectory", plan)


def test_hostile_model_files() -> None:
    """Model files with entries made non-finite, of other lengths or dtypes, with headers that
    lie about their data, missing, or inflating to many megabytes: a ValueError naming the
    file and an entry, or a system."""
    run_for_budget(hostile_model_files, BUDGET_SECONDS / 4)


def test_hostile_trajectory_files() -> None:
    """The same for trajectories, and hostile JSON (nested, NaN, not JSON) in colliders."""
    run_for_budget(hostile_trajectory_files, BUDGET_SECONDS / 4)


# ---- out= arrays of every layout -----------------------------------------------------------

def _laid_out(array: np.ndarray, layout: str, shift: int) -> np.ndarray:
    """A copy of ``array`` in memory laid out as ``layout``."""
    if layout == "misaligned":
        buffer = bytearray(array.nbytes + 16)
        base = np.frombuffer(buffer, dtype=np.uint8).ctypes.data
        start = (-base) % 8 + shift  # shift 1..7 bytes past an 8-byte boundary
        view = np.frombuffer(buffer, dtype=np.float64, count=array.size, offset=start).reshape(array.shape)
    elif layout == "strided":
        wider = np.zeros((*array.shape[:-1], array.shape[-1] + shift))
        view = wider[..., :array.shape[-1]]
    elif layout == "reversed":
        view = np.zeros(array.shape)[::-1]
    elif layout == "fortran":
        view = np.zeros(array.shape, order="F")
    elif layout == "byte-swapped":
        view = np.zeros(array.shape, dtype=np.dtype(np.float64).newbyteorder())
    elif layout == "read-only":
        view = np.zeros(array.shape)
        view[...] = array
        view.setflags(write=False)
        return view
    else:
        view = np.zeros(array.shape)
    view[...] = array
    return view


LAYOUTS = ("plain", "misaligned", "strided", "reversed", "fortran", "byte-swapped", "read-only")


@FUZZ_SETTINGS
@given(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS), st.integers(1, 7), st.booleans(), st.integers(1, 3))
def out_layouts(positions_layout: str, velocities_layout: str, shift: int, velocities: bool, every: int) -> None:
    system = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]], [[0, 1], [1, 2], [2, 0]],
                             pinned=[0], c=0.1)
    expected = system.copy().run(1e-3, 6, record_every=every, velocities=velocities)
    out = system.copy().run(1e-3, 6, record_every=every, velocities=True)
    out.positions = _laid_out(out.positions, positions_layout, shift)
    out.velocities = _laid_out(out.velocities, velocities_layout, shift)
    before = {name: np.array(getattr(out, name)).tobytes() for name in ("positions", "velocities", "times")}
    x = system.x.tobytes()
    usable = {"plain"}
    try:
        recorded = system.run(1e-3, 6, record_every=every, velocities=velocities, out=out)
    except (ValueError, TypeError) as error:
        assert positions_layout not in usable or (velocities and velocities_layout not in usable), error
        assert "positions" in str(error) or "velocities" in str(error), error
        assert system.x.tobytes() == x and system.steps == 0
        for name, data in before.items():
            assert np.array(getattr(out, name)).tobytes() == data, name
        return
    assert positions_layout in usable and (not velocities or velocities_layout in usable)
    assert recorded is out
    assert out.positions.tobytes() == expected.positions.tobytes()


def test_out_arrays_of_every_layout() -> None:
    """out's positions and velocities misaligned by 1 to 7 bytes, strided, reversed, in
    Fortran order, byte-swapped or read-only: refused naming the field with out and the system
    unchanged; a plain array records what a new run records."""
    run_for_budget(out_layouts, BUDGET_SECONDS / 4)


# ---- extreme coordinates on two workers ---------------------------------------------------

EXTREME_SCRIPT = """
import sys, warnings
import numpy as np
import msprings

warnings.simplefilter("ignore")
integrator, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
n = 10_051  # 10,050 springs: two workers step it
options = ("none", "strain limit", "self-collision", "energy loss", "drag")
case = 0
for scale in (1e150, 1e153, 10.0 ** rng.uniform(150, 300), 1e300):
    for kind in ("plane", "sphere", "box"):
        option = options[case % len(options)]  # each acts after the integrator on its own path
        case += 1
        x = rng.uniform(-1.0, 1.0, (n, 3)) * scale
        pairs = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
        s = msprings.System(x, pairs, k=float(rng.uniform(0.5, 2.0)), rest=1.0, integrator=integrator)
        s.threads = 2
        if kind == "plane":
            s.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), velocity=(0.0, 1.0, 0.0))
        elif kind == "sphere":
            s.add_sphere((0.0, 0.0, 0.0), scale / 2)
        else:
            s.add_box((-scale / 3, -scale / 3, -scale / 3), (scale / 3, scale / 3, scale / 3))
        if option == "strain limit":
            s.strain_limit = 0.1
        elif option == "self-collision":
            s.self_collision = 1e6  # the largest distance allowed
        elif option == "energy loss":
            s.energy_loss = 0.01
        elif option == "drag":
            s.drag = 0.1
        before = (s.x.tobytes(), s.v.tobytes(), s.f.tobytes(), s.t, s.steps, repr(s.ledger()),
                  [c.center.tobytes() for c in s.colliders])
        try:
            s.step(1e-3, 3)
            assert np.isfinite(s.x).all() and np.isfinite(s.v).all()
        except msprings.DivergenceError:
            after = (s.x.tobytes(), s.v.tobytes(), s.f.tobytes(), s.t, s.steps, repr(s.ledger()),
                     [c.center.tobytes() for c in s.colliders])
            assert after == before, (scale, kind, option)
print("returned")
"""


@pytest.mark.parametrize("integrator", msprings.INTEGRATORS)
def test_extreme_coordinates_over_colliders_on_two_workers_return(integrator: str) -> None:
    """Coordinates from 1e150 to 1e300 over a plane, a sphere and a box, on two workers, with
    strain limiting, self-collision, energy loss or drag acting too: every step call returns
    within seconds (a decision only one worker saw once left the other
    waiting at a barrier for ever), with success or a DivergenceError that left the system as
    it was.  Run in a subprocess, so that a hang fails the test instead of the suite."""
    seed = 0 if CI else int(time.time()) % 100_000
    result = subprocess.run([sys.executable, "-c", EXTREME_SCRIPT, integrator, str(seed)],
                            env=dict(os.environ, PYTHONPATH=python_path()), capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "returned", (seed, result.stderr[-2000:])


# ---- coverage-guided runs over the file readers (where atheris is installed) -------------

COVERAGE_SECONDS = 5


def _seed_corpus(target: str, folder: Path) -> None:
    folder.mkdir()
    if target in ("model_members", "trajectory_members", "run_out"):  # inputs that choose what to damage
        for index, seed in enumerate((bytes(64), bytes(range(256)), b"\xff" * 64)):
            (folder / f"seed{index}").write_bytes(seed)
        return
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
@pytest.mark.parametrize("target", ["load_obj", "load_model", "load_trajectory", "model_members",
                                    "trajectory_members", "run_out"])
def test_coverage_guided_readers(target: str, tmp_path: Path) -> None:
    """libFuzzer (through atheris) mutates a valid file, or chooses how to damage a valid
    file's members or lay out out='s arrays, for a few seconds: nothing but the documented
    exceptions, and nothing crashes (see tests/fuzz_targets.py)."""
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


# ---- self-collision distances and the contact ledger ------------------------------------

LARGEST_SELF_COLLISION = 1e6  # m
distances = st.one_of(
    reals,
    st.floats(0.0, 2.0),
    st.sampled_from([1e-12, 1e-11, 1e6, math.nextafter(1e6, math.inf), math.nextafter(1e6, 0.0), 1e100, -1e-300]),
)


@FUZZ_SETTINGS
@given(st.integers(3, 6), st.floats(0.05, 3.0), distances, st.sampled_from(msprings.INTEGRATORS),
       st.integers(1, 20))
def hostile_self_collision(side: int, size: float, distance: float, integrator: str, steps: int) -> None:
    """Any distance on a falling cloth (triangles too): a ValueError naming the option with
    nothing changed exactly when it is outside [0, 1e6] m (or NaN), else steps that succeed
    or diverge with the state rolled back -- never an out-of-memory error."""
    s = msprings.scenes.cloth(side, size=size, integrator=integrator)
    s.step(1e-3, 2)
    before = snapshot(s)
    valid = 0.0 <= distance <= LARGEST_SELF_COLLISION
    try:
        s.self_collision = distance
    except ValueError as error:
        assert not valid and "self_collision" in str(error), (distance, error)
        assert snapshot(s) == before
        return
    assert valid, distance
    try:
        s.step(1e-3, steps)
    except msprings.DivergenceError:
        assert np.isfinite(s.x).all() and np.isfinite(s.v).all()
        return
    assert np.isfinite(s.x).all() and np.isfinite(s.v).all()


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning", "ignore::msprings.SolverWarning")
def test_hostile_self_collision_distances() -> None:
    run_for_budget(hostile_self_collision, BUDGET_SECONDS / 4)


GRAVITY = 9.81
positions = st.tuples(st.floats(-1.0, 1.0), st.floats(0.05, 2.0), st.floats(-1.0, 1.0))
velocities = st.tuples(st.floats(-5.0, 5.0), st.floats(-5.0, 5.0), st.floats(-5.0, 5.0))
surfaces = st.fixed_dictionaries({"restitution": st.floats(0.0, 1.0), "friction": st.floats(0.0, 2.0),
                                  "thickness": st.sampled_from([0.0, 0.0, 1e-3, 0.05])})
obstacles = st.lists(st.one_of(
    st.tuples(st.just("sphere"), positions, st.floats(0.05, 1.0)),
    st.tuples(st.just("box"), positions, st.tuples(st.floats(0.05, 1.0), st.floats(0.05, 1.0),
                                                   st.floats(0.05, 1.0))),
    st.tuples(st.just("cylinder"), positions, st.floats(0.05, 1.0)),
), max_size=3)


@FUZZ_SETTINGS
@given(positions, velocities, st.floats(0.1, 5.0), obstacles, surfaces, st.sampled_from(msprings.INTEGRATORS),
       st.floats(1e-4, 2e-3), st.lists(st.integers(1, 40), min_size=1, max_size=12),
       st.one_of(st.none(), velocities))
def contact_ledger(start: Any, velocity: Any, mass: float, shapes: list[Any], surface: dict[str, float],
                   integrator: str, h: float, calls: list[int], moving: Any) -> None:
    """A node thrown among random colliders above a ground plane (listed last, so every step
    ends with the node above it), each collider at rest or, with ``moving``, the first one
    moving.  Colliders at rest book no work, ever; contact dissipation never decreases and
    never exceeds the energy the node had above the ground plus the work done on it (and
    what the explicit Euler step adds of its own); and the ledger closes to the
    integrator's error, which under gravity alone is closed-form: +-1/2 m g^2 h^2 per step
    for the explicit and symplectic Euler steps, none for Verlet and RK4, and the large-step
    solvers book theirs."""
    s = msprings.System([start], np.zeros((0, 2), dtype=np.int64), mass=mass, velocities=[velocity],
                        integrator=integrator)
    for index, (kind, center, extent) in enumerate(shapes):
        options = dict(surface)
        if moving is not None and index == 0:
            options["velocity"] = moving
        if kind == "sphere":
            s.add_sphere(center, extent, **options)
        elif kind == "box":
            s.add_box(np.subtract(center, extent), np.add(center, extent), **options)
        else:
            s.add_cylinder(center, extent, extent, **options)
    s.add_plane(**surface)
    begin = s.energy()
    assert begin.mechanical >= 0.0  # above the ground: what there is to dissipate
    contact = constraints = 0.0
    steps = 0
    try:
        for count in calls:
            s.step(h, count)
            steps += count
            ledger = s.ledger()
            if moving is None or not shapes:
                assert ledger.colliders == 0.0
            assert ledger.contact >= contact
            assert ledger.constraints >= constraints
            contact, constraints = ledger.contact, ledger.constraints
    except msprings.DivergenceError:
        return
    end = s.energy()
    own = steps * 0.5 * mass * GRAVITY**2 * h**2
    expected = {"explicit_euler": own, "symplectic_euler": -own}.get(integrator, 0.0)
    scale = begin.mechanical + end.dissipated + abs(end.work) + abs(end.mechanical) + own + 1e-9
    assert end.total - begin.total == pytest.approx(expected, abs=1e-9 * scale)
    assert contact <= begin.mechanical + max(end.work, 0.0) + max(expected, 0.0) + 1e-9 * scale


def test_contact_ledger_with_static_and_moving_colliders() -> None:
    run_for_budget(contact_ledger, BUDGET_SECONDS / 4)
