"""msprings beside other Python routes to a fast mass-spring step: NumPy, Numba, Taichi and Warp, on
cloth-64 and cloth-256 (symplectic Euler, h = 1e-3 s, float64 throughout).

Each peer is written the way that library's own examples write a cloth step:

* msprings: ``s.step(h, n)`` with ``s.threads = 1`` and ``s.threads = 0`` (all online cores);
* NumPy: :class:`harness.NumpyStep`, one vectorised step per Python iteration;
* Numba ``@njit``: a loop over springs, n steps per call; ``@njit(parallel=True)``: ``prange`` over
  per-thread spring chunks with private force buffers, then ``prange`` over nodes;
* Taichi (``arch=ti.cpu``, f64): one kernel per step, springs with ``ti.atomic_add`` then nodes, on all
  cores and serialised; and the grid stencil of Taichi's own cloth example (every node gathers its 12
  neighbours: each spring evaluated from both ends, k, c and spacing as constants);
* Warp on device "cpu" (``wp.vec3d``): ``eval_springs`` and ``integrate_particles`` launches per step,
  as in Warp's cloth benchmark (Warp's CPU launches run serially in the calling thread).

Compilation happens in an untimed first call, reported apart (cold: Taichi's and Warp's kernel caches
are bypassed).  A library that is not installed or fails to import or compile is skipped, and the report
says so.  Before timing, every implementation runs 100 steps and node (N-1, N-1) must lie within 1e-9 m of
single-threaded msprings'; one that disagrees is not timed and the exit status is 1.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from . import harness
except ImportError:  # as a script
    import harness

TIME_STEP = 1e-3  # s
GRAVITY = harness.GRAVITY
CHECK_STEPS = 100
CHECK_TOLERANCE = 1e-9  # m
MIN_LENGTH = 1e-12  # m: shorter springs exert no force (msprings' cut-off)
#: cloth-N's uniform spacing (m), stiffness (N/m) and damping (N s/m): the stencil's constants
CLOTH_SPACING, CLOTH_K, CLOTH_C = 0.625, 2500.0, 1.0
CORES = harness.CORES
MSPRINGS_ONE, MSPRINGS_ALL = "msprings, 1 thread", "msprings, all cores"


# ---------------------------------------------------------------------------------------------
# optional libraries


@dataclass
class Library:
    """An optional peer library: the module, or why it is unavailable."""

    name: str
    module: ModuleType | None = None
    error: str = ""
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
    try:
        if name == "numba":
            import numba as module
        elif name == "taichi":
            import taichi as module
        elif name == "warp":
            import warp as module
        else:
            raise ValueError(f"unknown library {name!r}")
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

    Subclasses set ``name`` and ``threads`` (a label), build their state in
    ``__init__`` (timed as setup), and implement reset, advance and position.
    """

    name: str = ""
    threads: str = "1"

    def __init__(self, scene: harness.Network) -> None:
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


# ---- Numba -------------------------------------------------------------------------------

_NUMBA_KERNELS: dict[str, Callable[..., None]] = {}


def _numba_kernels(numba: ModuleType) -> dict[str, Callable[..., None]]:
    """The serial and parallel Numba steppers, compiled lazily on first call."""
    if _NUMBA_KERNELS:
        return _NUMBA_KERNELS
    njit, prange = numba.njit, numba.prange

    @njit
    def add_springs(x, v, f, springs, rest, k, c, begin, end):
        # forces of springs [begin, end) added to f: +t n on the first end, -t n on the second
        for s in range(begin, end):
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
            closing = (v[j, 0] - v[i, 0]) * nx + (v[j, 1] - v[i, 1]) * ny + (v[j, 2] - v[i, 2]) * nz
            tension = k[s] * (length - rest[s]) + c[s] * closing
            f[i, 0] += tension * nx
            f[i, 1] += tension * ny
            f[i, 2] += tension * nz
            f[j, 0] -= tension * nx
            f[j, 1] -= tension * ny
            f[j, 2] -= tension * nz

    @njit
    def serial_steps(x, v, f, springs, rest, k, c, mass, inv_mass, pinned, g, h, nsteps):
        for _ in range(nsteps):
            for a in range(x.shape[0]):
                for d in range(3):
                    f[a, d] = mass[a] * g[d]
            add_springs(x, v, f, springs, rest, k, c, 0, springs.shape[0])
            for a in range(x.shape[0]):
                if pinned[a]:
                    continue
                for d in range(3):
                    v[a, d] += h * f[a, d] * inv_mass[a]
                    x[a, d] += h * v[a, d]

    @njit(parallel=True)
    def parallel_steps(x, v, private, springs, rest, k, c, mass, inv_mass, pinned, g, h, nsteps):
        # private: (nchunk, nnode, 3) force buffers, one per chunk of springs
        nchunk = private.shape[0]
        per_chunk = (springs.shape[0] + nchunk - 1) // nchunk
        for _ in range(nsteps):
            for t in prange(nchunk):
                private[t] = 0.0
                add_springs(x, v, private[t], springs, rest, k, c, t * per_chunk,
                            min(springs.shape[0], (t + 1) * per_chunk))
            for a in prange(x.shape[0]):
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

    def __init__(self, scene: harness.Network, numba: ModuleType, parallel: bool) -> None:
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
        else:
            self.name = "Numba @njit"
            self.threads = "1"

    def reset(self) -> None:
        self.x[...] = self.scene.positions
        self.v[...] = 0.0

    def advance(self, n: int) -> None:
        if self.parallel:
            self.numba.set_num_threads(self.nthreads)
        scene = self.scene
        self.kernel(self.x, self.v, self.forces, self.springs, scene.rest, scene.k, scene.c,
                    scene.mass, self.inv_mass, scene.pinned, self.gravity, TIME_STEP, n)

    def positions(self) -> np.ndarray:
        return self.x.copy()


