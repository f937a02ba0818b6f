"""Pickling: a System and a Trajectory come back bit for bit under every protocol, an
unpickled system steps on exactly as the original does (every integrator, colliders, air,
after a reset), a system stepping in another thread is refused, damaged data raises
ValueError, and a system travels to a spawned worker process and back with the same bits
as stepping it here."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
import threading
import time
import warnings
from typing import Any

import numpy as np
import pytest

import msprings
from msprings import _core, scenes
from msprings._system import PICKLE_VERSION, _unpickle_system
from msprings.trajectory import PICKLE_VERSION as TRAJECTORY_PICKLE_VERSION
from msprings.trajectory import _unpickle_trajectory

DT = 1e-4
PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)


def bits(value: Any) -> Any:
    """A value as exact bits: arrays as (dtype, shape, bytes), floats as their hex, containers
    item by item."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, (tuple, list)):
        return tuple(bits(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((key, bits(item)) for key, item in value.items()))
    return value


def everything(s: msprings.System) -> dict[str, Any]:
    """Every value of a system that pickling carries, as exact bits.  Reads the views with
    _pickle_state's copies, so looking does not watch the state."""
    core = s._pickle_state()
    return {
        "core": bits(core),
        "options": {option.name: bits(getattr(s, option.name)) for option in _core.OPTIONS},
        "energy": bits(tuple(s.energy())),
        "ledger": bits(tuple(s.ledger())),
        "solver_stats": bits(s.solver_stats),
        "workers": s.workers,
        "colliders": [(c.id, bits(s._get_collider(c.id)), bits(s._collider_start(c.id))) for c in s.colliders],
        "start_energy": bits(s._start_energy()),
        "families": bits(s.families),
        "uv": bits(s.uv),
    }


def motion_bits(s: msprings.System) -> tuple:
    """What the brief's comparison asks for after stepping: x, v, t, energy() and ledger()."""
    return (bits(s._pickle_state()["x"]), bits(s._pickle_state()["v"]), bits(s.t), bits(tuple(s.energy())),
            bits(tuple(s.ledger())), s.steps)


def windy_flag(integrator: str) -> msprings.System:
    """A flag with faces in gusty wind and drag, an external force, a resting plane with
    restitution and friction, and a moving sphere that sweeps into the cloth."""
    s = scenes.flag(6, 8, integrator=integrator)
    s.drag = 0.01
    s.add_plane((0.0, -0.5, 0.0), restitution=0.3, friction=0.2)
    s.add_sphere((0.6, -0.3, 0.0), 0.25, velocity=(0.0, 1.5, 0.2), friction=0.1)
    s.external[5] = (0.1, 0.2, -0.05)
    return s


def roundtrip(s: Any, protocol: int = pickle.HIGHEST_PROTOCOL) -> Any:
    return pickle.loads(pickle.dumps(s, protocol=protocol))


def step_both(a: msprings.System, b: msprings.System, calls: tuple[int, ...] = (1, 7, 25)) -> None:
    """Steps both the same calls and checks their bits after each."""
    for n in calls:
        a.step(DT, n)
        b.step(DT, n)
        assert motion_bits(a) == motion_bits(b)


@pytest.mark.parametrize("integrator", _core.INTEGRATORS)
def test_every_integrator_steps_on_bit_for_bit(integrator: str) -> None:
    s = windy_flag(integrator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)  # explicit Euler: undamped swinging modes
        s.step(DT, 40)
        assert any(s.ledger()[i] != 0.0 for i in (2, 5, 8))  # contact, wind and a moving collider booked
        for protocol in PROTOCOLS:
            copy = roundtrip(s, protocol)
            assert type(copy) is msprings.System
            assert everything(copy) == everything(s)
            step_both(s, copy)
        s.reset()
        copy = roundtrip(s)
        assert everything(copy) == everything(s)
        step_both(s, copy)


def test_every_option_and_parameter_travels() -> None:
    s = scenes.cloth(5, integrator="projective")
    s.gravity = (0.5, -7.0, 0.25)
    s.energy_loss = 0.001
    s.drag = 0.02
    s.chebyshev = 0.9
    s.iterations = 7
    s.strain_limit = 0.15
    s.threads = 3
    s.self_collision = 0.05
    s.self_friction = 0.2
    s.self_contact_sweep = 0
    s.newton_max_iter = 9
    s.newton_tol = 1e-7
    s.cg_max_iter = 33
    s.cg_tol = 1e-3
    s.air_density = 1.1
    s.drag_coefficient = 0.8
    s.lift_coefficient = 0.3
    s.wind = (1.0, 0.0, -0.5)
    s.gust = 2.0
    s.gust_frequency = 3.0
    s.gust_wavenumber = 0.7
    s.k[3] = 123.0
    s.c[2] = 0.125
    s.rest[1] *= 1.01
    s.mass[4] = 0.3
    s.pinned[7] = True
    s.step(DT, 10)
    changed = {option.name for option in _core.OPTIONS
               if bits(getattr(s, option.name)) != bits(getattr(scenes.cloth(5), option.name))}
    assert changed == {option.name for option in _core.OPTIONS}
    copy = roundtrip(s)
    assert everything(copy) == everything(s)
    for name in ("mass", "pinned", "k", "c", "rest", "springs", "faces"):
        assert bits(np.array(getattr(copy, name))) == bits(np.array(getattr(s, name)))
    step_both(s, copy)


def test_a_change_pending_for_the_ledger_and_the_start_energy_travel() -> None:
    s = windy_flag("velocity_verlet")
    s.run(DT, 20, 5)  # keeps the energy the last call started from
    assert s._start_energy() is not None
    s.x[10, 1] += 0.01  # booked as the caller's work by the next step
    s.v[11] = (0.1, 0.0, 0.0)
    copy = roundtrip(s)
    assert copy._watched_energy() == s._watched_energy()
    assert everything(copy) == everything(s)
    step_both(s, copy)
    assert s.ledger().user != 0.0


def test_collider_ids_and_positions_travel() -> None:
    s = windy_flag("symplectic_euler")
    middle = s.add_box((0.5, -1.0, -0.2), (0.8, -0.8, 0.2))
    last = s.add_cylinder((1.0, -1.0, 0.0), 0.2, 0.3, axis=(1.0, 1.0, 0.0), velocity=(0.1, 0.0, 0.0))
    s.step(DT, 30)
    s.remove_collider(middle)
    copy = roundtrip(s)
    assert [c.id for c in copy.colliders] == [c.id for c in s.colliders]
    assert copy.colliders[-1].id == last.id
    assert everything(copy) == everything(s)
    assert s.add_plane().id == copy.add_plane().id  # the next id too
    copy.reset()
    s.reset()
    assert everything(copy) == everything(s)  # back where they started
    step_both(s, copy)


def test_python_attributes_travel() -> None:
    s = scenes.cloth(4)
    assert s.families and s.uv is not None
    s.integrator = "explicit_euler"
    with pytest.warns(msprings.StabilityWarning):
        s.step(1e-2)
    copy = roundtrip(s)
    assert bits(copy.families) == bits(s.families)
    assert bits(copy.uv) == bits(s.uv)
    assert copy._warned == s._warned == frozenset({"stability"})
    assert copy._stability_limits == s._stability_limits
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy.step(1e-2)  # warned once per system: the copy is the same system


class Tagged(msprings.System):
    """A subclass with attributes of its own."""


def test_a_subclass_and_its_attributes_travel() -> None:
    s = Tagged([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0]], [[0, 1]], k=20.0, pinned=[0])
    s.label = "pendulum"
    s.step(1e-3, 100)
    copy = roundtrip(s)
    assert type(copy) is Tagged and copy.label == "pendulum"
    assert everything(copy) == everything(s)


