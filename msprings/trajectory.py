"""Recorded runs: :meth:`System.run` steps in C and keeps every ``record_every``-th state."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._system import System

__all__ = ["Trajectory", "record"]

ENERGY_FIELDS = ("kinetic", "spring", "gravity", "dissipated", "mechanical", "total")


@dataclass
class Trajectory:
    """A recorded run.  Arrays are preallocated and indexed by record ``r``:

    - ``times`` (R,) in s; ``steps`` (R,) step counts;
    - ``positions`` (R, n, 3) in m; ``velocities`` (R, n, 3) in m/s or None;
    - ``energy`` (R, 6): kinetic, spring, gravity, dissipated, mechanical, total (J) --
      also as attributes ``kinetic`` ... ``total`` (views of its columns);
    - the topology and scene needed to draw it: ``springs``, ``faces``, ``pinned``, ``uv``,
      ``colliders`` (one dict per collider, as at the start) and ``collider_centers``
      (R, C, 3), since colliders may move.
    """

    times: np.ndarray
    steps: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None
    energy: np.ndarray
    springs: np.ndarray
    faces: np.ndarray
    pinned: np.ndarray
    rest: np.ndarray
    uv: np.ndarray | None
    colliders: list[dict[str, Any]] = field(default_factory=list)
    collider_centers: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))
    dt: float = 0.0

    def __len__(self) -> int:
        return len(self.times)

    def __getattr__(self, name: str) -> np.ndarray:
        if name in ENERGY_FIELDS:
            return self.energy[:, ENERGY_FIELDS.index(name)]
        raise AttributeError(name)

    def frame(self, r: int) -> dict[str, Any]:
        """Record ``r`` as a dict (positions, time, ...) that :func:`msprings.plot.draw` takes."""
        centers = self.collider_centers[r] if self.collider_centers.size else np.zeros((0, 3))
        colliders = [dict(c, center=tuple(centers[i])) for i, c in enumerate(self.colliders)]
        return {
            "positions": self.positions[r],
            "time": float(self.times[r]),
            "springs": self.springs,
            "faces": self.faces,
            "pinned": self.pinned,
            "rest": self.rest,
            "colliders": colliders,
        }

    def lengths(self, r: int) -> np.ndarray:
        """Spring lengths (m) at record ``r``."""
        x = self.positions[r]
        return np.linalg.norm(x[self.springs[:, 1]] - x[self.springs[:, 0]], axis=1)


def _collider_dicts(system: System) -> list[dict[str, Any]]:
    out = []
    for collider in system.colliders:
        kind, center, axis, size, velocity, restitution, friction, thickness = system._get_collider(collider.id)
        out.append({"kind": kind, "center": center, "axis": axis, "size": size, "velocity": velocity,
                    "restitution": restitution, "friction": friction, "thickness": thickness})
    return out


class _Progress:
    """A one-line progress bar on stderr (terminal or Jupyter), updated at most 10 times a second."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.last = 0.0
        self.start = time.perf_counter()

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last < 0.1 and done < self.total:
            return
        self.last = now
        width = 30
        filled = int(width * done / self.total)
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} steps, {rate:,.0f} steps/s")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def record(system: System, dt: float, steps: int, record_every: int = 1, velocities: bool = False,
           progress: bool | None = None) -> Trajectory:
    """See :meth:`System.run`."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"steps must be an integer, not {type(steps).__name__}")
    if isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)):
        raise TypeError(f"record_every must be an integer, not {type(record_every).__name__}")
    if steps < 1:
        raise ValueError(f"steps = {steps} must be >= 1")
    if record_every < 1:
        raise ValueError(f"record_every = {record_every} must be >= 1")
    count = 1 + (steps + record_every - 1) // record_every
    n = system.n_nodes
    times = np.empty(count)
    step_counts = np.empty(count, dtype=np.int64)
    positions = np.empty((count, n, 3))
    speeds = np.empty((count, n, 3)) if velocities else None
    energy = np.empty((count, len(ENERGY_FIELDS)))
    colliders = system.colliders
    centers = np.empty((count, len(colliders), 3))

    def keep(r: int) -> None:
        times[r] = system.t
        step_counts[r] = system.steps
        positions[r] = system.x
        if speeds is not None:
            speeds[r] = system.v
        energy[r] = system.energy()
        for c, collider in enumerate(colliders):
            centers[r, c] = system._get_collider(collider.id)[1]

    show = progress if progress is not None else (_interactive() and steps * (n + system.n_springs) > 5e8)
    bar = _Progress(steps) if show else None
    trajectory = Trajectory(times, step_counts, positions, speeds, energy, system.springs.copy(), system.faces.copy(),
                            system.pinned.copy(), system.rest.copy(),
                            None if system.uv is None else system.uv.copy(), _collider_dicts(system), centers,
                            float(dt))
    keep(0)
    done = 0
    for r in range(1, count):
        chunk = min(record_every, steps - done)
        system.step(dt, chunk)
        done += chunk
        keep(r)
        if bar is not None:
            bar.update(done)
    return trajectory