# ---- Taichi ------------------------------------------------------------------------------

_TAICHI_CLASSES: dict[str, type] = {}


def _taichi_classes(ti: ModuleType) -> dict[str, type]:
    """Taichi data-oriented steppers (kernels compile on first call)."""
    if _TAICHI_CLASSES:
        return _TAICHI_CLASSES

    def annotated(kernel: Callable[..., Any]) -> Callable[..., Any]:
        """The kernel with its annotations evaluated: they are strings in this module (from
        __future__ import annotations), which Taichi 1.7 does not read."""
        kernel.__annotations__ = {name: eval(text, {"ti": ti}) if isinstance(text, str) else text
                                  for name, text in kernel.__annotations__.items()}
        return kernel

    @ti.data_oriented
    class SpringList:
        """Spring list in fields; one kernel per step: springs (atomic adds), then nodes."""

        def __init__(self, scene: harness.Network) -> None:
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
        @annotated
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

        def __init__(self, scene: harness.Network) -> None:
            size = math.isqrt(scene.n_nodes)
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
        @annotated
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

    def __init__(self, scene: harness.Network, ti: ModuleType, variant: str) -> None:
        super().__init__(scene)
        start = time.perf_counter()
        self.ti = ti
        self.variant = variant
        classes = _taichi_classes(ti)
        if variant == "stencil":
            self.stepper = classes["stencil"](scene)
            self.name = "Taichi, grid stencil gather"
        else:
            self.stepper = classes["springs"](scene)
            serial = variant == "springs-serial"
            self.serial = serial
            self.name = ("Taichi, springs + ti.atomic_add, serialised" if serial
                         else "Taichi, springs + ti.atomic_add")
        self.threads = ("1" if variant == "springs-serial"
                        else f"{taichi_threads(ti)} (Taichi default: all)")
        self.reset()
        self.setup_seconds = time.perf_counter() - start

    def reset(self) -> None:
        scene = self.scene
        if self.variant == "stencil":
            shape = (math.isqrt(scene.n_nodes), math.isqrt(scene.n_nodes), 3)
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

    def __init__(self, scene: harness.Network, wp: ModuleType) -> None:
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
# checking and timing


def library_contender(impl: Implementation) -> harness.Contender:
    """A timing row of a library implementation (its state lives in the implementation)."""
    def fresh() -> Implementation:
        impl.reset()
        return impl

    def run(state: Implementation, n: int) -> None:
        state.advance(n)
        state.finish()

    return harness.Contender(impl.name, fresh, run)