def test_protocol_5_sends_the_arrays_out_of_band() -> None:
    s = windy_flag("rk4")
    s.step(DT, 10)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(s, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) >= 10 and len(data) < sum(memoryview(b).nbytes for b in buffers)
    copy = pickle.loads(data, buffers=buffers)
    assert everything(copy) == everything(s)
    step_both(s, copy)


def test_pickling_does_not_change_the_original() -> None:
    s = windy_flag("symplectic_euler")
    twin = s.copy()
    s.step(DT, 10)
    twin.step(DT, 10)
    for _ in range(3):
        pickle.dumps(s)
    step_both(s, twin)


def test_a_system_stepping_in_another_thread_is_refused() -> None:
    s = scenes.cloth(40)
    start = time.perf_counter()
    s.copy().step(DT, 20)
    n = min(200_000, max(20, int(20 / max(time.perf_counter() - start, 1e-6))))  # about a second of steps
    started = threading.Event()
    worker = threading.Thread(target=lambda: (started.set(), s.step(DT, n)))
    worker.start()
    started.wait()
    refusals = []
    while worker.is_alive():
        try:
            pickle.dumps(s)
        except RuntimeError as error:
            refusals.append(str(error))
        time.sleep(0.005)
    worker.join()
    assert refusals, "the step ended before a pickle could be tried during it"
    assert "cannot pickle a System while it is stepping in another thread" in refusals[0]
    assert s.steps == n
    copy = roundtrip(s)  # idle again: it pickles
    assert everything(copy) == everything(s)


