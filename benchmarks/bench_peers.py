"""msprings beside other Python routes to a fast mass-spring step: NumPy, Numba, Taichi, Warp.

Scene (exactly as the project's benchmark definitions): cloth-N for N = 64 and N = 256, an
N x N sheet of 1 kg nodes, node (i, j) starting at (j h, 0, i h) with h = 0.625 m; structural,
shear and bend springs with k = 2500 N/m, c = 1 N s/m and rest length = initial length; nodes
(0, 0) and (0, N-1) pinned; gravity (0, -9.81, 0); no drag; symplectic Euler with a time step
of 1e-3 s.  Everything is float64.

Implementations (each written the way that library's own examples write a cloth step):

* msprings on one thread (``s.threads = 1``) and on all online cores (``s.threads = 0``):
  ``s.step(dt, n)`` runs n steps inside C.
* NumPy: one vectorised step per Python loop iteration; every spring at once, forces
  scattered onto nodes with a single ``np.bincount``.
* Numba ``@njit``: a plain loop over springs, n steps per call, one thread.
* Numba ``@njit(parallel=True)``: ``prange`` over one chunk of springs per thread, each
  chunk adding into its own private force buffer; then ``prange`` over nodes, summing the
  buffers and integrating.
* Taichi (``ti.init(arch=ti.cpu, default_fp=ti.f64)``): one kernel per step with a loop over
  springs that adds forces with ``ti.atomic_add`` and a loop over nodes that integrates;
  Taichi runs the outermost loops of a kernel on all cores.  The same kernel with
  ``ti.loop_config(serialize=True)`` gives a one-thread row.  A third Taichi row follows
  Taichi's own cloth example (``mass_spring_3d_ggui.py``): no spring list, every node gathers
  the forces of its 12 stencil neighbours on the grid (each spring evaluated from both ends).
* Warp on device "cpu" (float64, ``wp.vec3d``): an ``eval_springs`` kernel over springs with
  ``wp.atomic_add`` / ``wp.atomic_sub`` and an ``integrate_particles`` kernel over nodes, two
  launches per step, as in Warp's cloth benchmark.  Warp's CPU backend runs a launch as a
  serial loop in the calling thread: one core.

Before anything is timed, every implementation runs 100 steps from the initial state and the
position of node (N-1, N-1) must be within 1e-9 m of msprings' (one thread); an
implementation that disagrees is reported and not timed.  Compilation (Numba, Taichi and Warp
all compile on first use; Taichi's and Warp's on-disk kernel caches are bypassed so it is a
cold compile every time) happens in an untimed warm-up and is reported in its own table.

Timing: every timed run starts from the initial state and one untimed step; the step count
per run is calibrated so one run takes about a second (--quick: a tenth); the implementations
take turns within each round (one run of each), and each row is the median of the rounds.

A library that is not installed, or fails to import or to compile, is skipped with a note.

Usage, from the repository root::

    python benchmarks/bench_peers.py                 # full run, cloth-64 and cloth-256
    python benchmarks/bench_peers.py --quick         # short smoke run
    python benchmarks/bench_peers.py --sizes 64      # one scene

The report is Markdown on stdout (progress goes to stderr).  The exit status is 0 when every
implementation that ran agrees with msprings and 1 otherwise.
"""

import argparse
import contextlib
import datetime
import io
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from .common import (cloth_geometry, cpu_model, format_rate, format_seconds, format_vector,
                         keep_freed_memory, load_average, round_steps, spring_lengths)
except ImportError:  # as a script: python benchmarks/bench_peers.py
    from common import (cloth_geometry, cpu_model, format_rate, format_seconds, format_vector,
                        keep_freed_memory, load_average, round_steps, spring_lengths)

# ---------------------------------------------------------------------------------------------
# scene constants (BENCH.md, cloth-N)

#: Time step (s).
TIME_STEP = 1e-3
#: Gravity (m/s^2), y up.
GRAVITY = (0.0, -9.81, 0.0)
#: Node spacing h (m).
CLOTH_SPACING = 0.625
#: Spring stiffness (N/m) and axial damping (N s/m).
CLOTH_K = 2500.0
CLOTH_C = 1.0
CLOTH_SIZES = (64, 256)
#: Steps of the agreement check, and the largest allowed distance (m) to msprings after it.
CHECK_STEPS = 100
CHECK_TOLERANCE = 1e-9
#: Springs shorter than this (m) have no direction and exert no force (never reached here).
MIN_LENGTH = 1e-12
#: Online logical CPUs.
CORES = os.cpu_count() or 1

MSPRINGS_ONE = "msprings, 1 thread"
MSPRINGS_ALL = "msprings, all cores"


# ---------------------------------------------------------------------------------------------
# scene


@dataclass(frozen=True)
class Cloth:
    """The cloth-N scene as plain arrays, the common input of every implementation."""

    size: int  # N
    positions: np.ndarray  # (nnode, 3) float64, m; node (i, j) is row i * N + j
    springs: np.ndarray  # (nspring, 2) int32
    rest: np.ndarray  # (nspring,) float64, m
    k: np.ndarray  # (nspring,) float64, N/m
    c: np.ndarray  # (nspring,) float64, N s/m
    mass: np.ndarray  # (nnode,) float64, kg
    pinned: np.ndarray  # (nnode,) bool

    @property
    def name(self) -> str:
        """Scene name, e.g. 'cloth-64'."""
        return f"cloth-{self.size}"

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.positions.shape[0])

    @property
    def n_springs(self) -> int:
        """Number of springs."""
        return int(self.springs.shape[0])

    @property
    def watched(self) -> int:
        """Index of node (N-1, N-1), whose position is compared across implementations."""
        return self.size * self.size - 1

    @property
    def inv_mass(self) -> np.ndarray:
        """(nnode,) 1/m on free nodes, 0 on pinned ones."""
        return np.where(self.pinned, 0.0, 1.0 / self.mass)