def contenders(net: harness.Network, msprings: ModuleType, skipped: dict[str, str],
               compile_rows: list[tuple[str, ...]]) -> list[tuple[harness.Contender, str]]:
    """(row, threads) of every implementation that can be built and compiled for the scene."""
    def batched(system: Any, n: int) -> None:
        system.step(TIME_STEP, n)

    rows = [(harness.Contender(MSPRINGS_ONE, harness.build_system(msprings, net, threads=1).copy, batched), "1"),
            (harness.Contender(MSPRINGS_ALL, harness.build_system(msprings, net, threads=0).copy, batched),
             f"{CORES} (all)"),
            (harness.Contender("NumPy", lambda: harness.State.of(net), harness.NumpyStep(net, TIME_STEP)), "1")]
    libraries = {name: load_library(name) for name in ("numba", "taichi", "warp")}
    makers: list[tuple[str, str, Callable[[], Implementation]]] = [
        ("Numba @njit", "numba", lambda: NumbaImpl(net, libraries["numba"].module, parallel=False)),
        ("Numba @njit(parallel=True)", "numba", lambda: NumbaImpl(net, libraries["numba"].module, parallel=True)),
        ("Taichi, springs + ti.atomic_add", "taichi", lambda: TaichiImpl(net, libraries["taichi"].module, "springs")),
        ("Taichi, springs + ti.atomic_add, serialised", "taichi",
         lambda: TaichiImpl(net, libraries["taichi"].module, "springs-serial")),
        ("Taichi, grid stencil gather", "taichi", lambda: TaichiImpl(net, libraries["taichi"].module, "stencil")),
        ("Warp (device cpu)", "warp", lambda: WarpImpl(net, libraries["warp"].module)),
    ]
    for name, library, make in makers:
        if libraries[library].module is None:
            skipped[name] = f"{library} unavailable ({libraries[library].error})"
            continue
        try:
            impl = make()
            with contextlib.redirect_stdout(io.StringIO()):
                impl.warm_up()
        except Exception as error:  # noqa: BLE001 - a peer that fails is skipped, not fatal
            skipped[name] = f"failed to build or compile on {net.name} ({_describe_error(error)})"
            continue
        rows.append((library_contender(impl), impl.threads))
        compile_rows.append((net.name, impl.name, harness.duration(impl.setup_seconds),
                             harness.duration(impl.first_call_seconds)))
    return rows


def positions_after(row: harness.Contender, steps: int) -> np.ndarray:
    """(nnode, 3) positions after ``steps`` steps from the initial state."""
    state = row.fresh()
    row.run(state, steps)
    return state.positions() if isinstance(state, Implementation) else np.array(state.x)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the suite, prints the Markdown report and returns the exit status."""
    def sizes(parser: Any) -> None:
        parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256], help="cloth sizes N (default 64 256)")

    args = harness.parse_args(__doc__.splitlines()[0], argv, sizes)
    allocator = harness.keep_freed_memory()
    msprings = harness.import_msprings()
    seconds = 0.1 if args.quick else 1.0
    skipped: dict[str, str] = {}
    checks, speed, compiles = [], [], []
    passed = True
    try:
        for size in args.sizes:
            net = harness.cloth(size)
            built = contenders(net, msprings, skipped, compiles)
            reference = positions_after(built[0][0], CHECK_STEPS)[net.watched]
            timed = []
            for row, threads in built:
                distance = float(np.linalg.norm(positions_after(row, CHECK_STEPS)[net.watched] - reference))
                agrees = distance <= CHECK_TOLERANCE
                passed &= agrees
                checks.append((net.name, row.name, f"{distance:.1e}", harness.verdict(agrees)))
                if agrees:
                    timed.append((row, threads))
            harness.time_interleaved([row for row, _ in timed], seconds, args.repeats)
            one, every = timed[0][0].rate, timed[1][0].rate
            for row, threads in timed:
                speed.append((net.name, row.name, threads, f"{row.steps:,}", harness.rate(row.rate),
                              f"{row.rate * net.n_springs / 1e6:.3g}", f"{row.rate / one:.2f}",
                              f"{row.rate / every:.2f}"))
    finally:
        for cache in _WARP_CACHE:
            shutil.rmtree(cache, ignore_errors=True)
    found = [load_library(name) for name in ("numba", "taichi", "warp")]
    out = harness.header("msprings and peer libraries on the cloth scenes", msprings, args.quick, [
        *(library.detail or f"{library.name}: not available, skipped ({library.error})" for library in found),
        f"Symplectic Euler, h = {TIME_STEP:g} s; median of {args.repeats} runs per row (about {seconds:g} s "
        f"each), each from the initial state after one untimed step, the rows taking turns; NumPy temporaries: "
        f"{allocator}"])
    out += ["", f"## Agreement of node (N-1, N-1) with {MSPRINGS_ONE} after {CHECK_STEPS} steps "
            f"(tolerance {CHECK_TOLERANCE:g} m)", ""]
    out += harness.table(["scene", "implementation", ">distance (m)", "check"], checks)
    out += ["", "## Speed", "", "'vs' columns: this row's steps/s over msprings' on the same scene (above 1: faster "
            "than msprings).", ""]
    out += harness.table(["scene", "implementation", "threads", ">steps/run", ">steps/s", ">spring evals/s (M)",
                          f">vs {MSPRINGS_ONE}", f">vs {MSPRINGS_ALL}"], speed)
    if skipped:
        out += ["", *(f"- skipped: {name}: {reason}" for name, reason in skipped.items())]
    if compiles:
        out += ["", "## One-time costs (not in the rates above)", ""]
        out += harness.table(["scene", "implementation", ">setup", ">first call: compile + 1 step"], compiles)
    print("\n".join(out))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
