"""Parameter sweeps: one system per point of a Cartesian grid, stepped on local cores or on a
Dask distributed cluster, with the results labelled by parameter.

:func:`sweep` builds a member with ``build(**point)`` for every point of the grid, steps every
member ``steps`` steps of ``dt`` seconds, keeps the positions and what ``measure`` returns
(at the end, or every ``record_every`` steps) and returns them as an xarray Dataset or a
pandas DataFrame.  Members are built where they run: nothing but ``build``, ``measure`` and the
grid points travel to a cluster, and only NumPy arrays come back.
"""
from __future__ import annotations

import inspect
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from ._system import System
from .trajectory import _Progress

if TYPE_CHECKING:
    import pandas
    import xarray

__all__ = ["sweep"]

#: Grid names that are not passed to ``build``: a member's time step and integrator.
SPECIAL_NAMES = ("dt", "integrator")

#: A member is stepped at most this many steps per call, so that a stopped sweep (Ctrl-C, an
#: error in another member) ends within one such call.  Cutting a run into calls does not
#: change its bits.
_STEPS_PER_CALL = 1000

#: Progress bars are shown for sweeps of at least this many member-steps.
_LONG_SWEEP = 10_000_000

_NODE_COUNTS = ("members have different node counts, so their positions cannot be stacked: pass "
                "positions=False and measure what you need")

#: Names the results use for their own variables and dimensions.
_RESULT_NAMES = ("x", "diverged", "time", "step", "node", "axis")

Measure = Callable[[System], Mapping[str, Any]]


class _Stopped(Exception):
    """Raised inside a local worker thread when the sweep has been stopped."""


# ---------------------------------------------------------------------------------------
# stepping: the one place where members are advanced


def _run_members(systems: Sequence[System], dt: float, steps: int, record_every: int | None,
                 measure: Measure | None, *, positions: bool = True, grid_names: Sequence[str] = (),
                 stop: threading.Event | None = None) -> dict[str, np.ndarray]:
    """Step every system ``steps`` steps of ``dt`` (s) and keep its records.

    Returns arrays with a leading member axis ``B = len(systems)``: ``"x"`` (B, R, n, 3) in m
    (R = 1 + ceil(steps / record_every) records when recording, else the final state only,
    (B, n, 3); only if ``positions``); each of measure's keys (B, R, *shape) or (B, *shape);
    ``"diverged"`` (B,) bool.  A measure key that the results use (``_RESULT_NAMES``) or that
    is one of ``grid_names`` is refused (ValueError) at the first record.  A member that
    raises :class:`msprings.DivergenceError` is rolled back by its step call and stepped no
    further: its records from then on are NaN.  ``stop``, once set, ends the run
    (:class:`_Stopped`) before the next call of at most ``_STEPS_PER_CALL`` steps.

    All members advance one record interval, then all are recorded.  Members of one topology
    step as one :class:`msprings.Ensemble` (a copy of them: ``systems`` are left as built), whose
    member i gives the bits of ``systems[i]`` stepped alone; ``measure`` then sees member i as
    ``ensemble.system(i)``.
    """
    count = len(systems)
    if record_every is None:
        boundaries = [steps]
    else:
        boundaries = list(range(record_every, steps, record_every)) + [steps] if steps > 0 else []
    records = len(boundaries) + 1 if record_every is not None else 1
    diverged = np.zeros(count, dtype=bool)
    kept: dict[str, np.ndarray] = {}

    # Members of one topology step together as an Ensemble (one C call for all of them, the
    # tiny ones several to a vector), each to the bits it would reach alone; others one by one.
    ensemble = _ensemble_of(systems)

    def keep(r: int) -> None:
        for i, system in enumerate(systems):
            if diverged[i]:
                continue
            values = {"x": system.x if ensemble is None else ensemble.x[i]} if positions else {}
            if measure is not None:
                member = system if ensemble is None else ensemble.system(i)
                values.update(_measured(measure(member), grid_names))
            if not kept:
                for name, value in values.items():
                    kept[name] = np.full((count, records, *value.shape), np.nan)
            if values.keys() != kept.keys():
                raise ValueError(f"measure must return the same keys for every member and record: got "
                                 f"{sorted(values)} after {sorted(kept)}")
            for name, value in values.items():
                if value.shape != kept[name].shape[2:]:
                    if name == "x":
                        raise ValueError(_NODE_COUNTS)
                    raise ValueError(f"measure's {name!r} has shape {value.shape} for one member and "
                                     f"{kept[name].shape[2:]} for another: every record needs the same shape")
                kept[name][i, r] = value

    if record_every is not None:
        keep(0)
    done = 0
    for r, boundary in enumerate(boundaries, start=1):
        while done < boundary:
            chunk = min(_STEPS_PER_CALL, boundary - done)
            if stop is not None and stop.is_set():
                raise _Stopped
            if ensemble is not None:
                ensemble.step(dt, chunk)
                diverged |= ensemble.diverged
            else:
                for i, system in enumerate(systems):
                    if diverged[i]:
                        continue
                    try:
                        system.step(dt, chunk)
                    except _core.DivergenceError:
                        diverged[i] = True
            done += chunk
        if record_every is not None:
            keep(r)
    if record_every is None:
        keep(0)
    # (when every member diverged before its only record, only "diverged" is known)
    result = {name: (value if record_every is not None else value[:, 0]) for name, value in kept.items()}
    result["diverged"] = diverged
    return result