def cloth_scene(size: int) -> Cloth:
    """The cloth-N scene: springs in the order structural, shear, bend."""
    positions, springs, pinned = cloth_geometry(size, CLOTH_SPACING)
    nspring = springs.shape[0]
    return Cloth(
        size=size,
        positions=positions,
        springs=springs,
        rest=spring_lengths(positions, springs),
        k=np.full(nspring, CLOTH_K),
        c=np.full(nspring, CLOTH_C),
        mass=np.ones(size * size),
        pinned=pinned,
    )


# ---------------------------------------------------------------------------------------------
# optional libraries


@dataclass
class Library:
    """An optional peer library: the module, or why it is unavailable."""

    name: str
    module: ModuleType | None = None
    error: str = ""
    import_seconds: float = 0.0
    init_seconds: float = 0.0  # runtime initialisation (ti.init, wp.init)
    detail: str = ""  # version and configuration, for the machine section


_LIBRARIES: dict[str, Library] = {}
#: Temporary kernel-cache directory for Warp (removed at exit of main()).
_WARP_CACHE: list[str] = []


def _describe_error(error: BaseException) -> str:
    """One line naming an exception."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip()


def load_library(name: str) -> Library:
    """Imports (and for Taichi and Warp initialises) a peer library once; never raises."""
    if name in _LIBRARIES:
        return _LIBRARIES[name]
    library = Library(name)
    _LIBRARIES[name] = library
    if name == "taichi":
        # No banner on stdout (the report is Markdown there).  Taichi must not be imported
        # while stdout is redirected, nor under a captured stdout: it then wraps every kernel
        # call with a flush of its print buffer, which would be timed with the kernel.
        os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")
        os.environ.setdefault("TI_ENABLE_PYBUF", "0")
    start = time.perf_counter()
    try:
        if name == "numba":
            import numba as module
        elif name == "taichi":
            import taichi as module
        elif name == "warp":
            import warp as module
        else:
            raise ValueError(f"unknown library {name!r}")
        library.import_seconds = time.perf_counter() - start
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # ti.init prints the arch it uses
            if name == "taichi":
                module.init(arch=module.cpu, default_fp=module.f64, offline_cache=False,
                            log_level=module.WARN)
            elif name == "warp":
                module.config.quiet = True
                cache = tempfile.mkdtemp(prefix="bench_peers_warp_")
                _WARP_CACHE.append(cache)
                module.config.kernel_cache_dir = cache
                module.init()
        library.init_seconds = time.perf_counter() - start
        library.module = module
        library.detail = _library_detail(name, module)
    except Exception as error:  # noqa: BLE001 - any failure means "skip this peer"
        library.error = _describe_error(error)
    return library


def _library_detail(name: str, module: ModuleType) -> str:
    """Version and relevant configuration of a loaded library."""
    if name == "numba":
        import llvmlite

        return (f"Numba {module.__version__} (llvmlite {llvmlite.__version__}), "
                f"{module.config.NUMBA_NUM_THREADS} threads available")
    if name == "taichi":
        version = ".".join(str(part) for part in module.__version__)
        threads = taichi_threads(module)
        return f"Taichi {version}, arch=cpu, default_fp=f64, cpu_max_num_threads={threads}"
    if name == "warp":
        return f"Warp {module.__version__}, device 'cpu'"
    return ""


def taichi_threads(ti: ModuleType) -> int:
    """Taichi's CPU thread count (cpu_max_num_threads), or CORES when it cannot be read."""
    try:
        return int(ti.lang.impl.current_cfg().cpu_max_num_threads)
    except Exception:  # noqa: BLE001
        return CORES


# ---------------------------------------------------------------------------------------------
# implementations


