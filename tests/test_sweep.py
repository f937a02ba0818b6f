"""msprings.sweep: parameter sweeps on local threads and on a Dask cluster.

Every member is held to the system stepped alone (bit equality at its grid point), damped
springs to the closed-form period, the cluster's results to the local ones (bit equality of
every variable), the pandas output to the xarray output; divergence gives NaN and a flag;
bad arguments are refused before any member is built; Ctrl-C stops a local sweep.
"""
from __future__ import annotations

import json
import math
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import msprings
from msprings import scenes

xarray = pytest.importorskip("xarray")
pandas = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

from package_path import python_path  # noqa: E402

NO_GRAVITY = (0.0, 0.0, 0.0)
STRETCH = 0.1  # m, the free node's initial displacement along the spring


def spring(k: float, c: float) -> msprings.System:
    """A damped spring along x, node 0 pinned, 1 kg on node 1, stretched by STRETCH, no gravity."""
    return scenes.single_spring(k=k, c=c, stretch=STRETCH, gravity=NO_GRAVITY)


def hanging_chain(k: float, mass: float) -> msprings.System:
    """A 5-node chain hanging under gravity from node 0, started horizontally."""
    return scenes.chain(5, 0.5, k=k, c=0.5, mass=mass)


def chain_measure(system: msprings.System) -> dict[str, Any]:
    """The end's height (m), the total energy (J) and the end's velocity (m/s)."""
    return {"end_y": system.x[-1, 1], "energy": system.energy().total, "end_v": system.v[-1]}