def _ensemble_of(systems: Sequence[System]) -> Any:
    """The systems as one :class:`msprings.Ensemble` (copies: the systems are left as they are),
    or None when they cannot step as one (different topologies, a single member)."""
    if len(systems) < 2:
        return None
    from .ensemble import Ensemble

    try:
        return Ensemble(systems)
    except ValueError:
        return None


def _measured(values: Any, grid_names: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """measure's dict as float64 arrays, checked: its keys must be identifiers other than the
    results' own names and the grid's names."""
    if not isinstance(values, Mapping):
        raise TypeError(f"measure must return a dict of floats or arrays, got {type(values).__name__}")
    out = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"measure's keys must be identifiers, got {name!r}")
        if name in _RESULT_NAMES:
            raise ValueError(f"measure's key {name!r} is a name the results use for their own variables and "
                             f"dimensions ({', '.join(map(repr, _RESULT_NAMES))}): rename it")
        if name in grid_names:
            raise ValueError(f"measure's key {name!r} is also a grid name: rename it")
        try:
            out[name] = np.array(value, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError(f"measure's {name!r} must be a float or an array of floats: {error}") from None
    return out


def _run_chunk(build: Callable[..., System], measure: Measure | None, names: tuple[str, ...],
               points: list[tuple[Any, ...]], dt: float, steps: int, record_every: int | None,
               positions: bool, stop: threading.Event | None = None) -> dict[str, np.ndarray]:
    """Build the members of one chunk (grid points ``points``, one dt) and run them."""
    systems = []
    for point in points:
        if stop is not None and stop.is_set():
            raise _Stopped
        parameters = dict(zip(names, point))
        integrator = parameters.pop("integrator", None)
        parameters.pop("dt", None)
        try:
            system = build(**parameters)
        except Exception as error:
            error.add_note(f"(raised by build for the grid point {dict(zip(names, point))})")
            raise
        if not isinstance(system, System):
            raise TypeError(f"build must return a msprings.System, got {type(system).__name__} "
                            f"for {dict(zip(names, point))}")
        if integrator is not None:
            system.integrator = integrator
        # a member past its integrator's stable step is the point of many sweeps: its
        # divergence is reported in the results, not by a warning per member
        system._warned = getattr(system, "_warned", frozenset()) | {"stability"}
        systems.append(system)
    return _run_members(systems, dt, steps, record_every, measure, positions=positions, grid_names=names,
                        stop=stop)


# ---------------------------------------------------------------------------------------
# checks


def _check_grid(grid: Any) -> tuple[tuple[str, ...], list[np.ndarray]]:
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a mapping of names to 1-D sequences of values, got {type(grid).__name__}")
    if not grid:
        raise ValueError("grid must name at least one parameter (it is empty)")
    names, axes = [], []
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"grid's names must be identifiers (build's keywords), got {name!r}")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"grid[{name!r}] must be a 1-D sequence of values, got {type(values).__name__}")
        axis = _grid_axis(values)
        if axis.ndim != 1 or (axis.dtype == object and any(np.ndim(value) != 0 for value in axis)):
            raise ValueError(f"grid[{name!r}] must be 1-D, got shape {np.shape(values)}")
        if axis.size == 0:
            raise ValueError(f"grid[{name!r}] is empty: every grid axis needs at least one value")
        if name in _RESULT_NAMES:
            raise ValueError(f"grid may not use the name {name!r}: the results use it")
        names.append(name)
        axes.append(axis)
    if "dt" in grid:
        dts = axes[names.index("dt")]
        if dts.dtype == object and all(isinstance(value, (int, float, np.integer, np.floating))
                                       and not isinstance(value, (bool, np.bool_)) for value in dts):
            # mixed ints and floats: time steps, never passed to build
            dts = axes[names.index("dt")] = dts.astype(np.float64)
        if dts.dtype.kind not in "iuf" or not (np.isfinite(dts) & (dts > 0)).all():
            raise ValueError(f"grid['dt'] must hold finite time steps > 0 (s), got {dts!r}")
    if "integrator" in grid:
        for value in axes[names.index("integrator")]:
            if value not in _core.INTEGRATORS:
                raise ValueError(f"grid['integrator'] holds {value!r}, not one of {_core.INTEGRATORS}")
    return tuple(names), axes