class Implementation:
    """One way to step the cloth, with a common interface.

    Subclasses set ``name``, ``threads`` (a label) and ``note``, build their state in
    ``__init__`` (timed as setup), and implement reset, advance and position.
    """

    name: str = ""
    threads: str = "1"
    note: str = ""

    def __init__(self, scene: Cloth) -> None:
        self.scene = scene
        self.setup_seconds = 0.0
        self.first_call_seconds = 0.0

    def reset(self) -> None:
        """Back to the scene's initial state (at rest)."""
        raise NotImplementedError

    def advance(self, n: int) -> None:
        """n steps; may return before asynchronous work ends (see :meth:`finish`)."""
        raise NotImplementedError

    def finish(self) -> None:
        """Waits until all submitted work is done."""

    def positions(self) -> np.ndarray:
        """(nnode, 3) float64 copy of the current positions, nodes in scene order."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """First call (compiles whatever compiles lazily); timed as first_call_seconds."""
        start = time.perf_counter()
        self.reset()
        self.advance(1)
        self.finish()
        self.first_call_seconds = time.perf_counter() - start


class MspringsImpl(Implementation):
    """msprings.System, ``s.step(dt, n)``."""

    def __init__(self, scene: Cloth, msprings: ModuleType, threads: int) -> None:
        super().__init__(scene)
        start = time.perf_counter()
        self.system = msprings.System(scene.positions, scene.springs, mass=scene.mass,
                                      k=scene.k, c=scene.c, rest=scene.rest,
                                      pinned=scene.pinned, gravity=GRAVITY,
                                      integrator="symplectic_euler")
        self.system.threads = threads
        self.setup_seconds = time.perf_counter() - start
        self.name = MSPRINGS_ONE if threads == 1 else MSPRINGS_ALL
        self.threads = "1" if threads == 1 else f"{CORES} (all)"
        self.note = "C core, n steps per call"

    def reset(self) -> None:
        self.system.reset()

    def advance(self, n: int) -> None:
        self.system.step(TIME_STEP, n)

    def positions(self) -> np.ndarray:
        return np.array(self.system.x)


class NumpyImpl(Implementation):
    """Vectorised NumPy step: gather both ends, evaluate all springs, one bincount scatter."""

    name = "NumPy (bincount)"
    threads = "1"
    note = "one vectorised step per Python iteration"

    def __init__(self, scene: Cloth) -> None:
        super().__init__(scene)
        start = time.perf_counter()
        self.first = scene.springs[:, 0].astype(np.intp)
        self.second = scene.springs[:, 1].astype(np.intp)
        axes = np.arange(3)
        # flat index of every (spring end, axis) in the (nnode * 3) force vector
        self.scatter = np.concatenate((3 * self.first[:, None] + axes,
                                       3 * self.second[:, None] + axes)).ravel()
        self.weight = scene.mass[:, None] * np.asarray(GRAVITY)
        self.inv_mass = scene.inv_mass[:, None]
        self.x = scene.positions.copy()
        self.v = np.zeros_like(self.x)
        self.setup_seconds = time.perf_counter() - start

    def reset(self) -> None:
        self.x[...] = self.scene.positions
        self.v[...] = 0.0

    def _step(self) -> None:
        scene, x, v = self.scene, self.x, self.v
        d = x.take(self.second, axis=0) - x.take(self.first, axis=0)
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        inv_length = np.divide(1.0, length, out=np.zeros_like(length),
                               where=length > MIN_LENGTH)
        direction = d * inv_length[:, None]
        dv = v.take(self.second, axis=0) - v.take(self.first, axis=0)
        tension = scene.k * (length - scene.rest) + scene.c * np.einsum("ij,ij->i", dv,
                                                                        direction)
        pull = direction * tension[:, None]  # force on the first end; minus it on the second
        spring_force = np.bincount(self.scatter, weights=np.concatenate((pull, -pull)).ravel(),
                                   minlength=3 * scene.n_nodes).reshape(-1, 3)
        v += TIME_STEP * (self.weight + spring_force) * self.inv_mass  # pinned: inv_mass 0
        x += TIME_STEP * v

    def advance(self, n: int) -> None:
        for _ in range(n):
            self._step()

    def positions(self) -> np.ndarray:
        return self.x.copy()


# ---- Numba -------------------------------------------------------------------------------

_NUMBA_KERNELS: dict[str, Callable[..., None]] = {}


def _numba_kernels(numba: ModuleType) -> dict[str, Callable[..., None]]:
    """The serial and parallel Numba steppers, compiled lazily on first call."""
    if _NUMBA_KERNELS:
        return _NUMBA_KERNELS
    njit, prange = numba.njit, numba.prange

    @njit
    def serial_steps(x, v, f, springs, rest, k, c, mass, inv_mass, pinned, g, h, nsteps):
        nnode = x.shape[0]
        nspring = springs.shape[0]
        for _ in range(nsteps):
            for a in range(nnode):
                for d in range(3):
                    f[a, d] = mass[a] * g[d]
            for s in range(nspring):
                i = springs[s, 0]
                j = springs[s, 1]
                dx = x[j, 0] - x[i, 0]
                dy = x[j, 1] - x[i, 1]
                dz = x[j, 2] - x[i, 2]
                length = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length <= MIN_LENGTH:
                    continue
                nx = dx / length
                ny = dy / length
                nz = dz / length
                closing = ((v[j, 0] - v[i, 0]) * nx + (v[j, 1] - v[i, 1]) * ny
                           + (v[j, 2] - v[i, 2]) * nz)
                tension = k[s] * (length - rest[s]) + c[s] * closing
                f[i, 0] += tension * nx
                f[i, 1] += tension * ny
                f[i, 2] += tension * nz
                f[j, 0] -= tension * nx
                f[j, 1] -= tension * ny
                f[j, 2] -= tension * nz
            for a in range(nnode):
                if pinned[a]:
                    continue
                for d in range(3):
                    v[a, d] += h * f[a, d] * inv_mass[a]
                    x[a, d] += h * v[a, d]

    @njit(parallel=True)
    def parallel_steps(x, v, private, springs, rest, k, c, mass, inv_mass, pinned, g, h,
                       nsteps):
        # private: (nchunk, nnode, 3) force buffers, one per chunk of springs
        nnode = x.shape[0]
        nspring = springs.shape[0]
        nchunk = private.shape[0]
        per_chunk = (nspring + nchunk - 1) // nchunk
        for _ in range(nsteps):
            for t in prange(nchunk):
                f = private[t]
                for a in range(nnode):
                    for d in range(3):
                        f[a, d] = 0.0
                for s in range(t * per_chunk, min(nspring, (t + 1) * per_chunk)):
                    i = springs[s, 0]
                    j = springs[s, 1]
                    dx = x[j, 0] - x[i, 0]
                    dy = x[j, 1] - x[i, 1]
                    dz = x[j, 2] - x[i, 2]
                    length = math.sqrt(dx * dx + dy * dy + dz * dz)
                    if length <= MIN_LENGTH:
                        continue
                    nx = dx / length
                    ny = dy / length
                    nz = dz / length
                    closing = ((v[j, 0] - v[i, 0]) * nx + (v[j, 1] - v[i, 1]) * ny
                               + (v[j, 2] - v[i, 2]) * nz)
                    tension = k[s] * (length - rest[s]) + c[s] * closing
                    f[i, 0] += tension * nx
                    f[i, 1] += tension * ny
                    f[i, 2] += tension * nz
                    f[j, 0] -= tension * nx
                    f[j, 1] -= tension * ny
                    f[j, 2] -= tension * nz
            for a in prange(nnode):
                if pinned[a]:
                    continue
                for d in range(3):
                    total = mass[a] * g[d]
                    for t in range(nchunk):
                        total += private[t, a, d]
                    v[a, d] += h * total * inv_mass[a]
                    x[a, d] += h * v[a, d]

    _NUMBA_KERNELS["serial"] = serial_steps
    _NUMBA_KERNELS["parallel"] = parallel_steps
    return _NUMBA_KERNELS


class NumbaImpl(Implementation):
    """Numba @njit loop over springs, n steps per call; optionally parallel=True."""

    def __init__(self, scene: Cloth, numba: ModuleType, parallel: bool) -> None:
        super().__init__(scene)
        start = time.perf_counter()
        self.numba = numba
        self.parallel = parallel
        self.kernel = _numba_kernels(numba)["parallel" if parallel else "serial"]
        self.x = scene.positions.copy()
        self.v = np.zeros_like(self.x)
        nthreads = int(numba.config.NUMBA_NUM_THREADS)
        self.nthreads = nthreads
        self.forces = (np.zeros((nthreads, scene.n_nodes, 3)) if parallel
                       else np.zeros((scene.n_nodes, 3)))
        self.springs = np.ascontiguousarray(scene.springs, dtype=np.int64)
        self.inv_mass = scene.inv_mass
        self.gravity = np.asarray(GRAVITY, dtype=np.float64)
        self.setup_seconds = time.perf_counter() - start
        if parallel:
            self.name = "Numba @njit(parallel=True)"
            self.threads = f"{nthreads} (all)"
            self.note = ("prange over per-thread spring chunks with private force buffers, "
                         "then prange over nodes")
        else:
            self.name = "Numba @njit"
            self.threads = "1"
            self.note = "loop over springs, n steps per call"

    def reset(self) -> None:
        self.x[...] = self.scene.positions
        self.v[...] = 0.0

    def advance(self, n: int) -> None:
        if self.parallel:
            self.numba.set_num_threads(self.nthreads)
        scene = self.scene
        self.kernel(self.x, self.v, self.forces, self.springs, scene.rest, scene.k, scene.c,
                    scene.mass, self.inv_mass, scene.pinned, self.gravity, TIME_STEP, n)

    def warm_up(self) -> None:
        super().warm_up()
        if self.parallel:
            layer = self.numba.threading_layer()
            self.note += f"; threading layer '{layer}'"

    def positions(self) -> np.ndarray:
        return self.x.copy()


# ---- Taichi ------------------------------------------------------------------------------

_TAICHI_CLASSES: dict[str, type] = {}


def _taichi_classes(ti: ModuleType) -> dict[str, type]:
    """Taichi data-oriented steppers (kernels compile on first call)."""
    if _TAICHI_CLASSES:
        return _TAICHI_CLASSES

    @ti.data_oriented
    class SpringList:
        """Spring list in fields; one kernel per step: springs (atomic adds), then nodes."""

        def __init__(self, scene: Cloth) -> None:
            self.nnode = scene.n_nodes
            self.nspring = scene.n_springs
            self.x = ti.Vector.field(3, dtype=ti.f64, shape=self.nnode)
            self.v = ti.Vector.field(3, dtype=ti.f64, shape=self.nnode)
            self.f = ti.Vector.field(3, dtype=ti.f64, shape=self.nnode)
            self.inv_mass = ti.field(ti.f64, shape=self.nnode)
            self.ends = ti.Vector.field(2, dtype=ti.i32, shape=self.nspring)
            self.rest = ti.field(ti.f64, shape=self.nspring)
            self.k = ti.field(ti.f64, shape=self.nspring)
            self.c = ti.field(ti.f64, shape=self.nspring)
            self.inv_mass.from_numpy(scene.inv_mass)
            self.ends.from_numpy(scene.springs)
            self.rest.from_numpy(scene.rest)
            self.k.from_numpy(scene.k)
            self.c.from_numpy(scene.c)
            self.f.fill(0.0)

        @ti.kernel
        def substep(self, serial: ti.template(), h: ti.f64, gx: ti.f64, gy: ti.f64,
                    gz: ti.f64):
            ti.loop_config(serialize=serial)
            for s in range(self.nspring):
                i = self.ends[s][0]
                j = self.ends[s][1]
                d = self.x[j] - self.x[i]
                length = d.norm()
                if length > MIN_LENGTH:
                    n = d / length
                    closing = (self.v[j] - self.v[i]).dot(n)
                    pull = (self.k[s] * (length - self.rest[s]) + self.c[s] * closing) * n
                    ti.atomic_add(self.f[i], pull)
                    ti.atomic_sub(self.f[j], pull)
            ti.loop_config(serialize=serial)
            for a in range(self.nnode):
                w = self.inv_mass[a]
                if w > 0.0:  # pinned nodes (w = 0) stay put
                    self.v[a] += (self.f[a] * w + ti.Vector([gx, gy, gz])) * h
                    self.x[a] += self.v[a] * h
                self.f[a] = ti.Vector([0.0, 0.0, 0.0])

    @ti.data_oriented
    class GridStencil:
        """Taichi's own cloth example pattern: no spring list; every node of the (N, N) grid
        gathers the forces of its 12 stencil neighbours (each spring evaluated twice), then a
        second loop integrates."""

        def __init__(self, scene: Cloth) -> None:
            size = scene.size
            self.size = size
            self.x = ti.Vector.field(3, dtype=ti.f64, shape=(size, size))
            self.v = ti.Vector.field(3, dtype=ti.f64, shape=(size, size))
            self.f = ti.Vector.field(3, dtype=ti.f64, shape=(size, size))
            self.inv_mass = ti.field(ti.f64, shape=(size, size))
            self.inv_mass.from_numpy(scene.inv_mass.reshape(size, size))
            # offsets (di, dj) with 0 < |di| + |dj| <= 2: structural, shear and bend springs;
            # rest length from the initial grid, computed as the scene computes it
            self.offsets = []
            self.rests = []
            for di in range(-2, 3):
                for dj in range(-2, 3):
                    if 0 < abs(di) + abs(dj) <= 2:
                        self.offsets.append(ti.Vector([di, dj]))
                        dx = dj * CLOTH_SPACING
                        dz = di * CLOTH_SPACING
                        self.rests.append(math.sqrt(dx * dx + dz * dz))
            self.n_offsets = len(self.offsets)

        @ti.kernel
        def substep(self, h: ti.f64, gx: ti.f64, gy: ti.f64, gz: ti.f64):
            for p in ti.grouped(self.x):
                force = ti.Vector([0.0, 0.0, 0.0])
                for o in ti.static(range(self.n_offsets)):
                    q = p + self.offsets[o]
                    if 0 <= q[0] < self.size and 0 <= q[1] < self.size:
                        d = self.x[q] - self.x[p]
                        length = d.norm()
                        if length > MIN_LENGTH:
                            n = d / length
                            closing = (self.v[q] - self.v[p]).dot(n)
                            force += (CLOTH_K * (length - self.rests[o])
                                      + CLOTH_C * closing) * n
                self.f[p] = force
            for p in ti.grouped(self.x):
                w = self.inv_mass[p]
                if w > 0.0:
                    self.v[p] += (self.f[p] * w + ti.Vector([gx, gy, gz])) * h
                    self.x[p] += self.v[p] * h

    _TAICHI_CLASSES["springs"] = SpringList
    _TAICHI_CLASSES["stencil"] = GridStencil
    return _TAICHI_CLASSES


class TaichiImpl(Implementation):
    """Taichi on arch=cpu: spring kernel with atomics (parallel or serialised) or grid stencil."""

    def __init__(self, scene: Cloth, ti: ModuleType, variant: str) -> None:
        super().__init__(scene)
        start = time.perf_counter()
        self.ti = ti
        self.variant = variant
        classes = _taichi_classes(ti)
        if variant == "stencil":
            self.stepper = classes["stencil"](scene)
            self.name = "Taichi, grid stencil gather"
            self.note = ("Taichi's own cloth example pattern: no spring list, k, c, rest "
                         "as constants, each spring evaluated from both ends")
        else:
            self.stepper = classes["springs"](scene)
            serial = variant == "springs-serial"
            self.serial = serial
            self.name = ("Taichi, springs + ti.atomic_add, serialised" if serial
                         else "Taichi, springs + ti.atomic_add")
            self.note = ("kernel: loop over springs (atomic adds), loop over nodes"
                         + ("; ti.loop_config(serialize=True)" if serial else ""))
        self.threads = ("1" if variant == "springs-serial"
                        else f"{taichi_threads(ti)} (Taichi default: all)")
        self.reset()
        self.setup_seconds = time.perf_counter() - start

    def reset(self) -> None:
        scene = self.scene
        if self.variant == "stencil":
            shape = (scene.size, scene.size, 3)
            self.stepper.x.from_numpy(scene.positions.reshape(shape))
            self.stepper.v.from_numpy(np.zeros(shape))
        else:
            self.stepper.x.from_numpy(scene.positions)
            self.stepper.v.from_numpy(np.zeros_like(scene.positions))
            self.stepper.f.fill(0.0)

    def advance(self, n: int) -> None:
        substep = self.stepper.substep
        gx, gy, gz = GRAVITY
        if self.variant == "stencil":
            for _ in range(n):
                substep(TIME_STEP, gx, gy, gz)
        else:
            serial = self.serial
            for _ in range(n):
                substep(serial, TIME_STEP, gx, gy, gz)

    def finish(self) -> None:
        self.ti.sync()

    def positions(self) -> np.ndarray:
        return self.stepper.x.to_numpy().reshape(-1, 3).astype(np.float64)


# ---- Warp --------------------------------------------------------------------------------

_WARP_KERNELS: dict[str, object] = {}


def _warp_kernels(wp: ModuleType) -> dict[str, object]:
    """Warp float64 kernels, as in Warp's cloth benchmark (compiled on first launch)."""
    if _WARP_KERNELS:
        return _WARP_KERNELS

    @wp.kernel
    def eval_springs(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d),
                     ends: wp.array(dtype=wp.int32), rest: wp.array(dtype=wp.float64),
                     stiffness: wp.array(dtype=wp.float64),
                     damping: wp.array(dtype=wp.float64), f: wp.array(dtype=wp.vec3d)):
        s = wp.tid()
        i = ends[2 * s]
        j = ends[2 * s + 1]
        d = x[j] - x[i]
        length = wp.length(d)
        if length > wp.float64(MIN_LENGTH):
            n = d / length
            closing = wp.dot(v[j] - v[i], n)
            pull = n * (stiffness[s] * (length - rest[s]) + damping[s] * closing)
            wp.atomic_add(f, i, pull)
            wp.atomic_sub(f, j, pull)

    @wp.kernel
    def integrate_particles(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d),
                            f: wp.array(dtype=wp.vec3d), inv_mass: wp.array(dtype=wp.float64),
                            gravity: wp.vec3d, h: wp.float64):
        a = wp.tid()
        w = inv_mass[a]
        if w > wp.float64(0.0):  # pinned nodes (w = 0) stay put
            v1 = v[a] + (f[a] * w + gravity) * h
            v[a] = v1
            x[a] = x[a] + v1 * h
        f[a] = wp.vec3d()

    _WARP_KERNELS["springs"] = eval_springs
    _WARP_KERNELS["integrate"] = integrate_particles
    return _WARP_KERNELS