def direct_records(system: msprings.System, dt: float, steps: int, record_every: int) -> list[np.ndarray]:
    """Positions at the start and every record_every steps, stepped alone."""
    records = [system.x.copy()]
    done = 0
    while done < steps:
        chunk = min(record_every, steps - done)
        system.step(dt, chunk)
        done += chunk
        records.append(system.x.copy())
    return records


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A two-process Dask cluster on this machine; this module's functions travel by value
    (the workers cannot import the test module)."""
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None)
    dask_client = distributed.Client(cluster)
    try:
        yield dask_client
    finally:
        dask_client.close()
        cluster.close()
        cloudpickle.unregister_pickle_by_value(module)


# ---------------------------------------------------------------------------------------
# physics and labels


def test_damped_periods_match_the_closed_form() -> None:
    """Zero crossings of damped springs over a k grid are T_d / 2 apart, with
    T_d = 2 pi / (omega sqrt(1 - zeta^2)), omega = sqrt(k / m), zeta = c / (2 sqrt(k m))."""
    ks = [5.0, 10.0, 20.0, 40.0]
    c, dt, steps = 0.4, 1e-3, 8000
    ds = msprings.sweep(spring, {"k": ks, "c": [c]}, dt, steps, record_every=1,
                        measure=lambda s: {"u": s.x[1, 0] - 1.0}, positions=False)
    assert not ds.diverged.any()
    for k in ks:
        u = ds.u.sel(k=k, c=c).values
        t = ds.time.values
        crossing = np.flatnonzero(np.sign(u[1:]) != np.sign(u[:-1]))
        times = t[crossing] - u[crossing] * (t[crossing + 1] - t[crossing]) / (u[crossing + 1] - u[crossing])
        assert len(times) >= 6
        half_periods = np.diff(times)
        zeta = c / (2.0 * math.sqrt(k * 1.0))
        period = 2.0 * math.pi / (math.sqrt(k / 1.0) * math.sqrt(1.0 - zeta**2))
        np.testing.assert_allclose(half_periods, period / 2.0, rtol=2e-4)
        # and the amplitude decays as exp(-zeta omega t): the first extremum after t = 0 is
        # the start's displacement scaled by the decay over half a damped period
        envelope = np.abs(u).max(initial=0.0, where=(t > 0.4 * period) & (t < 0.6 * period))
        np.testing.assert_allclose(envelope, STRETCH * math.exp(-zeta * math.sqrt(k) * period / 2), rtol=2e-3)


def test_every_grid_point_is_its_own_build_stepped_alone() -> None:
    ks, masses = [30.0, 60.0, 90.0], [0.5, 2.0]
    dt, steps, every = 2e-3, 2300, 250
    ds = msprings.sweep(hanging_chain, {"k": ks, "mass": masses}, dt, steps, record_every=every,
                        measure=chain_measure, workers=2, chunk_size=1)
    assert ds.x.dims == ("k", "mass", "time", "node", "axis")
    assert list(ds.k.values) == ks and list(ds.mass.values) == masses
    assert list(ds.step.values) == [0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000, 2250, 2300]
    np.testing.assert_array_equal(ds.time.values, ds.step.values * dt)
    for k in ks:
        for mass in masses:
            alone = hanging_chain(k, mass)
            records = direct_records(alone, dt, steps, every)
            assert np.array_equal(ds.x.sel(k=k, mass=mass).values, np.array(records))
            assert ds.end_y.sel(k=k, mass=mass).values[-1] == alone.x[-1, 1]
            assert ds.energy.sel(k=k, mass=mass).values[-1] == alone.energy().total
            assert np.array_equal(ds.end_v.sel(k=k, mass=mass).values[-1], alone.v[-1])


def test_members_step_as_an_ensemble_to_the_bits_of_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Members of one topology step together as an Ensemble; the same sweep stepped member by
    member (the ensemble switched off) gives the same bits, divergence and measures included."""
    sweep_module = sys.modules["msprings.sweep"]  # msprings.sweep is the function
    grid = {"k": [10.0, 50.0, 4.0e6], "mass": [0.5, 1.0]}  # k = 4e6 N/m blows up at dt = 2e-3 s
    members = [hanging_chain(k, mass) for k in grid["k"] for mass in grid["mass"]]
    assert sweep_module._ensemble_of(members) is not None
    together = msprings.sweep(hanging_chain, grid, 2e-3, 300, record_every=50, measure=chain_measure)
    monkeypatch.setattr(sweep_module, "_ensemble_of", lambda systems: None)
    alone = msprings.sweep(hanging_chain, grid, 2e-3, 300, record_every=50, measure=chain_measure)
    assert together.diverged.values.tolist() == [[False, False], [False, False], [True, True]]
    for name in ("x", "end_y", "energy", "end_v", "diverged"):
        assert np.array_equal(together[name].values, alone[name].values, equal_nan=name != "diverged"), name


def test_final_state_only_and_one_call_give_the_same_bits() -> None:
    """Without record_every only the end is kept: the bits of one step(dt, steps) call,
    however the sweep cuts the run into calls, on one thread or several."""
    dt, steps = 2e-3, 2500
    grid = {"k": [30.0, 60.0], "mass": [1.0, 3.0]}
    one = msprings.sweep(hanging_chain, grid, dt, steps, workers=1)
    many = msprings.sweep(hanging_chain, grid, dt, steps, workers=2, chunk_size=1)
    assert one.x.dims == ("k", "mass", "node", "axis") and "time" not in one.dims
    assert one.identical(many)
    for k in grid["k"]:
        for mass in grid["mass"]:
            alone = hanging_chain(k, mass)
            alone.step(dt, steps)
            assert np.array_equal(one.x.sel(k=k, mass=mass).values, alone.x)


def test_worker_processes_give_the_bits_of_threads() -> None:
    grid = {"k": [30.0, 60.0, 90.0], "mass": [0.5, 2.0]}
    arguments = dict(dt=2e-3, steps=700, record_every=100, measure=chain_measure)
    threads = msprings.sweep(hanging_chain, grid, **arguments)
    processes = msprings.sweep(lambda k, mass: hanging_chain(k, mass), grid, local="processes", workers=2,
                               **arguments)
    assert processes.identical(threads)