def _grid_axis(values: Any) -> np.ndarray:
    """One grid axis as an array whose values are those given.

    A typed array (float64, int64, str, ...) when every value comes back from it as the same
    Python type it went in as; else (mixed types, e.g. ``[1, "a"]``, ``[True, 2]``,
    ``[1, 2.5]``, which NumPy would convert to one type) an object array holding the values
    themselves, so that ``build`` gets them as given.
    """
    if isinstance(values, np.ndarray):
        return values
    values = list(values)
    try:
        typed = np.asarray(values)
    except (ValueError, OverflowError):  # ragged or too large for a NumPy type
        typed = None
    if typed is not None and typed.ndim != 1:
        return typed
    if typed is not None and typed.dtype != object and all(
            type(_python_value(kept)) is type(_python_value(value)) for kept, value in zip(typed, values)):
        return typed
    axis = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        axis[i] = value
    return axis


def _check_build(build: Any, names: Sequence[str]) -> None:
    if not callable(build):
        raise TypeError(f"build must be a callable returning a msprings.System, got {type(build).__name__}")
    passed = [name for name in names if name not in SPECIAL_NAMES]
    try:
        signature = inspect.signature(build)
    except (TypeError, ValueError):  # no signature to check against (some builtins)
        return
    parameters = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    keywords = {name for name, p in parameters.items()
                if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    unknown = [name for name in passed if name not in keywords]
    if unknown:
        raise ValueError(f"grid names {unknown} are not parameters of build{signature} "
                         f"(only {SPECIAL_NAMES} are taken by the sweep itself)")
    missing = [name for name, p in parameters.items() if p.default is inspect.Parameter.empty
               and p.kind not in (inspect.Parameter.VAR_POSITIONAL,) and name not in passed]
    if missing:
        raise ValueError(f"build{signature} needs {missing}, which grid does not give")


def _positive_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_dt(dt: Any, grid_has_dt: bool) -> float | None:
    if grid_has_dt:
        if dt is not None:
            raise ValueError("dt must be None when grid has a 'dt' axis (each member takes its own)")
        return None
    if dt is None or isinstance(dt, bool) or not isinstance(dt, (int, float, np.integer, np.floating)):
        raise TypeError(f"dt must be a time step in s (a number), got {type(dt).__name__}")
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be finite and > 0 (s), got {dt!r}")
    return float(dt)


def _check_client(client: Any) -> None:
    if client is None:
        return
    try:
        from distributed import Client
    except ImportError:
        raise TypeError("client must be a distributed.Client (install the 'sweep' extra: "
                        "pip install 'msprings[sweep]'), got " + type(client).__name__) from None
    if not isinstance(client, Client):
        raise TypeError(f"client must be a distributed.Client or None, got {type(client).__name__}")


def _output_kind(output: Any) -> str:
    if output not in (None, "xarray", "pandas"):
        raise ValueError(f"output must be 'xarray', 'pandas' or None, got {output!r}")
    wanted = ("xarray", "pandas") if output is None else (output,)
    for kind in wanted:
        try:
            __import__(kind)
        except ImportError:
            continue
        return kind
    raise ImportError(f"sweep's results need {' or '.join(wanted)}: pip install 'msprings[sweep]'")


# ---------------------------------------------------------------------------------------
# the sweep


def sweep(
    build: Callable[..., System],
    grid: Mapping[str, Sequence[Any]],
    dt: float | None,
    steps: int,
    record_every: int | None = None,
    measure: Measure | None = None,
    client: Any = None,
    *,
    chunk_size: int | None = None,
    workers: int | None = None,
    local: str = "threads",
    positions: bool = True,
    output: str | None = None,
    progress: bool | None = None,
) -> "xarray.Dataset | pandas.DataFrame":
    """Run one system for every point of a Cartesian grid of parameters.

    Needs the ``sweep`` extra (``pip install 'msprings[sweep]'``: xarray or pandas for the
    results, Dask distributed for a cluster).

    Parameters
    ----------
    build : callable
        ``build(**point) -> System``: one member from one grid point, e.g.
        ``lambda k, c: msprings.scenes.single_spring(k=k, c=c)``.  Called where the member
        runs (a worker thread, or a Dask worker: it travels there with cloudpickle), so no
        System is ever pickled.  Every grid name except ``"dt"`` and ``"integrator"`` must be
        one of its keywords.
    grid : mapping of str to 1-D sequence
        Parameter name -> its values; the sweep runs their Cartesian product (in the order
        the names are given).  Two names are taken by the sweep instead of ``build``:
        ``"dt"`` (each member's time step in s; ``dt`` must then be None) and
        ``"integrator"`` (set on each member after ``build``); members are grouped by them.
    dt : float or None
        Time step (s), > 0; None when the grid has a ``"dt"`` axis.
    steps : int
        Steps per member, >= 0.
    record_every : int, optional
        Keep a record every ``record_every`` steps (and at the start and the end), as
        :meth:`System.run` does; by default only the final state is kept.
    measure : callable, optional
        ``measure(system) -> dict`` of floats or arrays, called on each member at each
        record, e.g. ``lambda s: {"energy": s.energy().total, "y": s.x[-1, 1]}``.  Its
        contract, which lets a batched ensemble call it on member views later: it only
        reads the member (no writes, no stepping, no state of its own between calls), and
        it returns the same keys, each with the same shape, for every member and record.
        Keys must be identifiers other than the grid's names and the names the results use
        (``"x"``, ``"diverged"``, ``"time"``, ``"step"``, ``"node"``, ``"axis"``): such a key
        is refused at the first record.  It travels to the cluster with ``build``.
    client : distributed.Client, optional
        None runs on this machine's cores (``workers`` threads; System.step releases the
        GIL).  A Dask ``distributed.Client`` runs the grid as tasks of ``chunk_size``
        members on its cluster (local, SSH, Kubernetes, an HPC job queue: any cluster Dask
        starts); the results are bitwise those of a local sweep.
    chunk_size : int, optional
        Members per task.  Default: the members split into about 4 tasks per local thread, or
        2 per worker thread of a cluster (where each task costs a round trip), at least 1
        member each: enough to balance the load and keep the progress bar moving.
    workers : int, optional
        Local threads or processes (default: the number of cores).  Ignored with a client.
    local : {"threads", "processes"}
        How a local sweep uses the cores.  ``"threads"`` (the default) shares this process:
        no start-up cost, but a step call of a small system (under about 80,000 node and
        spring visits) keeps the GIL, so many small members step one at a time.
        ``"processes"`` runs the chunks in a pool of worker processes started for the sweep
        (forkserver where available, else spawn; ``build`` and ``measure`` travel with
        cloudpickle, which the ``sweep`` extra brings): small members then use every core,
        after a start-up of the order of a second.  A script that uses it, like one that
        starts a Dask ``LocalCluster``, must run its sweep under
        ``if __name__ == "__main__":``.  The results are the same bits either way.
    positions : bool
        Keep the node positions (``"x"``).  Default True; every member must then have the
        same node count.
    output : {"xarray", "pandas"}, optional
        The type of the results; by default an xarray Dataset when xarray is installed,
        else a pandas DataFrame.
    progress : bool, optional
        Show a progress bar of members done on stderr; by default only for long sweeps
        (10^7 member-steps or more) in a terminal or Jupyter.

    Returns
    -------
    xarray.Dataset or pandas.DataFrame
        A Dataset with one dimension per grid name (its values as coordinates), a record
        dimension when recording -- ``"time"`` (s, steps taken x dt, counted from the
        member's start; the coordinate ``"step"`` along it gives the step counts), or
        ``"step"`` when the grid has a ``"dt"`` axis -- and variables:
        ``x`` ``(*grid, [time,] node, axis)`` positions in m with axis coordinates x, y, z;
        each of measure's keys ``(*grid, [time,] *shape)``, array keys getting dimensions
        ``<key>_0``, ``<key>_1``, ...; ``diverged`` ``(*grid)`` bool.  The DataFrame is the same
        in long form: a row per grid point (and record), indexed by the grid names (and
        time or step); columns ``diverged``, each scalar measure, ``key[i]``, ``key[i,j]``, ... for array
        measures and ``x[node,axis]`` (e.g. ``x[3,y]``) for positions.  Records follow
        :meth:`System.run`'s: the start, every ``record_every`` steps, and the end.

    Notes
    -----
    A member that diverges (:class:`msprings.DivergenceError`) stops there: its records from
    then on are NaN and ``diverged`` is True; the sweep goes on.  Members past their
    integrator's stable step give no :class:`StabilityWarning` (the results report them).
    Each member gives exactly the bits of ``build(**point)`` stepped alone with
    :meth:`System.step`, on any number of threads or workers.

    Ctrl-C during a local sweep (or Jupyter's "interrupt kernel", which reaches only this
    process) raises KeyboardInterrupt at once, and no results are returned (the members
    finished until then are dropped).  An exception in one member (from ``build`` or
    ``measure``) ends the sweep the same way and is raised.  Worker threads then stop
    within one call of at most 1000 steps; worker processes are told to stop and are ended
    before the exception is raised, so none is left running.  With a client, the chunks
    not yet done are cancelled on the cluster.

    Raises
    ------
    TypeError
        ``build``, ``measure`` not callable; ``grid`` not a mapping or a value not a
        sequence; ``dt``, ``steps``, ``record_every``, ``chunk_size`` or ``workers`` of the
        wrong type; ``client`` not a ``distributed.Client``; ``build`` returns something
        other than a System; ``measure`` returns something other than a dict of floats.
    ValueError
        An empty grid or grid axis, a grid axis that is not 1-D, grid names that ``build``
        does not take (or a keyword it needs that the grid lacks), ``dt <= 0``,
        ``steps < 0``, ``record_every < 1``, an unknown ``output`` or ``local``, members with different
        node counts when ``positions``, a measure key that is a grid name or a name the
        results use (raised at the first record), or a measure whose keys or shapes change.
        All but the last three are raised before any member is built.
    ImportError
        Neither xarray nor pandas (or not the one ``output`` asks for) is installed.
    """
    names, axes = _check_grid(grid)
    _check_build(build, names)
    step_size = _check_dt(dt, "dt" in names)
    steps = _positive_int(steps, "steps", 0)
    if record_every is not None:
        record_every = _positive_int(record_every, "record_every", 1)
    if measure is not None and not callable(measure):
        raise TypeError(f"measure must be a callable or None, got {type(measure).__name__}")
    _check_client(client)
    if chunk_size is not None:
        chunk_size = _positive_int(chunk_size, "chunk_size", 1)
    if workers is not None:
        workers = _positive_int(workers, "workers", 1)
    if local not in ("threads", "processes"):
        raise ValueError(f"local must be 'threads' or 'processes', got {local!r}")
    if not isinstance(positions, bool):
        raise TypeError(f"positions must be True or False, got {type(positions).__name__}")
    kind = _output_kind(output)

    shape = tuple(len(axis) for axis in axes)
    total = math.prod(shape)
    points = _points(axes)  # (total,) tuples of values, C order over the grid
    groups = _groups(names, points, step_size)
    if client is None:
        threads = workers or os.cpu_count() or 1
    else:
        threads = max(1, sum(client.nthreads().values()))
    # a few tasks per worker thread balance the load; a cluster's tasks cost a round trip each
    size = chunk_size or max(1, math.ceil(total / ((4 if client is None else 2) * threads)))
    chunks = [(group_dt, members[start:start + size]) for group_dt, members in groups
              for start in range(0, len(members), size)]
    show = progress if progress is not None else (total * steps >= _LONG_SWEEP and _interactive())
    bar = _Progress(total, "members") if show else None
    if client is not None:
        results = _run_cluster(build, measure, names, points, chunks, steps, record_every, positions, client, bar)
    else:
        results = _run_local(build, measure, names, points, chunks, steps, record_every, positions, threads,
                             local == "processes", bar)
    arrays = _gather(results, chunks, total)
    if kind == "xarray":
        return _dataset(arrays, names, axes, shape, step_size, steps, record_every)
    return _dataframe(arrays, names, axes, shape, step_size, steps, record_every)


def _interactive() -> bool:
    from .trajectory import _interactive as interactive

    return interactive()


def _points(axes: list[np.ndarray]) -> list[tuple[Any, ...]]:
    """Every grid point, C order (the last name varies fastest), as Python values."""
    index = np.indices(tuple(len(axis) for axis in axes)).reshape(len(axes), -1)
    return [tuple(_python_value(axis[i]) for axis, i in zip(axes, column)) for column in index.T]


def _python_value(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (build gets floats, ints and strs)."""
    return value.item() if isinstance(value, np.generic) else value


def _groups(names: tuple[str, ...], points: list[tuple[Any, ...]],
            step_size: float | None) -> list[tuple[float, list[int]]]:
    """Members grouped by (dt, integrator), each group in grid order: [(dt, member indices)]."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for member, point in enumerate(points):
        values = dict(zip(names, point))
        key = (values.get("dt", step_size), values.get("integrator"))
        groups.setdefault(key, []).append(member)
    return [(float(key[0]), members) for key, members in groups.items()]


#: In a worker process of a local sweep: the sweep's stop event, set by the pool's initializer
#: (an Event can reach another process only when it starts, not with each task).
_worker_stop: Any = None


def _start_worker(stop: Any) -> None:
    """The process pool's initializer: keep the sweep's stop event for :func:`_run_pickled_chunk`."""
    global _worker_stop
    _worker_stop = stop


def _run_pickled_chunk(functions: bytes, names: tuple[str, ...], points: list[tuple[Any, ...]], dt: float,
                       steps: int, record_every: int | None, positions: bool) -> dict[str, np.ndarray]:
    """:func:`_run_chunk` in a worker process, with build and measure sent by cloudpickle; it
    stops (:class:`_Stopped`) once the sweep's stop event is set."""
    import cloudpickle

    build, measure = cloudpickle.loads(functions)
    return _run_chunk(build, measure, names, points, dt, steps, record_every, positions, _worker_stop)


def _process_pool(workers: int) -> tuple[ProcessPoolExecutor, Any]:
    """A pool of ``workers`` processes and the stop event they share."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    # never fork: this process may run threads (a notebook's, a cluster client's)
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    stop = context.Event()
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                               initargs=(stop,)), stop


def _end_pool(executor: ProcessPoolExecutor) -> None:
    """Cancel a failed sweep's chunks and end its worker processes now: their results would be
    dropped, and a process still stepping would hold up the interpreter's exit."""
    # the pool's own list of its processes (ProcessPoolExecutor has no public one before
    # Python 3.14), taken before shutdown forgets it
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5.0)


def _run_local(build: Callable[..., System], measure: Measure | None, names: tuple[str, ...],
               points: list[tuple[Any, ...]], chunks: list[tuple[float, list[int]]], steps: int,
               record_every: int | None, positions: bool, workers: int, processes: bool,
               bar: _Progress | None) -> list[dict[str, np.ndarray]]:
    stop: Any = threading.Event()
    results: list[dict[str, np.ndarray] | None] = [None] * len(chunks)
    futures: dict[Future[dict[str, np.ndarray]], int] = {}
    executor: Executor
    if processes:
        try:
            import cloudpickle
        except ImportError:
            raise ImportError("local='processes' sends build and measure with cloudpickle: "
                              "pip install 'msprings[sweep]'") from None
        functions = cloudpickle.dumps((build, measure))
        executor, stop = _process_pool(min(workers, len(chunks)))
    else:
        executor = ThreadPoolExecutor(max_workers=min(workers, len(chunks)), thread_name_prefix="msprings-sweep")
    try:
        for index, (group_dt, members) in enumerate(chunks):
            chunk = [points[m] for m in members]
            if processes:
                future = executor.submit(_run_pickled_chunk, functions, names, chunk, group_dt, steps, record_every,
                                         positions)
            else:
                future = executor.submit(_run_chunk, build, measure, names, chunk, group_dt, steps, record_every,
                                         positions, stop)
            futures[future] = index
        pending = set(futures)
        done_members = 0
        while pending:
            # a timeout keeps the main thread waking up, so Ctrl-C is seen at once
            finished, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for future in finished:
                index = futures[future]
                results[index] = future.result()
                done_members += len(chunks[index][1])
                if bar is not None:
                    bar.update(done_members)
    except BaseException:
        stop.set()
        if isinstance(executor, ProcessPoolExecutor):
            _end_pool(executor)
        else:
            executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    return results  # type: ignore[return-value]


def _run_cluster(build: Callable[..., System], measure: Measure | None, names: tuple[str, ...],
                 points: list[tuple[Any, ...]], chunks: list[tuple[float, list[int]]], steps: int,
                 record_every: int | None, positions: bool, client: Any,
                 bar: _Progress | None) -> list[dict[str, np.ndarray]]:
    from distributed import as_completed

    futures = [client.submit(_run_chunk, build, measure, names, [points[m] for m in members], group_dt, steps,
                             record_every, positions, pure=False) for group_dt, members in chunks]
    index_of = {future.key: index for index, future in enumerate(futures)}
    results: list[dict[str, np.ndarray] | None] = [None] * len(chunks)
    done_members = 0
    try:
        for future in as_completed(futures):
            index = index_of[future.key]
            results[index] = future.result()
            done_members += len(chunks[index][1])
            if bar is not None:
                bar.update(done_members)
    except BaseException:
        client.cancel(futures)
        raise
    return results  # type: ignore[return-value]


def _gather(results: list[dict[str, np.ndarray]], chunks: list[tuple[float, list[int]]],
            total: int) -> dict[str, np.ndarray]:
    """The chunks' arrays put together in grid order, (total, ...) each."""
    arrays: dict[str, np.ndarray] = {}
    keys = {frozenset(result) for result in results if len(result) > 1}
    if len(keys) > 1:
        raise ValueError("measure returned different keys for different members")
    for result, (_, members) in zip(results, chunks):
        for name, value in result.items():
            if name not in arrays:
                fill = False if name == "diverged" else np.nan
                arrays[name] = np.full((total, *value.shape[1:]), fill, dtype=value.dtype)
            if value.shape[1:] != arrays[name].shape[1:]:
                if name == "x":
                    raise ValueError(_NODE_COUNTS)
                raise ValueError(f"measure's {name!r} has shape {value.shape[1:]} for some members and "
                                 f"{arrays[name].shape[1:]} for others: every member needs the same shape")
            arrays[name][members] = value
    return arrays


def _record_axis(step_size: float | None, steps: int, record_every: int) -> tuple[str, np.ndarray, np.ndarray]:
    """The record dimension's name, its coordinate values and the step count of every record."""
    counts = np.array([0, *range(record_every, steps, record_every), steps] if steps > 0 else [0], dtype=np.int64)
    if step_size is None:
        return "step", counts, counts
    return "time", counts * step_size, counts


def _dataset(arrays: dict[str, np.ndarray], names: tuple[str, ...], axes: list[np.ndarray], shape: tuple[int, ...],
             step_size: float | None, steps: int, record_every: int | None) -> "xarray.Dataset":
    import xarray

    coords: dict[str, Any] = {name: axis for name, axis in zip(names, axes)}
    record_dims: tuple[str, ...] = ()
    if record_every is not None:
        dim, values, counts = _record_axis(step_size, steps, record_every)
        coords[dim] = values
        if dim == "time":
            coords["step"] = (dim, counts)
        record_dims = (dim,)
    variables: dict[str, Any] = {}
    for name, array in arrays.items():
        array = array.reshape(shape + array.shape[1:])
        if name == "diverged":
            variables[name] = (names, array)
            continue
        rest = array.ndim - len(shape) - len(record_dims)
        if name == "x":
            extra: tuple[str, ...] = ("node", "axis")
            coords["axis"] = ["x", "y", "z"]
        else:
            extra = tuple(f"{name}_{i}" for i in range(rest))
        variables[name] = (names + record_dims + extra, array)
    return xarray.Dataset(variables, coords=coords)


def _dataframe(arrays: dict[str, np.ndarray], names: tuple[str, ...], axes: list[np.ndarray], shape: tuple[int, ...],
               step_size: float | None, steps: int, record_every: int | None) -> "pandas.DataFrame":
    import pandas

    levels = [pandas.Index(axis) for axis in axes]
    level_names = list(names)
    records = 1
    if record_every is not None:
        dim, values, _ = _record_axis(step_size, steps, record_every)
        levels.append(pandas.Index(values))
        level_names.append(dim)
        records = len(values)
    index = pandas.MultiIndex.from_product(levels, names=level_names)
    columns: dict[str, np.ndarray] = {}
    total = math.prod(shape)
    for name, array in arrays.items():
        if name == "diverged":
            columns[name] = np.repeat(array, records)
            continue
        cell_shape = array.shape[1 + (record_every is not None):]
        flat = array.reshape(total * records, math.prod(cell_shape))
        if not cell_shape:
            columns[name] = flat[:, 0]
            continue
        for j, cell in enumerate(np.ndindex(*cell_shape)):
            if name == "x":
                label = f"x[{cell[0]},{'xyz'[cell[1]]}]"
            else:
                label = f"{name}[{','.join(str(i) for i in cell)}]"
            columns[label] = flat[:, j]
    return pandas.DataFrame(columns, index=index)