class WarpImpl(Implementation):
    """Warp on device "cpu": eval_springs + integrate_particles launches per step."""

    name = "Warp (device cpu)"
    threads = "1 (CPU launches are serial)"
    note = "two launches per step: springs (wp.atomic_add), nodes"

    def __init__(self, scene: Cloth, wp: ModuleType) -> None:
        super().__init__(scene)
        start = time.perf_counter()
        self.wp = wp
        self.kernels = _warp_kernels(wp)
        device = "cpu"
        self.device = device
        self.x = wp.array(scene.positions, dtype=wp.vec3d, device=device)
        self.v = wp.zeros(scene.n_nodes, dtype=wp.vec3d, device=device)
        self.f = wp.zeros(scene.n_nodes, dtype=wp.vec3d, device=device)
        self.inv_mass = wp.array(scene.inv_mass, dtype=wp.float64, device=device)
        self.ends = wp.array(scene.springs.ravel(), dtype=wp.int32, device=device)
        self.rest = wp.array(scene.rest, dtype=wp.float64, device=device)
        self.k = wp.array(scene.k, dtype=wp.float64, device=device)
        self.c = wp.array(scene.c, dtype=wp.float64, device=device)
        self.gravity = wp.vec3d(*GRAVITY)
        self.h = wp.float64(TIME_STEP)
        self.setup_seconds = time.perf_counter() - start

    def reset(self) -> None:
        self.x.assign(self.scene.positions)
        self.v.zero_()
        self.f.zero_()

    def advance(self, n: int) -> None:
        wp = self.wp
        springs, integrate = self.kernels["springs"], self.kernels["integrate"]
        spring_inputs = [self.x, self.v, self.ends, self.rest, self.k, self.c, self.f]
        node_inputs = [self.x, self.v, self.f, self.inv_mass, self.gravity, self.h]
        nspring, nnode = self.scene.n_springs, self.scene.n_nodes
        for _ in range(n):
            wp.launch(springs, dim=nspring, inputs=spring_inputs, device=self.device)
            wp.launch(integrate, dim=nnode, inputs=node_inputs, device=self.device)

    def finish(self) -> None:
        self.wp.synchronize_device(self.device)

    def positions(self) -> np.ndarray:
        return np.array(self.x.numpy(), dtype=np.float64).reshape(-1, 3)