def test_pandas_output_equals_xarray_output() -> None:
    grid = {"k": [30.0, 60.0], "mass": [0.5, 1.0, 2.0]}
    arguments = dict(dt=2e-3, steps=600, record_every=200, measure=chain_measure)
    ds = msprings.sweep(hanging_chain, grid, output="xarray", **arguments)
    df = msprings.sweep(hanging_chain, grid, output="pandas", **arguments)
    assert isinstance(df, pandas.DataFrame)
    assert list(df.index.names) == ["k", "mass", "time"]
    assert len(df) == 2 * 3 * 4
    for k in grid["k"]:
        for mass in grid["mass"]:
            point = df.xs((k, mass), level=("k", "mass"))
            assert np.array_equal(point.index.values, ds.time.values)
            assert np.array_equal(point["end_y"].values, ds.end_y.sel(k=k, mass=mass).values)
            assert np.array_equal(point["energy"].values, ds.energy.sel(k=k, mass=mass).values)
            assert (point["diverged"] == bool(ds.diverged.sel(k=k, mass=mass))).all()
            for i in range(3):
                assert np.array_equal(point[f"end_v[{i}]"].values, ds.end_v.sel(k=k, mass=mass).values[:, i])
            for node in range(5):
                for a, axis in enumerate("xyz"):
                    assert np.array_equal(point[f"x[{node},{axis}]"].values,
                                          ds.x.sel(k=k, mass=mass).values[:, node, a])


def test_integrator_and_dt_axes() -> None:
    """"integrator" and "dt" are set by the sweep, not passed to build; the record axis is the
    step count when dt varies."""
    grid = {"k": [20.0], "c": [0.2], "integrator": ["rk4", "velocity_verlet"], "dt": [1e-3, 2e-3]}
    ds = msprings.sweep(spring, grid, None, 300, record_every=100)
    assert list(ds.step.values) == [0, 100, 200, 300] and "time" not in ds.dims
    for integrator in grid["integrator"]:
        for dt in grid["dt"]:
            alone = spring(20.0, 0.2)
            alone.integrator = integrator
            records = direct_records(alone, dt, 300, 100)
            assert np.array_equal(ds.x.sel(k=20.0, c=0.2, integrator=integrator, dt=dt).values, np.array(records))


def test_divergence_gives_nan_and_a_flag() -> None:
    """Symplectic Euler is stable for omega h < 2: at omega h = 2.4 the member blows up, is
    reported, and the others run on unharmed (and no StabilityWarning is raised, which the
    test settings would turn into an error)."""
    dt, steps, every = 0.8, 2000, 100
    ks = [1.0, 9.0]  # omega h = 0.8 and 2.4
    ds = msprings.sweep(lambda k: scenes.single_spring(k=k, c=0.0, stretch=STRETCH, gravity=NO_GRAVITY),
                        {"k": ks}, dt, steps, record_every=every, measure=lambda s: {"u": s.x[1, 0] - 1.0})
    assert list(ds.diverged.values) == [False, True]
    stable, unstable = ds.sel(k=1.0), ds.sel(k=9.0)
    assert np.isfinite(stable.x.values).all() and np.isfinite(stable.u.values).all()
    finite = np.isfinite(unstable.u.values)
    assert finite[0] and not finite[-1]
    made = int(finite.sum())  # the records before the call that diverged, then NaN only
    assert finite[:made].all() and not finite[made:].any() and np.isnan(unstable.x.values[made:]).all()
    alone = scenes.single_spring(k=9.0, c=0.0, stretch=STRETCH, gravity=NO_GRAVITY)
    with pytest.warns(msprings.StabilityWarning):
        records = direct_records(alone, dt, (made - 1) * every, every)
    assert np.array_equal(unstable.x.values[:made], np.array(records))
    with pytest.raises(msprings.DivergenceError), pytest.warns(msprings.StabilityWarning):
        scenes.single_spring(k=9.0, c=0.0, stretch=STRETCH, gravity=NO_GRAVITY).step(dt, steps)


