"""What every benchmark suite shares: the scenes of the project's benchmark list, the vectorised
NumPy peer step, timing (calibration once, then median of interleaved runs) and the Markdown report.

Scenes are built exactly as the benchmark list writes them: cloth-N, chain-N and stiff-chain as
plain arrays (:class:`Network`), the tablecloth by ``msprings.scenes.tablecloth(n)``.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

GRAVITY = (0.0, -9.81, 0.0)  # m/s^2, y up
CORES = os.cpu_count() or 1
#: Springs whose squared length is at most this (m^2) have no direction and exert no force
#: (msprings' own cut-off).
MIN_LENGTH_SQUARED = 1e-24
ROOT = Path(__file__).resolve().parent.parent


def import_msprings(root: Path | None = None) -> ModuleType:
    """msprings from ``root`` (default: this checkout when it holds a build), with its scenes."""
    root = ROOT if root is None else Path(root).resolve()
    if any((root / "msprings").glob("_core*")) and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import msprings
    import msprings.scenes  # noqa: F401  (msprings.scenes.tablecloth)

    return msprings


# ---------------------------------------------------------------------------------------------
# scenes


@dataclass(frozen=True)
class Network:
    """A spring network as plain arrays: the common input of msprings and every peer."""

    name: str
    positions: np.ndarray  # (nnode, 3) m
    springs: np.ndarray  # (nspring, 2) int32
    rest: np.ndarray  # (nspring,) m
    k: np.ndarray  # (nspring,) N/m
    c: np.ndarray  # (nspring,) N s/m
    mass: np.ndarray  # (nnode,) kg
    pinned: np.ndarray  # (nnode,) bool
    watched: int  # node whose position the reports show
    gravity: tuple[float, float, float] = GRAVITY
    drag: float = 0.0  # N s/m

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.positions.shape[0])

    @property
    def n_springs(self) -> int:
        """Number of springs."""
        return int(self.springs.shape[0])

    @property
    def inv_mass(self) -> np.ndarray:
        """(nnode,) 1/m (1/kg) on free nodes, 0 on pinned ones."""
        return np.where(self.pinned, 0.0, 1.0 / self.mass)


def _network(name: str, positions: np.ndarray, springs: np.ndarray, k: float, c: float, mass: float,
             pinned: Sequence[int], watched: int) -> Network:
    """A network whose springs all have stiffness k and damping c and rest at their initial length."""
    springs = np.ascontiguousarray(springs, dtype=np.int32)
    d = positions[springs[:, 1]] - positions[springs[:, 0]]
    nspring, nnode = springs.shape[0], positions.shape[0]
    is_pinned = np.zeros(nnode, dtype=bool)
    is_pinned[list(pinned)] = True
    return Network(name, positions, springs, np.sqrt(np.einsum("ij,ij->i", d, d)), np.full(nspring, k),
                   np.full(nspring, c), np.full(nnode, mass), is_pinned, watched)


def cloth(n: int, k: float = 2500.0, c: float = 1.0, name: str = "cloth") -> Network:
    """cloth-N: N x N nodes of 1 kg, node (i, j) = index i N + j at (0.625 j, 0, 0.625 i) m; structural,
    shear and bend springs (in that order) with k = 2500 N/m, c = 1 N s/m (or as given); nodes (0, 0),
    (0, N-1) pinned."""
    if n < 3:
        raise ValueError(f"cloth size n must be >= 3, got {n}")
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    positions = np.zeros((n * n, 3))
    positions[:, 0] = 0.625 * cols.ravel()
    positions[:, 2] = 0.625 * rows.ravel()
    node = np.arange(n * n).reshape(n, n)
    pairs = ((node[:, :-1], node[:, 1:]), (node[:-1, :], node[1:, :]),  # structural
             (node[:-1, :-1], node[1:, 1:]), (node[:-1, 1:], node[1:, :-1]),  # shear
             (node[:, :-2], node[:, 2:]), (node[:-2, :], node[2:, :]))  # bend
    springs = np.concatenate([np.stack((a.ravel(), b.ravel()), axis=1) for a, b in pairs])
    assert springs.shape[0] == 2 * n * (n - 1) + 2 * (n - 1) ** 2 + 2 * n * (n - 2)
    return _network(f"{name}-{n}", positions, springs, k, c, 1.0, (0, n - 1), n * n - 1)


def stiff_cloth(n: int) -> Network:
    """stiff-cloth-N: the cloth-N layout and springs with k = 1e5 N/m and c = 0."""
    return cloth(n, 1e5, 0.0, "stiff-cloth")


def _line(name: str, n: int, spacing: float, k: float, c: float, mass: float) -> Network:
    """n nodes ``spacing`` apart on the x axis, neighbour springs, node 0 pinned."""
    positions = np.zeros((n, 3))
    positions[:, 0] = spacing * np.arange(n)
    springs = np.stack((np.arange(n - 1), np.arange(1, n)), axis=1)
    return _network(name, positions, springs, k, c, mass, (0,), n - 1)


def chain(n: int) -> Network:
    """chain-N: N nodes of 1 kg 1 m apart, k = 20 N/m, c = 0.3 N s/m, node 0 pinned."""
    if n < 2:
        raise ValueError(f"chain size n must be >= 2, got {n}")
    return _line(f"chain-{n}", n, 1.0, 20.0, 0.3, 1.0)


def stiff_chain() -> Network:
    """stiff-chain: 100 nodes of 0.001 kg 0.01 m apart, k = 1e5 N/m, c = 0, node 0 pinned."""
    return _line("stiff-chain", 100, 0.01, 1e5, 0.0, 0.001)


def network_of(system: Any, name: str) -> Network:
    """The spring network of a msprings system (its current positions as the start)."""
    return Network(name, np.array(system.x, dtype=float), np.array(system.springs, dtype=np.int32),
                   np.array(system.rest, dtype=float), np.array(system.k, dtype=float),
                   np.array(system.c, dtype=float), np.array(system.mass, dtype=float),
                   np.array(system.pinned, dtype=bool), system.n_nodes - 1,
                   tuple(float(value) for value in system.gravity), float(system.drag))


def build_system(msprings: ModuleType, net: Network, integrator: str = "symplectic_euler",
                 threads: int | None = None) -> Any:
    """A msprings.System of the network; ``threads`` sets ``s.threads`` (0: all cores, None: default)."""
    system = msprings.System(net.positions, net.springs, mass=net.mass, k=net.k, c=net.c, rest=net.rest,
                             pinned=net.pinned, gravity=net.gravity, drag=net.drag, integrator=integrator)
    return set_threads(system, threads)


def set_threads(system: Any, threads: int | None) -> Any:
    """Sets ``s.threads`` when asked and the build has the setting; returns the system."""
    if threads is not None and hasattr(type(system), "threads"):
        system.threads = threads
    return system


# ---------------------------------------------------------------------------------------------
# the NumPy peer


@dataclass
class State:
    """Positions (m) and velocities (m/s) of a peer, (nnode, 3) each."""

    x: np.ndarray
    v: np.ndarray

    @classmethod
    def of(cls, system_or_network: Any) -> "State":
        """A copy of a msprings system's state, or a network's initial state (at rest)."""
        if isinstance(system_or_network, Network):
            return cls(system_or_network.positions.copy(), np.zeros_like(system_or_network.positions))
        return cls(np.array(system_or_network.x, dtype=float), np.array(system_or_network.v, dtype=float))


class Plane:
    """A static plane collider: solid on the side opposite its unit normal."""

    def __init__(self, collider: Any) -> None:
        self.point, self.normal = np.asarray(collider.center, float), np.asarray(collider.normal, float)

    def contacts(self, p: np.ndarray, thickness: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Indices of the points p (nnode, 3) closer than ``thickness`` to the surface, their gaps
        (distance - thickness < 0, m) and the outward normals there, (count, 3)."""
        gap = (p - self.point) @ self.normal - thickness
        inside = np.flatnonzero(gap < 0.0)
        return inside, gap[inside], np.broadcast_to(self.normal, (inside.size, 3))