# ---------------------------------------------------------------------------------------------
# building, checking and timing


@dataclass
class Skipped:
    """An implementation that could not run, and why."""

    name: str
    reason: str


@dataclass
class Check:
    """Agreement of one implementation with msprings (one thread) after CHECK_STEPS steps."""

    name: str
    watched: np.ndarray  # (3,) position of node (N-1, N-1)
    distance: float  # to msprings' node (N-1, N-1), m
    max_distance: float  # over all nodes, m

    @property
    def passed(self) -> bool:
        """Within CHECK_TOLERANCE at node (N-1, N-1)."""
        return bool(self.distance <= CHECK_TOLERANCE)


@dataclass
class Row:
    """Timing of one implementation on one scene."""

    impl: Implementation
    steps_per_run: int
    seconds: list[float] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)  # process CPU time / wall time, per run
    others: list[float] = field(default_factory=list)  # other processes' cores busy, per run
    retried: int = 0  # runs repeated because other processes were busy

    @property
    def median(self) -> float:
        """Median seconds per run."""
        return statistics.median(self.seconds)

    @property
    def steps_per_second(self) -> float:
        """Steps per second of the median run."""
        return self.steps_per_run / self.median

    @property
    def cores_busy(self) -> float:
        """Median over the runs of the process's CPU time divided by wall time."""
        return statistics.median(self.busy)

    @property
    def other_load(self) -> float | None:
        """Median over the runs of the cores other processes kept busy (None: unknown)."""
        known = [value for value in self.others if not math.isnan(value)]
        return statistics.median(known) if known else None

    @property
    def spread(self) -> float:
        """(slowest - fastest) / median run time."""
        return (max(self.seconds) - min(self.seconds)) / self.median