def test_every_member_diverging_keeps_only_the_flags() -> None:
    ds = msprings.sweep(lambda k: scenes.single_spring(k=k, c=0.0, stretch=STRETCH, gravity=NO_GRAVITY),
                        {"k": [9.0, 16.0]}, 0.8, 2000)
    assert ds.diverged.values.all() and "x" not in ds


def test_pandas_when_xarray_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    grid = {"k": [30.0, 60.0], "mass": [1.0]}
    expected = msprings.sweep(hanging_chain, grid, 2e-3, 100, measure=chain_measure, output="pandas")
    monkeypatch.setitem(sys.modules, "xarray", None)  # import xarray now raises ImportError
    df = msprings.sweep(hanging_chain, grid, 2e-3, 100, measure=chain_measure)
    pandas.testing.assert_frame_equal(df, expected, check_exact=True)
    assert list(df.index.names) == ["k", "mass"]
    with pytest.raises(ImportError, match="xarray"):
        msprings.sweep(hanging_chain, grid, 2e-3, 100, output="xarray")


def test_progress_bar_counts_members(capsys: pytest.CaptureFixture[str]) -> None:
    msprings.sweep(spring, {"k": [10.0, 20.0, 30.0], "c": [0.1]}, 1e-3, 10, progress=True, workers=1, chunk_size=1)
    bar = capsys.readouterr().err
    assert bar.endswith("\n") and "3/3 members" in bar
    msprings.sweep(spring, {"k": [10.0, 20.0, 30.0], "c": [0.1]}, 1e-3, 10)  # short: no bar
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("record_every", [None, 5])
@pytest.mark.parametrize("key", ["x", "diverged", "time", "step", "node", "axis", "k", "c"])
def test_a_measure_key_the_results_or_the_grid_use_is_refused_at_the_first_record(key: str,
                                                                                   record_every: int | None) -> None:
    """Such a key would clash with a coordinate, a dimension or a variable of the results: it
    is refused, by name, where measure first returns it, and no member is measured again."""
    calls: list[float] = []

    def measure(system: msprings.System) -> dict[str, Any]:
        calls.append(system.t)
        return {"energy": system.energy().total, key: system.t}

    with pytest.raises(ValueError, match=f"measure's key '{key}'"):
        msprings.sweep(spring, {"k": [10.0, 20.0], "c": [0.1, 0.2]}, 1e-3, 20, record_every=record_every,
                       measure=measure, workers=1, chunk_size=4)
    # one call, on the first member's first record: at the start when recording, else at the end
    assert calls == [0.0] if record_every is not None else len(calls) == 1 and calls[0] > 0.0


class Given:
    """A grid value that NumPy cannot hold in a typed array."""

    def __repr__(self) -> str:
        return "Given()"


GIVEN = Given()


@pytest.mark.parametrize("values", [[1, "a"], [True, 2], [1, 2.5], [None, 3], [2.5, GIVEN], [np.int32(4), 4.5]])
def test_mixed_grid_values_reach_build_as_given(values: list[Any]) -> None:
    got: list[Any] = []

    def build(k: Any) -> msprings.System:
        got.append(k)
        return spring(20.0, 0.1)

    ds = msprings.sweep(build, {"k": values}, 1e-3, 10, workers=1)
    expected = [value.item() if isinstance(value, np.generic) else value for value in values]
    assert got == expected and [type(value) for value in got] == [type(value) for value in expected]
    # the labels are the values themselves, and select each member
    assert ds.k.dtype == object and list(ds.k.values) == list(values)
    alone = spring(20.0, 0.1)
    alone.step(1e-3, 10)
    for value in values:
        assert np.array_equal(ds.x.sel(k=value).values, alone.x)
    df = msprings.sweep(build, {"k": values}, 1e-3, 10, workers=1, output="pandas")
    # (as pandas labels them: None is its missing label)
    assert df.index.get_level_values("k").equals(pandas.Index(values, dtype=object))