# ---- damaged data -------------------------------------------------------------------


class Forged:
    """Pickles as a call of the given reconstructor with the given arguments."""

    def __init__(self, function: Any, arguments: tuple) -> None:
        self.function, self.arguments = function, arguments

    def __reduce__(self) -> tuple:
        return self.function, self.arguments


def reduction(s: msprings.System) -> tuple[Any, list[Any]]:
    function, arguments = s.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    return function, list(arguments)


def unpickle_forged(function: Any, arguments: list[Any]) -> Any:
    return pickle.loads(pickle.dumps(Forged(function, tuple(arguments))))


def with_entry(key: str, value: Any) -> Any:
    def change(arguments: list[Any]) -> None:
        arguments[2][key] = value
    return change


def with_option(key: str, value: Any) -> Any:
    def change(arguments: list[Any]) -> None:
        arguments[3][key] = value
    return change


def with_attribute(key: str, value: Any) -> Any:
    def change(arguments: list[Any]) -> None:
        arguments[4][key] = value
    return change


def without_entry(key: str) -> Any:
    def change(arguments: list[Any]) -> None:
        del arguments[2][key]
    return change


def collider_row(index: int, value: Any) -> Any:
    def change(arguments: list[Any]) -> None:
        rows = [list(row) for row in arguments[2]["colliders"]]
        rows[0][index] = value
        arguments[2]["colliders"] = tuple(tuple(row) for row in rows)
    return change


def changed_index(key: str) -> Any:
    def change(arguments: list[Any]) -> None:
        value = arguments[2][key].copy()
        value[1, 1] = 10_000
        arguments[2][key] = value
    return change


def nan_at(key: str) -> Any:
    def change(arguments: list[Any]) -> None:
        value = arguments[2][key].copy()
        value.flat[4] = np.nan
        arguments[2][key] = value
    return change


def set_argument(index: int, value: Any) -> Any:
    def change(arguments: list[Any]) -> None:
        arguments[index] = value
    return change