class Cylinder:
    """A static solid capped cylinder, with msprings' distance: beyond the rim the distance to the rim
    circle, otherwise the larger of the radial and the cap distance (inside: the nearest surface)."""

    def __init__(self, collider: Any) -> None:
        self.center, self.axis = np.asarray(collider.center, float), np.asarray(collider.axis, float)
        self.radius, self.half_height = float(collider.radius), 0.5 * float(collider.height)
        helper = np.array([1.0, 0.0, 0.0]) if abs(self.axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        perpendicular = helper - (helper @ self.axis) * self.axis  # radial direction on the axis
        self.perpendicular = perpendicular / np.linalg.norm(perpendicular)

    def contacts(self, p: np.ndarray, thickness: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As :meth:`Plane.contacts`."""
        r = p - self.center
        along = r @ self.axis
        radial = r - along[:, None] * self.axis
        rho = np.sqrt(np.einsum("ij,ij->i", radial, radial))
        dr, dh = rho - self.radius, np.abs(along) - self.half_height
        distance = np.maximum(dr, dh)
        rim = (dr > 0.0) & (dh > 0.0)
        distance[rim] = np.hypot(dr[rim], dh[rim])
        inside = np.flatnonzero(distance < thickness)
        along, radial, rho, dr, dh, distance, rim = (a[inside] for a in (along, radial, rho, dr, dh, distance, rim))
        radial[rho == 0.0] = self.perpendicular
        radial /= np.where(rho == 0.0, 1.0, rho)[:, None]
        side = np.where(along < 0.0, -1.0, 1.0)
        normal = side[:, None] * self.axis
        normal[dr > dh] = radial[dr > dh]
        normal[rim] = (dr[rim, None] * radial[rim] + (dh[rim] * side[rim])[:, None] * self.axis) / distance[rim, None]
        return inside, distance - thickness, normal


@dataclass
class Contact:
    """msprings' contact rule for one static collider."""

    shape: Plane | Cylinder
    restitution: float
    friction: float
    thickness: float  # m

    def apply(self, x_old: np.ndarray, x: np.ndarray, v: np.ndarray, free: np.ndarray) -> int:
        """Free nodes that end the step (at x) within ``thickness`` move out along the normal to
        distance ``thickness``; approaching ones (v.n < 0) get v.n -> -e v.n and lose at most mu times
        that change of their tangential velocity; a node friction stops keeps its tangential position
        from x_old (static friction).  In place on x and v; returns the number of nodes moved."""
        inside, gap, normal = self.shape.contacts(x, self.thickness)
        keep = free[inside]
        inside, gap, normal = inside[keep], gap[keep], normal[keep]
        moved = x[inside] - gap[:, None] * normal
        velocity = v[inside]
        vn = np.einsum("ij,ij->i", velocity, normal)
        hit = np.flatnonzero(vn < 0.0)
        n_hit, vn_hit = normal[hit], vn[hit]
        change = -(1.0 + self.restitution) * vn_hit
        tangent = velocity[hit] - vn_hit[:, None] * n_hit
        speed = np.sqrt(np.einsum("ij,ij->i", tangent, tangent))
        limit = self.friction * change
        slides = speed > limit
        keep_tangent = np.zeros_like(speed)
        keep_tangent[slides] = 1.0 - limit[slides] / speed[slides]
        v[inside[hit]] = (vn_hit + change)[:, None] * n_hit + keep_tangent[:, None] * tangent
        if self.friction > 0.0:
            held = hit[keep_tangent == 0.0]
            slip = moved[held] - x_old[inside[held]]
            moved[held] -= slip - np.einsum("ij,ij->i", slip, normal[held])[:, None] * normal[held]
        x[inside] = moved
        return int(inside.size)


def contacts_of(system: Any) -> list[Contact]:
    """The contact rules of a system's colliders, in the order they act (static planes and cylinders)."""
    shapes = {"plane": Plane, "cylinder": Cylinder}
    rules = []
    for collider in system.colliders:
        if collider.kind not in shapes or np.any(collider.velocity != 0.0):
            raise ValueError(f"the NumPy step has no moving or {collider.kind} collider")
        rules.append(Contact(shapes[collider.kind](collider), collider.restitution, collider.friction,
                             collider.thickness))
    return rules


class NumpyStep:
    """The vectorised NumPy symplectic Euler step: springs (Hooke + axial damper), gravity and linear
    drag, then optionally msprings' contact rule collider by collider.  Every spring is evaluated at
    once from both ends gathered with ``take``; the forces reach the nodes through one ``np.bincount``.
    Called as ``step(state, n)``: n steps in place."""

    def __init__(self, net: Network, h: float, contacts: Sequence[Contact] = ()) -> None:
        self.h, self.contacts, self.n_nodes = h, list(contacts), net.n_nodes
        self.first, self.second = net.springs[:, 0].astype(np.intp), net.springs[:, 1].astype(np.intp)
        axes = np.arange(3)
        # flat force index of every (spring end, axis): +f on the first ends, -f on the second
        self.scatter = np.concatenate((3 * self.first[:, None] + axes, 3 * self.second[:, None] + axes)).ravel()
        self.weight = net.mass[:, None] * np.asarray(net.gravity)
        self.drag = net.drag
        self.free = ~net.pinned
        self.step_mass = h * net.inv_mass[:, None]  # h / m, 0 when pinned
        self.rest, self.k, self.c = net.rest, net.k, net.c
        self.moved: list[int] = []  # nodes moved by each contact in the latest step

    def forces(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(nnode, 3) total force (N) at positions x and velocities v."""
        d = x.take(self.second, axis=0) - x.take(self.first, axis=0)
        length2 = np.einsum("ij,ij->i", d, d)
        length = np.sqrt(length2)
        inv_length = np.divide(1.0, length, out=np.zeros_like(length), where=length2 > MIN_LENGTH_SQUARED)
        closing = np.einsum("ij,ij->i", v.take(self.second, axis=0) - v.take(self.first, axis=0), d) * inv_length
        pull = d * ((self.k * (length - self.rest) + self.c * closing) * inv_length)[:, None]
        springs = np.bincount(self.scatter, weights=np.concatenate((pull, -pull)).ravel(), minlength=3 * self.n_nodes)
        total = self.weight + springs.reshape(-1, 3)
        return total - self.drag * v if self.drag else total

    def __call__(self, state: State, n: int) -> None:
        for _ in range(n):
            state.v += self.step_mass * self.forces(state.x, state.v)
            if not self.contacts:
                state.x += self.h * state.v
                continue
            x_new = state.x + self.h * state.v
            self.moved = [contact.apply(state.x, x_new, state.v, self.free) for contact in self.contacts]
            state.x = x_new


class ScipyNewton:
    """Backward Euler by Newton's method with sparse direct solves (``spsolve``), step h (s), pins
    eliminated, at most ``iterations`` solves per step.  It stops as msprings' implicit solver does:
    after a solve, when |M dv - h f(x', v')| <= tol * max(|M dv|, |h f|, |h M g|) over the free
    degrees of freedom.  Called as ``step(state, n)``: n steps in place; ``solves`` lists each step's
    Newton iterations."""

    def __init__(self, net: Network, h: float, tol: float, iterations: int) -> None:
        import scipy.sparse
        import scipy.sparse.linalg

        self.sparse, self.spsolve = scipy.sparse, scipy.sparse.linalg.spsolve
        self.net, self.h, self.tol, self.iterations = net, h, tol, iterations
        self.forces = NumpyStep(net, h).forces
        self.free = np.repeat(~net.pinned, 3)  # free degrees of freedom
        self.mass = np.repeat(net.mass, 3)
        self.weight = h * np.linalg.norm(net.mass[~net.pinned, None] * np.asarray(net.gravity))
        # matrix indices of each spring's four 3x3 blocks (i, i), (j, j), (i, j), (j, i), in the order
        # of the values jacobian() lists: entry (r, s) of block (a, b) is at (3 a + r, 3 b + s)
        i, j = net.springs[:, 0], net.springs[:, 1]
        shape = (net.n_springs, 3, 3)
        axes = np.arange(3)
        self.rows = np.concatenate([np.broadcast_to(3 * a[:, None, None] + axes[:, None], shape) for a in (i, j, i, j)],
                                   axis=None)
        self.cols = np.concatenate([np.broadcast_to(3 * b[:, None, None] + axes, shape) for b in (i, j, j, i)],
                                   axis=None)
        self.solves: list[int] = []  # Newton iterations of each step

    def jacobian(self, x: np.ndarray) -> Any:
        """M + h C + h^2 K at positions x (nnode, 3), restricted to the free degrees of freedom, with
        K = -df/dx (per spring k_t I + (k - k_t) n n^T with k_t = k max(0, 1 - L/l), as msprings) and C = -df/dv (per spring c n n^T, and
        drag on the diagonal; the dampers' dependence on position is left out, as msprings does)."""
        net = self.net
        d = x[net.springs[:, 1]] - x[net.springs[:, 0]]
        length = np.linalg.norm(d, axis=1)
        n = d / length[:, None]
        h = self.h
        transverse = net.k * np.maximum(0.0, 1.0 - net.rest / length)
        along = h * net.c + h * h * (net.k - transverse)
        block = (h * h * transverse)[:, None, None] * np.eye(3) + along[:, None, None] * n[:, :, None] * n[:, None, :]
        values = np.concatenate([block, block, -block, -block]).ravel()
        size = 3 * net.n_nodes
        matrix = self.sparse.csr_matrix((values, (self.rows, self.cols)), shape=(size, size))
        matrix = matrix + self.sparse.diags(self.mass + h * net.drag)
        return matrix[self.free][:, self.free].tocsc()

    def __call__(self, state: State, steps: int) -> None:
        free, h = self.free, self.h
        for _ in range(steps):
            x, v = state.x.ravel(), state.v.ravel()
            dv = np.zeros_like(v)
            for iteration in range(1, self.iterations + 1):
                v_end = v + dv
                x_end = x + h * v_end
                force = self.forces(x_end.reshape(-1, 3), v_end.reshape(-1, 3)).ravel()
                residual = (self.mass * dv - h * force)[free]
                scale = max(np.linalg.norm((self.mass * dv)[free]), np.linalg.norm(h * force[free]), self.weight)
                if iteration > 1 and np.linalg.norm(residual) <= self.tol * scale:
                    iteration -= 1
                    break
                dv[free] -= self.spsolve(self.jacobian(x_end.reshape(-1, 3)), residual)
            self.solves.append(iteration)
            state.v = (v + dv).reshape(-1, 3)
            state.x = (x + h * (v + dv)).reshape(-1, 3)


# ---------------------------------------------------------------------------------------------
# timing


@dataclass
class Contender:
    """One row to time: ``fresh()`` makes a new state, ``run(state, n)`` steps it n times."""

    name: str
    fresh: Callable[[], Any]
    run: Callable[[Any, int], None]
    steps_like: str | None = None  # run as many steps as that (earlier) contender
    steps: int = 0
    seconds: list[float] = field(default_factory=list)
    last: Any = None  # the state after the latest timed run

    @property
    def per_step(self) -> float:
        """Median seconds per step."""
        return statistics.median(self.seconds) / self.steps

    @property
    def rate(self) -> float:
        """Steps per second of the median run."""
        return 1.0 / self.per_step


def timed(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median seconds of ``repeats`` calls of ``action``, and the last call's result."""
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def round_steps(n: float) -> int:
    """n rounded to two significant digits, at least 1."""
    n = max(1.0, n)
    scale = 10 ** max(0, int(math.floor(math.log10(n))) - 1)
    return max(1, int(round(n / scale)) * scale)


def calibrate(contender: Contender, seconds: float) -> int:
    """Steps that make one run take about ``seconds``: doubled on one primed state until a run takes
    a tenth of that, then refined by one run at the estimate (so a slow first run does not count)."""
    state = contender.fresh()
    contender.run(state, 1)

    def seconds_for(n: int) -> float:
        start = time.perf_counter()
        contender.run(state, n)
        return time.perf_counter() - start

    n = 1
    while (elapsed := seconds_for(n)) < 0.1 * seconds:
        n *= 2
    n = round_steps(n * seconds / elapsed)
    return round_steps(n * seconds / max(seconds_for(n), 1e-9))


def time_interleaved(contenders: Sequence[Contender], seconds: float, repeats: int) -> None:
    """Calibrates each contender once (unless its steps are set), then times ``repeats`` rounds of one run of each (taking turns,
    so background load hits all alike).  Each run starts from a fresh state after one untimed step."""
    by_name = {contender.name: contender for contender in contenders}
    for contender in contenders:
        if contender.steps_like:
            contender.steps = by_name[contender.steps_like].steps
        elif not contender.steps:  # else set by the suite
            contender.steps = calibrate(contender, seconds)
    for _ in range(repeats):
        for contender in contenders:
            state = contender.fresh()
            contender.run(state, 1)
            start = time.perf_counter()
            contender.run(state, contender.steps)
            contender.seconds.append(time.perf_counter() - start)
            contender.last = state


def largest_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Largest distance (m) between corresponding rows of two (nnode, 3) arrays."""
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b), axis=1).max())


# ---------------------------------------------------------------------------------------------
# report


def keep_freed_memory() -> str:
    """Stops glibc's malloc from giving freed memory back between steps, and says what was done.

    NumPy takes its temporaries from malloc; with glibc's self-adjusting thresholds the heap top
    can be trimmed and regrown every step, so one NumPy step pays hundreds of page faults that
    another does not.  Fixed thresholds measure the NumPy peer at its best (msprings allocates
    nothing while stepping).  Call once, before anything is timed."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "allocator defaults (not glibc)"
    import ctypes

    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_threshold = -1, -3  # mallopt parameters, <malloc.h>
    if libc.mallopt(m_trim_threshold, 1 << 30) and libc.mallopt(m_mmap_threshold, 32 << 20):
        return "glibc malloc with fixed thresholds (M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 1 GiB)"
    return "glibc malloc defaults (mallopt refused fixed thresholds)"


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo, or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def build_line(msprings: ModuleType) -> str:
    """msprings' version, where it was imported from, its git commit and whether AVX2 code runs."""
    package = Path(msprings.__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(package), "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "not a git checkout"
    avx2 = "AVX2" if getattr(msprings._core, "avx2", lambda: False)() else "no AVX2"
    return f"msprings {getattr(msprings, '__version__', '?')} ({package}, {commit}, {avx2})"


def header(title: str, msprings: ModuleType, quick: bool, notes: Sequence[str] = ()) -> list[str]:
    """The report's title and machine lines: CPU, cores, software, msprings build, date and load."""
    return [f"# {title}" + (" (--quick: smoke run, not a measurement)" if quick else ""), "",
            f"- CPU: {cpu_model()}, {CORES} logical CPUs; {platform.system()} {platform.release()} "
            f"({platform.machine()})",
            f"- Python {platform.python_version()}, NumPy {np.__version__}; {build_line(msprings)}",
            f"- Date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}; "
            f"load average at the start: {load_average()}",
            *(f"- {note}" for note in notes)]


def table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table; columns whose name starts with '>' are right-aligned (the '>' is dropped)."""
    names = [name.lstrip(">") for name in columns]
    rules = ["---:" if name.startswith(">") else "---" for name in columns]
    return ["| " + " | ".join(names) + " |", "|" + "|".join(rules) + "|",
            *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


def rate(value: float) -> str:
    """A rate with three significant digits and thousands separators."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def duration(seconds: float) -> str:
    """A duration in the unit that suits it."""
    if abs(seconds) >= 1.0:
        return f"{seconds:.2f} s"
    if abs(seconds) >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def vector(p: np.ndarray) -> str:
    """A position as '(x, y, z)' with 9 decimals (nm)."""
    return "(" + ", ".join(f"{value:.9f}" for value in p) + ")"


def verdict(passed: bool) -> str:
    """A check's cell: pass, or a bold FAIL."""
    return "pass" if passed else "**FAIL**"


def parse_args(description: str, argv: Sequence[str] | None,
               extra: Callable[[argparse.ArgumentParser], None] | None = None,
               repeats: tuple[int, int] = (5, 2)) -> argparse.Namespace:
    """``--quick`` (short runs: a smoke test) and ``--repeats`` (timed runs per row; by default
    ``repeats[0]``, or ``repeats[1]`` with --quick), and whatever ``extra`` adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="short runs and fewer repeats: a smoke test")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"timed runs per row (default {repeats[0]}, {repeats[1]} with --quick)")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    args.repeats = args.repeats or repeats[args.quick]
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args