@pytest.mark.parametrize(("values", "dtype"), [
    ([1.0, 2.5], np.float64), ([1, 2], np.int64), (["a", "bc"], np.dtype("<U2")), ([True, False], np.bool_),
    ([np.float32(0.5), np.float32(1.5)], np.float32), (np.array([3, 4], dtype=np.uint8), np.uint8),
])
def test_grid_values_of_one_type_keep_their_type(values: Any, dtype: Any) -> None:
    got: list[Any] = []

    def build(k: Any) -> msprings.System:
        got.append(k)
        return spring(20.0, 0.1)

    ds = msprings.sweep(build, {"k": values}, 1e-3, 10, workers=1)
    assert ds.k.dtype == dtype
    assert got == [value.item() if isinstance(value, np.generic) else value for value in values]
    assert [type(value) for value in got] == [type(value.item() if isinstance(value, np.generic) else value)
                                              for value in values]


def test_mixed_int_and_float_time_steps() -> None:
    """dt never reaches build: ints and floats together are time steps in s."""
    ds = msprings.sweep(spring, {"k": [0.01], "c": [0.0], "dt": [1, 0.5]}, None, 4)
    assert ds.dt.dtype == np.float64 and list(ds.dt.values) == [1.0, 0.5]
    for dt in (1.0, 0.5):
        alone = spring(0.01, 0.0)
        alone.step(dt, 4)
        assert np.array_equal(ds.x.sel(k=0.01, c=0.0, dt=dt).values, alone.x)


# ---------------------------------------------------------------------------------------
# Dask


def test_cluster_results_equal_local_results_bit_for_bit(client: Any) -> None:
    grid = {"k": [30.0, 45.0, 60.0], "mass": [0.5, 1.0, 2.0]}
    arguments = dict(dt=2e-3, steps=1500, record_every=100, measure=chain_measure)
    local = msprings.sweep(hanging_chain, grid, **arguments)
    remote = msprings.sweep(hanging_chain, grid, client=client, chunk_size=2, **arguments)
    assert set(remote.data_vars) == set(local.data_vars) == {"x", "end_y", "energy", "end_v", "diverged"}
    for name in local.data_vars:
        assert np.array_equal(remote[name].values, local[name].values), name
    assert remote.identical(local)
    # the chunks ran on both worker processes
    assert len(client.scheduler_info()["workers"]) == 2


def test_cluster_divergence_and_pandas(client: Any) -> None:
    grid = {"k": [1.0, 9.0], "integrator": ["symplectic_euler", "rk4"]}
    arguments = dict(dt=0.8, steps=2000, record_every=500, measure=lambda s: {"u": s.x[1, 0] - 1.0},
                     output="pandas")
    local = msprings.sweep(lambda k: scenes.single_spring(k=k, c=0.0, stretch=STRETCH, gravity=NO_GRAVITY),
                           grid, **arguments)
    remote = msprings.sweep(lambda k: scenes.single_spring(k=k, c=0.0, stretch=STRETCH, gravity=NO_GRAVITY),
                            grid, client=client, **arguments)
    pandas.testing.assert_frame_equal(remote, local, check_exact=True)
    flags = local["diverged"].groupby(level=["k", "integrator"]).first()
    # symplectic Euler fails at omega h = 2.4, RK4 (limit 2 sqrt 2) does not
    assert flags.to_dict() == {(1.0, "rk4"): False, (1.0, "symplectic_euler"): False,
                               (9.0, "rk4"): False, (9.0, "symplectic_euler"): True}


# ---------------------------------------------------------------------------------------
# bad input