DAMAGE = {
    "newer version": (set_argument(1, PICKLE_VERSION + 1), "newer than this msprings reads"),
    "older version": (set_argument(1, 0), "version 0"),
    "version text": (set_argument(1, "1"), "version tag"),
    "version bool": (set_argument(1, True), "version tag"),
    "not a System class": (set_argument(0, dict), "not a System class"),
    "state not a dict": (set_argument(2, [1, 2]), "damaged"),
    "nan positions": (nan_at("x"), "x"),
    "nan velocities": (nan_at("v"), "v"),
    "nan forces": (nan_at("f"), "forces"),
    "nan initial positions": (nan_at("x_initial"), "x_initial|initial|position"),
    "nan mass": (nan_at("mass"), "mass"),
    "x of the wrong shape": (with_entry("x", np.zeros((5, 3))), "x must have shape"),
    "x as a list": (with_entry("x", [[0.0, 0.0, 0.0]]), "x entry is not an array"),
    "x as integers": (with_entry("x", np.zeros((48, 3), dtype=np.int64)), "x entry is not an array of float64"),
    "springs as floats": (with_entry("springs", np.zeros((10, 2))), "springs entry is not an array of int32"),
    "springs out of range": (changed_index("springs"), "springs"),
    "faces out of range": (changed_index("faces"), "faces"),
    "k of the wrong length": (with_entry("k", np.zeros(3)), "k must have shape"),
    "pinned as floats": (with_entry("pinned", np.zeros(48)), "pinned entry is not an array of bool"),
    "external of the wrong shape": (with_entry("external", np.zeros((47, 3))), "external must have shape"),
    "missing entry": (without_entry("ledger"), "no ledger entry"),
    "short ledger": (with_entry("ledger", (0.0,) * 10), "ledger entry must be a tuple of 11 items, not of 10"),
    "ledger as a list": (with_entry("ledger", [0.0] * 11), "ledger entry must be a tuple of 11 items, not list"),
    "negative damper energy": (with_entry("ledger", (-1.0,) + (0.0,) * 10), "ledger"),
    "nan time": (with_entry("t", float("nan")), "t, ledger or watched_energy"),
    "infinite watched energy": (with_entry("watched_energy", float("inf")), "watched_energy"),
    "negative steps": (with_entry("steps", -1), "steps"),
    "huge steps": (with_entry("steps", 1 << 70), "steps"),
    "text time": (with_entry("t", "noon"), "t must be a real number"),
    "bad solver counts": (with_entry("solver", (0, -1, 0.0, 0.0, 0, 0, 0)), "cg_iterations"),
    "bad start energy": (with_entry("start_energy", (1.0, 2.0)), "start_energy entry must be a tuple of 3 items"),
    "infinite start energy": (with_entry("start_energy", (float("inf"), 0.0, 0.0)), "start_energy .* finite"),
    "nan newton residual": (with_entry("solver", (1, 2, float("nan"), 0.0, 1, 1, 0)), "newton_residual .* finite"),
    "negative newton residual": (with_entry("solver", (1, 2, -1.0, 0.0, 1, 1, 0)), "newton_residual"),
    "next collider id beyond 2**62": (with_entry("next_collider_id", 2**63 - 1), "next_collider_id .* out of range"),
    "unknown option": (with_option("warp_speed", 9), "warp_speed is not an option"),
    "bad option value": (with_option("drag", -1.0), "drag"),
    "bad integrator": (with_option("integrator", "leapfrog"), "leapfrog"),
    "option name not text": (with_option(3, 1.0), "option name"),
    "unknown collider kind": (collider_row(1, "cone"), "collider 0 is damaged"),
    "collider id beyond the next": (collider_row(0, 99), "collider 0 is damaged"),
    "nan collider position": (collider_row(9, (0.0, float("nan"), 0.0)), "collider positions"),
    "zero plane normal": (collider_row(3, (0.0, 0.0, 0.0)), "normal"),
    "colliders not rows": (with_entry("colliders", (1, 2)), "collider 0 must be a tuple of 10 items, not int"),
    "short collider row": (with_entry("colliders", ((0, "plane"),)), "collider 0 must be a tuple of 10 items, not of 2"),
    "colliders as a list": (lambda arguments: arguments[2].update(colliders=list(arguments[2]["colliders"])),
                            "colliders entry must be a tuple, not list"),
    "unknown attribute": (with_attribute("secret", 1), "secret"),
    "uv of the wrong shape": (with_attribute("uv", np.zeros((3, 2))), "uv"),
    "families out of range": (with_attribute("families", {"bend": np.array([10_000])}), "families"),
    "warned not a set": (with_attribute("_warned", ["stability"]), "_warned"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_data_raises_value_error(case: str) -> None:
    s = scenes.cloth(4, columns=12)
    s.add_plane((0.0, -1.0, 0.0))
    s.step(DT, 3)
    s.external[0] = (0.0, 1.0, 0.0)
    function, arguments = reduction(s)
    change, message = DAMAGE[case]
    change(arguments)
    with pytest.raises(ValueError, match=message):
        unpickle_forged(function, arguments)


def test_truncated_or_corrupted_bytes_never_crash() -> None:
    """A truncated pickle is pickle's own error (UnpicklingError or EOFError) before any of
    msprings' code runs; corrupted bytes raise an exception or give a valid System."""
    s = scenes.cloth(3)
    s.add_sphere((0.5, -0.5, 0.5), 0.2, velocity=(0.0, 0.1, 0.0))
    s.step(DT, 3)
    for protocol in (2, 5):
        data = pickle.dumps(s, protocol=protocol)
        for cut in range(0, len(data), 7):
            with pytest.raises((pickle.UnpicklingError, EOFError)):
                pickle.loads(data[:cut])
    rng = np.random.default_rng(7)
    data = bytearray(pickle.dumps(s, protocol=5))
    for _ in range(300):
        damaged = bytearray(data)
        for where in rng.integers(0, len(data), 3):
            damaged[where] = int(rng.integers(0, 256))
        try:
            copy = pickle.loads(bytes(damaged))
        except Exception:  # noqa: BLE001 - any exception will do; a crash would not
            continue
        if isinstance(copy, msprings.System):  # valid values, if perhaps wild ones
            copy._check_values()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", msprings.StabilityWarning)
                try:
                    copy.step(DT)
                except msprings.DivergenceError:
                    pass


def test_unpickling_needs_an_uninitialised_system() -> None:
    s = scenes.cloth(3)
    _, arguments = reduction(s)
    with pytest.raises(RuntimeError, match="already initialised"):
        s._unpickle_state(arguments[2], arguments[3])
    assert _unpickle_system(*arguments).n_nodes == s.n_nodes


# An unpickling whose numbers are objects that, when read, empty the dicts they were read
# from (freeing the tuples those held), resize an array given (freeing its data) and only
# then answer the right value.  Run under PYTHONMALLOC=debug, which fills freed memory, so
# that reading anything freed shows.
HOSTILE_UNPICKLING = """
import numpy as np
from msprings import _core, scenes

s = scenes.cloth(4)
for i in range(25):
    s.add_sphere((0.0, 5.0 + i, 0.0), 0.1)
s.step(1e-4, 3)
cls, version, core, options, attributes = s.__reduce_ex__(5)[1]
given = dict(core)
given_options = dict(options)


class Hostile:
    def __init__(self, value):
        self.value = value

    def strike(self):
        x = given.get("x")
        given.clear()
        given.update(colliders=(), ledger=(0.0,) * 11, solver=(0, 0, 0.0, 0.0, 0, 0, 0))
        given_options.clear()
        if x is not None:
            x.resize(0, refcheck=False)

    def __index__(self):
        self.strike()
        return self.value

    def __float__(self):
        self.strike()
        return float(self.value)


given["x"] = core["x"].copy()
given["colliders"] = tuple(tuple(row) for row in core["colliders"])  # held by the dict only
given["next_collider_id"] = Hostile(core["next_collider_id"])
given["ledger"] = (Hostile(core["ledger"][0]),) + tuple(core["ledger"][1:])
given["solver"] = tuple(core["solver"][:2]) + (Hostile(core["solver"][2]),) + tuple(core["solver"][3:])
given_options["drag"] = Hostile(options["drag"])
fresh = cls.__new__(cls)
fresh._unpickle_state(given, given_options)
expected, got = s._pickle_state(), fresh._pickle_state()
assert expected.keys() == got.keys()
for key, value in expected.items():
    if isinstance(value, np.ndarray):
        assert value.dtype == got[key].dtype and np.array_equal(value, got[key]), key
    else:
        assert value == got[key], key
assert len(fresh.colliders) == 25
assert all(np.array_equal(getattr(fresh, o.name), getattr(s, o.name)) for o in _core.OPTIONS)
print("unpickled every value")
"""


def test_python_code_run_while_unpickling_cannot_free_what_is_read() -> None:
    import os
    import subprocess
    import sys

    environment = dict(os.environ, PYTHONMALLOC="debug")
    done = subprocess.run([sys.executable, "-c", HOSTILE_UNPICKLING], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "unpickled every value"


def test_the_next_collider_id_is_bounded() -> None:
    s = scenes.cloth(3)
    function, arguments = reduction(s)
    arguments[2]["next_collider_id"] = 1 << 62
    copy = unpickle_forged(function, arguments)
    assert [copy.add_plane().id, copy.add_sphere((0.0, 1.0, 0.0), 0.5).id] == [1 << 62, (1 << 62) + 1]
    arguments[2]["next_collider_id"] = (1 << 62) + 1
    with pytest.raises(ValueError, match=f"next_collider_id = {(1 << 62) + 1} is out of range"):
        unpickle_forged(function, arguments)


def test_a_start_energy_that_overflowed_travels_as_not_kept() -> None:
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], k=1.0, gravity=(0.0, 0.0, 0.0))
    s.v[:] = 1e200  # finite, but its kinetic energy is beyond the largest double
    s._keep_start_energy(True)
    s.step(1e-300)
    assert s._start_energy() == (float("inf"), 0.0, 0.0)
    copy = roundtrip(s)
    assert copy._start_energy() is None
    assert bits(copy._pickle_state()["v"]) == bits(s._pickle_state()["v"])


class Slotted(msprings.System):
    """A subclass that keeps its attributes in slots only."""

    __slots__ = ("label",)


def test_a_subclass_with_slots_only_travels_and_refuses_a_dict() -> None:
    s = Slotted([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0]], [[0, 1]], k=20.0, pinned=[0])
    s.label = "pendulum"
    s.step(1e-3, 10)
    copy = roundtrip(s)
    assert type(copy) is Slotted and copy.label == "pendulum"
    assert everything(copy) == everything(s)
    function, arguments = reduction(s)
    arguments[4]["__dict__"] = {"label": "elsewhere"}
    with pytest.raises(ValueError, match="attributes a Slotted does not have: __dict__"):
        unpickle_forged(function, arguments)


