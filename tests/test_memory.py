"""Memory: building, stepping, viewing, copying and dropping systems thousands of times (including
the error paths) does not grow the process, and a view keeps its system alive exactly as long as
the view lives."""

from __future__ import annotations

import copy
import ctypes
import ctypes.util
import gc
import math
import os
import pickle
import sys
import weakref
from typing import Callable

import numpy as np
import pytest

import msprings

DT = 1e-3
MIB = 1 << 20
N_NODES = 200  # ~60 kB of C memory per system: a leaked system per round shows within a few MiB
WARM_UP_ROUNDS = 200
ROUNDS = 1500
ALLOWED_GROWTH = 4 * MIB

GRID_SIDE = 10
POSITIONS = np.array(
    [[i * 0.1, 0.0, j * 0.1] for j in range(N_NODES // GRID_SIDE) for i in range(GRID_SIDE)]
)
SPRINGS = np.array(
    [(n, n + 1) for n in range(N_NODES) if n % GRID_SIDE != GRID_SIDE - 1]
    + [(n, n + GRID_SIDE) for n in range(N_NODES - GRID_SIDE)]
)


def resident_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, which hands freed heap pages back to the system, when available."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _load_malloc_trim()


def settled_resident_bytes() -> int:
    """Resident size after collecting garbage and returning free heap pages to the system."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    return resident_bytes()


def build() -> msprings.System:
    """A 10 x 20 net with a pinned edge, damping, drag and energy loss."""
    return msprings.System(
        POSITIONS,
        SPRINGS,
        mass=np.full(N_NODES, 0.01),
        k=50.0,
        c=0.01,
        pinned=np.arange(GRID_SIDE),
        drag=0.01,
        energy_loss=1e-4,
    )


def use_and_drop_once() -> None:
    """Everything a user does with a system on the success paths."""
    s = build()
    s.step(DT, 5)
    views = [getattr(s, name) for name in
             ("x", "v", "f", "external", "mass", "pinned", "springs", "rest", "k", "c")]
    views[0][-1, 1] -= 1e-3
    views[3][-1] = (0.0, 0.0, 0.01)
    s.energy()
    s.momentum()
    s.lengths()
    s.strain()
    s.tension()
    s.update_forces()
    s.gravity = s.gravity * 0.5
    repr(s)
    s.strain_limit = 0.2
    for name in ("velocity_verlet", "rk4", "implicit_euler", "explicit_euler"):
        s.integrator = name
        s.step(DT, 2)
    dict(s.solver_stats)
    s.damping_ratio()
    duplicate = s.copy()
    duplicate.step(DT, 2)
    deep = copy.deepcopy(duplicate)
    deep.reset()
    deep.step(DT)
    s.reset()
    kept = s.x
    del s, duplicate, deep, views
    assert kept.shape == (N_NODES, 3)


def fail_and_drop_once() -> None:
    """The error paths: refused construction, refused steps and setters, divergence."""
    try:
        msprings.System(POSITIONS, np.vstack([SPRINGS, [[0, N_NODES]]]))
    except ValueError:
        pass
    try:
        msprings.System(POSITIONS.astype(complex), SPRINGS)
    except TypeError:
        pass
    s = build()
    for bad_dt in (-1.0, float("nan")):
        try:
            s.step(bad_dt)
        except ValueError:
            pass
    try:
        s.step(DT, 1.5)
    except TypeError:
        pass
    try:
        s.integrator = "leapfrog"
    except ValueError:
        pass
    s.k[0] = -1.0
    try:
        s.step(DT)
    except ValueError:
        pass
    for name, value in (("newton_max_iter", 0), ("cg_tol", math.nan), ("strain_limit", -1.0)):
        try:
            setattr(s, name, value)
        except ValueError:
            pass
    s.k[0] = 50.0
    s.k[-1] = 1e8  # a spring between two free nodes
    s.integrator = "implicit_euler"
    s.v[-1] = (100.0, 0.0, 0.0)
    try:
        s.step(1e307)  # overflows even backward Euler
    except msprings.DivergenceError:
        pass
    s.integrator = "rk4"
    try:
        s.step(1.0, 1000)
    except msprings.DivergenceError:
        pass


def pickle_and_drop_once() -> None:
    """Pickling and unpickling a system (in band and out of band) and a trajectory, and
    unpickling damaged data, refused before and after its state is made."""
    s = build()
    s.add_plane((0.0, -1.0, 0.0))
    s.step(DT, 3)
    s.external[0] = (0.0, 0.1, 0.0)
    copy = pickle.loads(pickle.dumps(s, protocol=2))
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(copy, protocol=5, buffer_callback=buffers.append)
    again = pickle.loads(data, buffers=buffers)
    again.step(DT, 2)
    function, (cls, version, core, options, attributes) = s.__reduce_ex__(5)
    for damage in ({"x": np.full((N_NODES, 3), np.nan)}, {"ledger": (-1.0,) + (0.0,) * 10}):
        try:
            function(cls, version, dict(core, **damage), options, attributes)
        except ValueError:
            pass
    trajectory = again.run(DT, 4, 2, velocities=True)
    pickle.loads(pickle.dumps(trajectory, protocol=5))


def assert_flat_memory(round_: Callable[[], None]) -> None:
    """Runs ``round_`` many times after a warm-up; resident memory must stay flat.  Checks every
    few hundred rounds so that a leak fails early instead of exhausting memory."""
    for _ in range(WARM_UP_ROUNDS):
        round_()
    baseline = settled_resident_bytes()
    for done in range(1, ROUNDS + 1):
        round_()
        if done % 250 == 0:
            growth = settled_resident_bytes() - baseline
            assert growth < ALLOWED_GROWTH, f"grew by {growth / MIB:.1f} MiB after {done} rounds"


# Both loops step explicit methods above their stability limits on purpose (explicit Euler at
# DT; RK4 at 1 s on a stiff spring); test_the_diverging_step_really_diverges asserts the warning.
@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_success_paths_do_not_leak() -> None:
    assert_flat_memory(use_and_drop_once)


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_error_paths_do_not_leak() -> None:
    assert_flat_memory(fail_and_drop_once)


def test_pickling_does_not_leak() -> None:
    assert_flat_memory(pickle_and_drop_once)


def test_the_diverging_step_really_diverges() -> None:
    """Guards the loops above: their deliberately unstable steps warn, and the error-path
    loop's oversized steps end in a DivergenceError for implicit Euler and RK4."""
    s = build()
    s.integrator = "explicit_euler"
    with pytest.warns(msprings.StabilityWarning, match="explicit_euler"):
        s.step(DT, 2)
    s = build()
    s.k[-1] = 1e8
    s.integrator = "implicit_euler"
    s.v[-1] = (100.0, 0.0, 0.0)
    with pytest.raises(msprings.DivergenceError):
        s.step(1e307)
    assert s.steps == 0
    s.integrator = "rk4"
    with pytest.warns(msprings.StabilityWarning, match="rk4"), pytest.raises(msprings.DivergenceError):
        s.step(1.0, 1000)


def test_views_and_calls_do_not_keep_references() -> None:
    s = build()
    s.step(DT)
    baseline = sys.getrefcount(s)
    for _ in range(200):
        for name in ("x", "v", "f", "external", "mass", "pinned", "springs", "rest", "k", "c"):
            getattr(s, name)
        s.update_forces()
        s.energy()
        s.lengths()
        s.copy()
        s.step(DT)
        try:
            s.step(-1.0)
        except ValueError:
            pass
    assert sys.getrefcount(s) == baseline


def test_view_outliving_its_system_keeps_data_then_frees_it() -> None:
    n_nodes = 300_000  # tens of MiB of C memory: its release shows in the resident size
    positions = np.zeros((n_nodes, 3))
    positions[:, 0] = np.arange(n_nodes) * 1e-3
    expected = positions.copy()
    expected[:, 1] = -9.81 * DT * DT  # one symplectic Euler step of free fall from rest
    before = settled_resident_bytes()

    s = msprings.System(positions, np.empty((0, 2), dtype=np.int64))
    s.step(DT)  # touches every state array
    try:
        reference = weakref.ref(s)
    except TypeError:
        reference = None
    view = s.x
    del s
    with_view = settled_resident_bytes()
    if reference is not None:
        assert reference() is not None, "the view did not keep its system alive"
    np.testing.assert_allclose(view, expected, rtol=1e-15)
    view[0, 0] = 5.0
    assert view[0, 0] == 5.0

    held = with_view - before
    assert held > 2 * n_nodes * 3 * 8, f"only {held / MIB:.1f} MiB resident for the system"

    del view
    after = settled_resident_bytes()
    if reference is not None:
        assert reference() is None, "the system outlived its last view"
    assert after - before < held / 5, (
        f"{(after - before) / MIB:.1f} MiB of {held / MIB:.1f} MiB still resident"
    )