def test_import_msprings_does_not_import_dask_xarray_or_pandas() -> None:
    code = ("import sys, msprings; msprings.sweep; "
            "print([m for m in ('dask', 'distributed', 'xarray', 'pandas') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=python_path()))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def built_nothing(**parameters: Any) -> msprings.System:
    raise AssertionError("a bad sweep must not build any member")


def one_argument(k: float) -> msprings.System:
    raise AssertionError("a bad sweep must not build any member")


def two_arguments(k: float, mass: float) -> msprings.System:
    raise AssertionError("a bad sweep must not build any member")


@pytest.mark.parametrize(("arguments", "error", "words"), [
    (dict(grid={}), ValueError, "grid"),
    (dict(grid=[("k", [1.0])]), TypeError, "grid"),
    (dict(grid={"k": 1.0}), TypeError, "grid['k']"),
    (dict(grid={"k": "abc"}), TypeError, "grid['k']"),
    (dict(grid={"k": [[1.0, 2.0]]}), ValueError, "grid['k'] must be 1-D"),
    (dict(grid={"k": []}), ValueError, "grid['k'] is empty"),
    (dict(grid={"k": [1.0], "mass": [1.0]}, build=one_argument), ValueError, "['mass']"),
    (dict(grid={"mass": [1.0]}, build=two_arguments), ValueError, "needs ['k']"),
    (dict(grid={"time": [1.0]}), ValueError, "'time'"),
    (dict(grid={"step": [1.0]}), ValueError, "'step'"),
    (dict(grid={"integrator": ["leapfrog"]}), ValueError, "grid['integrator']"),
    (dict(grid={"dt": [0.0]}, dt=None), ValueError, "grid['dt']"),
    (dict(grid={"dt": [1e-3]}), ValueError, "dt must be None"),
    (dict(build="spring"), TypeError, "build"),
    (dict(dt=0.0), ValueError, "dt"),
    (dict(dt=-1e-3), ValueError, "dt"),
    (dict(dt=math.nan), ValueError, "dt"),
    (dict(dt="1e-3"), TypeError, "dt"),
    (dict(dt=None), TypeError, "dt"),
    (dict(steps=-1), ValueError, "steps"),
    (dict(steps=1.5), TypeError, "steps"),
    (dict(steps=True), TypeError, "steps"),
    (dict(record_every=0), ValueError, "record_every"),
    (dict(measure="energy"), TypeError, "measure"),
    (dict(client="tcp://localhost:8786"), TypeError, "client"),
    (dict(chunk_size=0), ValueError, "chunk_size"),
    (dict(workers=0), ValueError, "workers"),
    (dict(local="gpu"), ValueError, "local"),
    (dict(output="csv"), ValueError, "output"),
    (dict(positions=1), TypeError, "positions"),
])
def test_bad_arguments_are_refused_before_any_work(arguments: dict[str, Any], error: type, words: str) -> None:
    call: dict[str, Any] = dict(build=built_nothing, grid={"k": [1.0]}, dt=1e-3, steps=10)
    call.update(arguments)
    with pytest.raises(error) as raised:
        msprings.sweep(call.pop("build"), call.pop("grid"), call.pop("dt"), call.pop("steps"), **call)
    assert words in str(raised.value)


def test_bad_build_and_measure_results() -> None:
    with pytest.raises(TypeError, match="build must return a msprings.System"):
        msprings.sweep(lambda k: k, {"k": [1.0]}, 1e-3, 10)
    with pytest.raises(TypeError, match="measure must return a dict"):
        msprings.sweep(spring, {"k": [1.0], "c": [0.0]}, 1e-3, 10, measure=lambda s: s.t)
    with pytest.raises(ValueError, match="measure's 'y' has shape"):
        msprings.sweep(lambda n: scenes.chain(n), {"n": [3, 4]}, 1e-3, 10, measure=lambda s: {"y": s.x[:, 1]},
                       positions=False, workers=1, chunk_size=2)
    with pytest.raises(ValueError, match="key 'k' is also a grid name"):
        msprings.sweep(spring, {"k": [1.0], "c": [0.0]}, 1e-3, 10, measure=lambda s: {"k": s.k[0]})
    with pytest.raises(ValueError, match="same keys"):
        msprings.sweep(lambda n: scenes.chain(n), {"n": [3, 4]}, 1e-3, 10, positions=False, workers=1, chunk_size=2,
                       measure=lambda s: {f"y{len(s.x)}": s.x[-1, 1]})
    with pytest.raises(ValueError, match="different keys"):
        msprings.sweep(lambda n: scenes.chain(n), {"n": [3, 4]}, 1e-3, 10, positions=False, workers=1, chunk_size=1,
                       measure=lambda s: {f"y{len(s.x)}": s.x[-1, 1]})
    with pytest.raises(ValueError, match="different node counts"):
        msprings.sweep(lambda n: scenes.chain(n), {"n": [3, 4]}, 1e-3, 10)


# ---------------------------------------------------------------------------------------
# Ctrl-C

INTERRUPT = r"""
import json, signal, threading, time
import msprings
from msprings import scenes

main = threading.main_thread().ident
threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT)).start()
start = time.perf_counter()
try:
    # some 10^10 member-steps of a 100-node cloth: hours of work
    msprings.sweep(lambda k: scenes.cloth(10, k=k), {"k": [1000.0 + i for i in range(64)]}, 1e-3, 10**8,
                   workers=2, progress=False)
    raised = "nothing"
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
seconds = time.perf_counter() - start
for thread in threading.enumerate():
    if thread.name.startswith("msprings-sweep"):
        thread.join()
print(json.dumps({"raised": raised, "seconds": seconds, "joined": time.perf_counter() - start}))
"""


def test_ctrl_c_stops_a_local_sweep() -> None:
    done = subprocess.run([sys.executable, "-c", INTERRUPT], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=python_path()))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["raised"] == "KeyboardInterrupt"
    # SIGINT comes after 0.5 s; the sweep would take hours, and its threads stop within one call
    assert result["seconds"] < 10.0 and result["joined"] < 30.0