# ---- trajectories -------------------------------------------------------------------


def trajectory_bits(trajectory: msprings.Trajectory) -> dict[str, Any]:
    from dataclasses import fields

    return {item.name: bits(getattr(trajectory, item.name)) for item in fields(trajectory)}


@pytest.mark.parametrize("velocities", [False, True])
def test_trajectory_pickles_bit_for_bit(velocities: bool) -> None:
    s = windy_flag("velocity_verlet")
    trajectory = s.run(DT, 60, 7, velocities=velocities)
    assert (trajectory.velocities is not None) == velocities
    assert len(trajectory.colliders) == 2 and trajectory.collider_centers.shape == (len(trajectory), 2, 3)
    for protocol in PROTOCOLS:
        copy = roundtrip(trajectory, protocol)
        assert type(copy) is msprings.Trajectory
        assert trajectory_bits(copy) == trajectory_bits(trajectory)
        assert bits(copy.wind) == bits(trajectory.wind)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(trajectory, protocol=5, buffer_callback=buffers.append)
    assert trajectory_bits(pickle.loads(data, buffers=buffers)) == trajectory_bits(trajectory)


def test_a_trajectory_with_unmade_records_pickles() -> None:
    s = msprings.System([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0]], [[0, 1]], k=1e6, pinned=[0], integrator="rk4")
    out = s.run(1e-4, 400, 100)
    with pytest.raises(msprings.DivergenceError), warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        s.run(1.0, 400, 100, out=out)
    assert (out.steps == -1).any()
    assert trajectory_bits(roundtrip(out)) == trajectory_bits(out)