@dataclass
class SceneResult:
    """Everything measured on one scene."""

    scene: Cloth
    checks: list[Check]
    rows: list[Row]
    skipped: list[Skipped]
    disagreeing: list[str]


def _progress(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def build_implementations(scene: Cloth, msprings: ModuleType,
                          skipped: list[Skipped]) -> list[Implementation]:
    """Every implementation that can be built for the scene, warmed up; others go to skipped."""
    makers: list[tuple[str, str, Callable[[], Implementation]]] = [
        (MSPRINGS_ONE, "", lambda: MspringsImpl(scene, msprings, 1)),
        (MSPRINGS_ALL, "", lambda: MspringsImpl(scene, msprings, 0)),
        (NumpyImpl.name, "", lambda: NumpyImpl(scene)),
    ]
    numba_lib, taichi_lib, warp_lib = (load_library(name) for name in ("numba", "taichi", "warp"))
    makers += [
        ("Numba @njit", "numba", lambda: NumbaImpl(scene, numba_lib.module, parallel=False)),
        ("Numba @njit(parallel=True)", "numba",
         lambda: NumbaImpl(scene, numba_lib.module, parallel=True)),
        ("Taichi, springs + ti.atomic_add", "taichi",
         lambda: TaichiImpl(scene, taichi_lib.module, "springs")),
        ("Taichi, springs + ti.atomic_add, serialised", "taichi",
         lambda: TaichiImpl(scene, taichi_lib.module, "springs-serial")),
        ("Taichi, grid stencil gather", "taichi",
         lambda: TaichiImpl(scene, taichi_lib.module, "stencil")),
        ("Warp (device cpu)", "warp", lambda: WarpImpl(scene, warp_lib.module)),
    ]
    impls: list[Implementation] = []
    for name, library, make in makers:
        if library:
            lib = _LIBRARIES[library]
            if lib.module is None:
                skipped.append(Skipped(name, f"{library} unavailable ({lib.error})"))
                continue
        try:
            impl = make()
            with contextlib.redirect_stdout(io.StringIO()):
                impl.warm_up()
        except Exception as error:  # noqa: BLE001 - a peer that fails is skipped, not fatal
            skipped.append(Skipped(name, f"failed to build or compile ({_describe_error(error)})"))
            continue
        impls.append(impl)
        _progress(f"  {scene.name}: built {impl.name} (setup {impl.setup_seconds:.3f} s, "
                  f"first call {impl.first_call_seconds:.3f} s)")
    return impls


def run_check(impl: Implementation, reference: np.ndarray, watched: int) -> Check:
    """CHECK_STEPS steps from the initial state, compared with the reference positions."""
    impl.reset()
    impl.advance(CHECK_STEPS)
    impl.finish()
    x = impl.positions()
    return Check(name=impl.name, watched=x[watched].copy(),
                 distance=float(np.linalg.norm(x[watched] - reference[watched])),
                 max_distance=float(np.max(np.linalg.norm(x - reference, axis=1))))


def _machine_busy_seconds() -> float | None:
    """CPU seconds all processors have spent busy since boot (user, nice, system, irq,
    softirq and steal time, from /proc/stat), or None where that is unavailable."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
        ticks = [int(value) for value in fields[1:9]]
        busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
        return busy / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Run:
    """One timed run."""

    wall: float  # s
    cpu: float  # this process's CPU time, all threads, s
    others: float  # CPU time of everything else on the machine divided by wall (NaN: unknown)


def timed_run(impl: Implementation, n: int) -> Run:
    """n steps after a reset and one untimed step: wall time, this process's CPU time and the
    cores other processes kept busy meanwhile."""
    impl.reset()
    impl.advance(1)
    impl.finish()
    machine = _machine_busy_seconds()
    cpu = time.process_time()
    start = time.perf_counter()
    impl.advance(n)
    impl.finish()
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    machine_end = _machine_busy_seconds()
    if machine is None or machine_end is None:
        others = math.nan
    else:
        others = max(0.0, (machine_end - machine - cpu) / wall)
    return Run(wall, cpu, others)


def calibrate(impl: Implementation, run_seconds: float) -> int:
    """A step count that makes one run take about run_seconds."""
    impl.reset()
    impl.advance(1)
    impl.finish()

    def seconds_for(n: int) -> float:
        start = time.perf_counter()
        impl.advance(n)
        impl.finish()
        return time.perf_counter() - start

    n = 1
    while (elapsed := seconds_for(n)) < 0.1 * run_seconds:
        n *= 2
    n = round_steps(n * run_seconds / elapsed)
    impl.reset()
    return round_steps(n * run_seconds / seconds_for(n))


def measure_scene(scene: Cloth, msprings: ModuleType, run_seconds: float, repeats: int,
                  max_others: float, retries: int) -> SceneResult:
    """Builds, checks and times every implementation on one scene."""
    skipped: list[Skipped] = []
    impls = build_implementations(scene, msprings, skipped)
    if not impls or impls[0].name != MSPRINGS_ONE:
        reasons = "; ".join(f"{item.name}: {item.reason}" for item in skipped)
        raise RuntimeError(f"{scene.name}: msprings could not be built, nothing to compare "
                           f"with ({reasons})")
    reference_impl = impls[0]  # msprings, 1 thread
    reference_impl.reset()
    reference_impl.advance(CHECK_STEPS)
    reference = reference_impl.positions()
    checks = [run_check(impl, reference, scene.watched) for impl in impls]
    disagreeing = [check.name for check in checks if not check.passed]
    timed = [impl for impl, check in zip(impls, checks) if check.passed]
    _progress(f"  {scene.name}: agreement checked; calibrating")
    rows = [Row(impl, calibrate(impl, run_seconds)) for impl in timed]
    for round_index in range(repeats):
        _progress(f"  {scene.name}: round {round_index + 1}/{repeats}")
        for row in rows:
            run = timed_run(row.impl, row.steps_per_run)
            for _ in range(retries):
                if not run.others > max_others:  # NaN (unknown) counts as quiet
                    break
                row.retried += 1
                run = timed_run(row.impl, row.steps_per_run)
            row.seconds.append(run.wall)
            row.busy.append(run.cpu / run.wall)
            row.others.append(run.others)
    return SceneResult(scene, checks, rows, skipped, disagreeing)


# ---------------------------------------------------------------------------------------------
# report


def machine_lines(msprings: ModuleType, run_seconds: float, repeats: int,
                  redo: str) -> list[str]:
    """Markdown bullets describing the machine and the software measured."""
    lines = [
        f"- CPU: {cpu_model()}, {CORES} logical CPUs online",
        f"- OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"- Python {platform.python_version()}, NumPy {np.__version__}, "
        f"msprings {getattr(msprings, '__version__', 'unknown')}",
        f"- Memory allocator: {_ALLOCATOR[0] if _ALLOCATOR else 'defaults'}, so that the NumPy step's "
        "temporaries do not cost page faults in some runs and not in others",
    ]
    for name in ("numba", "taichi", "warp"):
        library = _LIBRARIES.get(name) or load_library(name)
        if library.module is None:
            lines.append(f"- {name}: not available, skipped ({library.error})")
        else:
            lines.append(f"- {library.detail}")
    lines += [
        f"- Date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}; "
        f"load average at the start: {_START_LOAD[0] if _START_LOAD else load_average()}, "
        f"at the end: {load_average()}",
        f"- Timing: median of {repeats} runs per row (about {run_seconds:g} s each), each from "
        f"the initial state after one untimed step, implementations taking turns; "
        f"{redo}; symplectic Euler, dt = {TIME_STEP:g} s; float64 throughout",
    ]
    return lines


_START_LOAD: list[str] = []
#: What keep_freed_memory() did, for the machine section.
_ALLOCATOR: list[str] = []


def check_lines(result: SceneResult) -> list[str]:
    """Markdown table of the agreement checks for one scene."""
    lines = [
        f"| implementation | node (N-1, N-1) after {CHECK_STEPS} steps (m) "
        f"| distance to {MSPRINGS_ONE} (m) | max distance, all nodes (m) | check |",
        "|---|---|---:|---:|---|",
    ]
    for check in result.checks:
        verdict = ("reference" if check.name == MSPRINGS_ONE
                   else "pass" if check.passed else "FAIL (not timed)")
        lines.append(f"| {check.name} | {format_vector(check.watched)} | {check.distance:.1e} "
                     f"| {check.max_distance:.1e} | {verdict} |")
    return lines


def timing_lines(result: SceneResult) -> list[str]:
    """Markdown table of the stepping rates for one scene."""
    rates = {row.impl.name: row.steps_per_second for row in result.rows}
    one = rates.get(MSPRINGS_ONE)
    everyone = rates.get(MSPRINGS_ALL)
    lines = [
        "| implementation | threads | steps/run | steps/s | spring evals/s (M) "
        f"| vs {MSPRINGS_ONE} | vs {MSPRINGS_ALL} | CPU/wall | others | spread |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    nspring = result.scene.n_springs
    for row in result.rows:
        rate = row.steps_per_second
        versus_one = f"{rate / one:.2f}x" if one else "n/a"
        versus_all = f"{rate / everyone:.2f}x" if everyone else "n/a"
        lines.append(f"| {row.impl.name} | {row.impl.threads} | {row.steps_per_run:,} "
                     f"| {format_rate(rate)} | {rate * nspring / 1e6:.3g} | {versus_one} "
                     f"| {versus_all} | {row.cores_busy:.2f} | {_others(row)} "
                     f"| {100 * row.spread:.0f}% |")
    return lines


def _others(row: Row) -> str:
    """The 'others' cell: median cores busy with other work, and how many runs were redone."""
    load = row.other_load
    text = "n/a" if load is None else f"{load:.2f}"
    return text + (f" ({row.retried} redone)" if row.retried else "")


def one_time_lines(results: Sequence[SceneResult]) -> list[str]:
    """Markdown table of setup and first-call (compile) times."""
    lines = [
        "| scene | implementation | setup (build state/fields) | first call: compile + 1 step |",
        "|---|---|---:|---:|",
    ]
    for result in results:
        built = {row.impl.name: row.impl for row in result.rows}
        for check in result.checks:
            impl = built.get(check.name)
            if impl is None:
                continue
            lines.append(f"| {result.scene.name} | {impl.name} | {format_seconds(impl.setup_seconds)} "
                         f"| {format_seconds(impl.first_call_seconds)} |")
    return lines


def library_lines() -> list[str]:
    """Markdown bullets with import and runtime-initialisation times."""
    lines = []
    for name in ("numba", "taichi", "warp"):
        library = _LIBRARIES.get(name)
        if library is None or library.module is None:
            continue
        init = {"taichi": "ti.init", "warp": "wp.init"}.get(name)
        text = f"- {name}: import {format_seconds(library.import_seconds)}"
        if init:
            text += f", {init} {format_seconds(library.init_seconds)}"
        lines.append(text)
    return lines


def report(results: Sequence[SceneResult], msprings: ModuleType, run_seconds: float,
           repeats: int, redo: str) -> str:
    """The whole Markdown report."""
    lines = ["# msprings and peer libraries on the cloth scenes", ""]
    lines += machine_lines(msprings, run_seconds, repeats, redo)
    for result in results:
        scene = result.scene
        lines += ["", f"## {scene.name} ({scene.n_nodes:,} nodes, {scene.n_springs:,} springs)",
                  "", f"### Agreement after {CHECK_STEPS} steps (tolerance {CHECK_TOLERANCE:g} m)",
                  ""]
        lines += check_lines(result)
        lines += ["", "### Stepping rate", ""]
        lines += timing_lines(result)
        if result.skipped:
            lines.append("")
            lines += [f"- skipped: {item.name}: {item.reason}" for item in result.skipped]
        if result.disagreeing:
            lines.append("")
            lines += [f"- DISAGREES with msprings, not timed: {name}"
                      for name in result.disagreeing]
    lines += ["", "'vs' columns: this row's steps/s divided by msprings' on the same scene "
              "(above 1 = faster than msprings). CPU/wall: process CPU time over wall time "
              "during a run (median; about the number of cores kept busy, spinning included). "
              "others: cores kept busy by other processes during a run (median; from "
              "/proc/stat); a run during which they exceeded the --max-others limit was redone "
              "(up to --retries times) and the count is shown. spread: (slowest - fastest) / "
              "median run.",
              "", "## What each row does", ""]
    seen: set[str] = set()
    for result in results:
        for row in result.rows:
            if row.impl.name not in seen:
                seen.add(row.impl.name)
                lines.append(f"- {row.impl.name}: {row.impl.note}")
    lines += ["", "## One-time costs (not in the rates above)", ""]
    lines += library_lines()
    lines += ["", "Numba compiles without an on-disk cache; Taichi runs with offline_cache=False "
              "and Warp with a fresh kernel-cache directory, so these are cold compiles. Kernels "
              "already compiled for an earlier scene may be reused (Numba, Warp).", ""]
    lines += one_time_lines(results)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# main


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark and prints the Markdown report; 0 when every peer agrees."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="short runs (about 0.1 s each, 3 rounds): a smoke test")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(CLOTH_SIZES),
                        help="cloth sizes N (default: 64 256)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per implementation (default 5; --quick: 3)")
    parser.add_argument("--run-seconds", type=float, default=None,
                        help="target length of one timed run (default 1.0; --quick: 0.1)")
    parser.add_argument("--max-others", type=float, default=0.2,
                        help="redo a run if other processes kept more than this many cores "
                             "busy during it (default 0.2)")
    parser.add_argument("--retries", type=int, default=3,
                        help="most times one run is redone for --max-others (default 3)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    run_seconds = args.run_seconds or (0.1 if args.quick else 1.0)
    if (repeats < 1 or run_seconds <= 0 or args.retries < 0 or args.max_others < 0
            or any(size < 3 for size in args.sizes)):
        parser.error("--repeats must be >= 1, --run-seconds > 0, --retries and --max-others "
                     ">= 0 and every size >= 3")
    _START_LOAD[:] = [load_average()]
    _ALLOCATOR[:] = [keep_freed_memory()]  # NumPy's temporaries: see common.keep_freed_memory

    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import msprings

    try:
        results = []
        for size in args.sizes:
            _progress(f"cloth-{size}")
            results.append(measure_scene(cloth_scene(size), msprings, run_seconds, repeats,
                                         args.max_others, args.retries))
        redo = (f"a run is redone (at most {args.retries} times) if other processes kept more "
                f"than {args.max_others:g} cores busy during it")
        print(report(results, msprings, run_seconds, repeats, redo))
    finally:
        for cache in _WARP_CACHE:
            shutil.rmtree(cache, ignore_errors=True)
    return 1 if any(result.disagreeing for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