def test_an_error_in_one_member_ends_every_worker_process() -> None:
    """local="processes": the other worker, hours from done, is ended with the sweep."""
    before = {process.pid for process in multiprocessing.active_children()}

    def build(k: float) -> msprings.System:
        if k == 0.0:
            import time

            time.sleep(1.0)  # the other member is being stepped by then
            raise RuntimeError("no member at k = 0")
        return scenes.cloth(10, k=k)

    try:
        with pytest.raises(RuntimeError, match="no member at k = 0"):
            # some 10^10 node-steps: hours of work
            msprings.sweep(build, {"k": [0.0, 1000.0]}, 1e-3, 10**8, local="processes", workers=2, chunk_size=1,
                           positions=False, progress=False)
        left = [process for process in multiprocessing.active_children() if process.pid not in before]
    finally:
        for process in multiprocessing.active_children():
            if process.pid not in before:
                process.terminate()
    assert left == []


INTERRUPT_PROCESSES = r"""
import json, multiprocessing, signal, threading
import msprings
from msprings import scenes

# SIGINT to this process's main thread only, as Jupyter's "interrupt kernel" sends it:
# the worker processes do not get it
main = threading.main_thread().ident
threading.Timer(2.0, signal.pthread_kill, (main, signal.SIGINT)).start()
try:
    msprings.sweep(lambda k: scenes.cloth(10, k=k), {"k": [1000.0, 1001.0]}, 1e-3, 10**8, local="processes",
                   workers=2, chunk_size=1, positions=False, progress=False)
    raised = "nothing"
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
print(json.dumps({"raised": raised, "children": len(multiprocessing.active_children())}), flush=True)
"""


def test_ctrl_c_in_the_main_process_ends_the_worker_processes() -> None:
    # the script exits only once its worker processes have ended
    done = subprocess.run([sys.executable, "-c", INTERRUPT_PROCESSES], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=python_path()))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"raised": "KeyboardInterrupt", "children": 0}


def test_an_error_in_build_names_its_grid_point() -> None:
    with pytest.raises(ValueError, match="k") as caught:
        msprings.sweep(spring, {"k": [10.0, -1.0], "c": [0.1]}, 1e-3, 10, workers=1)
    assert "(raised by build for the grid point {'k': -1.0, 'c': 0.1})" in caught.value.__notes__