def trajectory_forged(change: Any) -> Any:
    s = scenes.cloth(3)
    s.add_plane((0.0, -1.0, 0.0))
    function, arguments = s.run(DT, 6, 2).__reduce__()
    arguments = list(arguments)
    arguments[2] = dict(arguments[2])
    change(arguments)
    return unpickle_forged(function, arguments)


def trajectory_entry(key: str, value: Any) -> Any:
    def change(arguments: list[Any]) -> None:
        arguments[2][key] = value
    return change


def trajectory_index(key: str) -> Any:
    def change(arguments: list[Any]) -> None:
        value = arguments[2][key].copy()
        value[0, 1] = 99
        arguments[2][key] = value
    return change


def trajectory_nan(key: str) -> Any:
    def change(arguments: list[Any]) -> None:
        value = arguments[2][key].copy()
        value.flat[1] = np.nan
        arguments[2][key] = value
    return change


TRAJECTORY_DAMAGE = {
    "newer version": (set_argument(1, TRAJECTORY_PICKLE_VERSION + 1), "upgrade msprings"),
    "version text": (set_argument(1, "1"), "version tag"),
    "not a Trajectory class": (set_argument(0, dict), "not a Trajectory class"),
    "missing field": (lambda arguments: arguments[2].pop("times"), "exactly the fields"),
    "field named by a number": (trajectory_entry(3, 1.0), "exactly the fields"),
    "nan positions": (trajectory_nan("positions"), "positions holds NaN"),
    "nan energy": (trajectory_nan("energy"), "energy holds NaN"),
    "positions of the wrong shape": (trajectory_entry("positions", np.zeros((4, 9, 2))), "positions"),
    "too few times": (trajectory_entry("times", np.zeros(2)), "steps"),
    "springs out of range": (trajectory_index("springs"), "springs refer to nodes"),
    "faces out of range": (trajectory_index("faces"), "faces refer to nodes"),
    "steps below -1": (trajectory_entry("steps", np.array([0, -2, 4, 6])), "below -1"),
    "colliders not dicts": (trajectory_entry("colliders", ["plane"]), "colliders"),
    "centers of the wrong shape": (trajectory_entry("collider_centers", np.zeros((4, 3, 3))), "collider_centers"),
    "no centers for the colliders": (trajectory_entry("collider_centers", np.zeros((0, 0, 3))),
                                     r"collider_centers has shape \(0, 0, 3\), not \(4, 1, 3\)"),
    "nan dt": (trajectory_entry("dt", float("nan")), "dt"),
}


@pytest.mark.parametrize("case", sorted(TRAJECTORY_DAMAGE))
def test_damaged_trajectory_data_raises_value_error(case: str) -> None:
    change, message = TRAJECTORY_DAMAGE[case]
    with pytest.raises(ValueError, match=message):
        trajectory_forged(change)
    assert _unpickle_trajectory  # the reconstructor the forged data names


def test_a_trajectory_without_colliders_may_leave_their_centers_empty() -> None:
    trajectory = scenes.cloth(3).run(DT, 6, 2)
    function, arguments = trajectory.__reduce__()
    values = dict(arguments[2], collider_centers=np.zeros((0, 0, 3)))  # the field's default
    copy = unpickle_forged(function, [arguments[0], arguments[1], values])
    assert copy.frame(3)["colliders"] == []
    assert bits(copy.positions) == bits(trajectory.positions)


# ---- processes ------------------------------------------------------------------------


def step_elsewhere(system: msprings.System, dt: float, calls: tuple[int, ...]) -> msprings.System:
    """Runs in a worker process: steps the system it was sent and sends it back."""
    for n in calls:
        system.step(dt, n)
    return system


def test_a_system_steps_in_a_spawned_process_with_the_same_bits() -> None:
    s = windy_flag("implicit_euler")
    s.step(DT, 5)
    here = s.copy()
    calls = (3, 11)
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        back = pool.submit(step_elsewhere, s, DT, calls).result(timeout=300)
    step_elsewhere(here, DT, calls)
    assert everything(back) == everything(here)
    assert s.steps == 5  # the original stayed here, unstepped
    step_both(here, back)


def test_live_views_of_the_original_change_nothing() -> None:
    """Views the caller keeps make each step record the energy for the next to book; a
    copy without them books the same bits."""
    s = windy_flag("rk4")
    s.step(DT, 10)
    kept = (s.x, s.v, s.mass, s.k)
    copy = roundtrip(s)
    step_both(s, copy)
    kept[0][3, 0] += 1e-3  # a change through a kept view, booked by the next step of s only
    assert s.ledger().user != copy.ledger().user


def test_a_collider_handle_pickles_with_its_system() -> None:
    s = windy_flag("symplectic_euler")
    s.step(DT, 5)
    sphere = s.colliders[1]
    handle = roundtrip(sphere)
    assert handle.id == sphere.id
    assert bits(handle._system._get_collider(handle.id)) == bits(s._get_collider(sphere.id))
    assert everything(handle._system) == everything(s)


def test_a_differentiable_trajectory_keeps_its_gradient_through_pickle() -> None:
    """The tape (starting system and checkpoints) travels with the records: the unpickled copy
    gives the same gradient bit for bit; a damaged tape is refused."""
    s = msprings.System([[0, 0, 0], [0, -1, 0], [0.3, -2, 0]], [[0, 1], [1, 2]], pinned=[0], k=50.0, c=0.2)
    run = s.run(1e-3, 300, record_every=50, differentiable=True)
    seed = np.random.default_rng(3).normal(size=run.positions.shape)
    expected = run.backward(positions=seed)
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        travelled = pickle.loads(pickle.dumps(run, protocol=protocol))
        got = travelled.backward(positions=seed)
        assert all(np.array_equal(a, b) for a, b in zip(expected, got))
    function, arguments = run.__reduce__()
    with pytest.raises(ValueError, match="tape"):
        function(*arguments[:3], "not a tape")
    with pytest.raises(ValueError, match="no gradient"):
        pickle.loads(pickle.dumps(s.run(1e-3, 10))).backward(positions=np.zeros((11, 3, 3)))
