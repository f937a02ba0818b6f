"""Cost of contact handling per step on the tablecloth scene, beside a vectorised NumPy peer.

Scene: tablecloth-N, built by ``msprings.scenes.tablecloth(n)`` exactly (N = 40, the
references' default, and N = 80): an N x N square cloth 25 m wide of 3 kg nodes with
structural, shear and bend springs, k = 3000 N/m, c = 8 N s/m, rest length = initial length,
held flat 1 m above a round table and let go.  The table is a capped cylinder (radius
8.75 m, axis vertical, top at y = 10 m) standing on a ground plane (y = 0); both colliders
have restitution 0, Coulomb friction 0.3 and contact thickness spacing / 10 (0.064 m at
N = 40, 0.032 m at N = 80).  Gravity (0, -9.81, 0) m/s^2, symplectic Euler,
h = 2 ms: the step ``python -m msprings run tablecloth`` uses (the scene list's 2 ms, which
is below half the scene's critical step of about 17 ms, so that command keeps it).

An untimed run of 2500 steps (5 s simulated, the duration ``python -m msprings run
tablecloth`` simulates) lets the cloth fall, land and drape over the table; its corners hang
down the sides, at N = 80 down to the ground.  A node is "in contact" when it lies within
``thickness + 1e-6 m`` of the table (top, side or rim) or the ground: after a step, every
node the contact rule moved sits at exactly ``thickness``.  The benchmark requires at least
20 % of the nodes in contact in the settled state.

Rows, each timed from fresh copies of the settled state, all on one thread but the last:

* **msprings, colliders**: ``s.step(h, n)`` on ``s.copy()`` with ``s.threads = 1``.  (A system
  with colliders steps through the double buffer, as every system with a constraint after
  the integrator does.)
* **msprings, colliders removed**: the same copy with both colliders removed
  (``s.remove_collider``): an in-place symplectic Euler step.  The difference from the row
  above is what contact handling costs msprings per step.
* **NumPy, contact**: a vectorised NumPy step of the same physics: forces m g plus, per
  spring (i, j) with d = x_j - x_i, l = |d|, the force [k (l - L) + c (v_j - v_i).d / l] d / l on
  node i and its opposite on node j, gathered with ``take`` and scattered onto the nodes by
  one ``np.bincount``; v += h f / m, x += h v; then msprings' contact rule, collider by
  collider in the system's order (table, then ground), for the free nodes that end the step
  within ``thickness`` of the collider's surface: moved out along the nearest surface's normal
  to distance ``thickness``; if approaching (v.n < 0), the normal velocity is replaced by
  ``-e v.n`` and the tangential velocity v_t is reduced by at most mu times the normal
  change, ``v_t' = max(0, 1 - mu (1 + e)|v.n| / |v_t|) v_t``; when friction stops the node
  (v_t' = 0), the tangential part of its displacement over the step is undone as well
  (static friction: a node friction holds does not creep).  The cylinder's distance is
  msprings': outside both the side and the caps (beyond the rim) the distance to the rim
  circle with the normal pointing away from it, otherwise the larger of the radial distance
  rho - R (normal: radial) and the cap distance |y - y_c| - H/2 (normal: up or down), which
  inside the solid picks the nearest surface.  Colliders are static here, so velocities are
  relative to a surface at rest.
* **NumPy, no contact**: the same step without the contact pass: what contact costs in NumPy.
* **msprings, colliders, all cores**: the first row with ``s.threads = 0``: the network is
  large enough for the worker threads, and each applies the contacts of its own nodes.

msprings also sweeps each node's path over the step (from its position at the start of the
step to where the integrator, and any earlier collider, put it) when the node started the
step outside the collider's contact zone (the points within ``thickness`` of the surface): if
the path enters the zone and either ends outside it again or ends nearest to a surface whose
normal is more than 60 degrees from the normal at the entry point, the node is pushed out
through the entry face instead, so that a fast node cannot cross a thin collider or come out
on its far side.  The NumPy peer leaves that test out, because at these speeds it never
changes the result.  A node that moves less than half the thickness in one step (the report
shows the largest such displacement: about a fifth of the thickness) stays more than half
the thickness away from the solid, where msprings' distance is the exact distance to the
convex table or the ground, whose normal turns by at most (path length) / (distance) < 1 radian
along the path: under 60 degrees, so the node that ends in the zone is pushed out along its
nearest surface's normal exactly as the plain rule does.  What is left is a node whose path
dips into the zone around the rim and leaves it again within one step (the plane and the
flat faces cannot do that): msprings would then apply the velocity response at the entry
point.  The agreement check would show such a case.

Check, before timing: from the settled state, 100 steps of NumPy with contact against
msprings with colliders, and of NumPy without contact against msprings with colliders
removed; the largest node distance must be within 1e-9 m.  The two sum each node's spring
forces in a different order (msprings by lower node, NumPy by ``bincount``), so they differ
by rounding, far below the tolerance.  A contact decision that jumps, taken differently
(held by friction or sliding, in contact or not), would move a node by micrometres or more
(a step's creep, h mu |v.n|, is about 1e-5 m for a node resting under gravity), far above
it.  Such a branch could in principle flip on a rounding difference, but only for a value
within rounding of its threshold.  For scale, the report shows how far contact moves the nodes in those 100 steps
(msprings with colliders against colliders removed: about a metre).

Memory: on glibc the script fixes malloc's mmap and trim thresholds (``mallopt``) before
anything else.  NumPy takes every temporary from malloc, and with glibc's self-adjusting
defaults one of the two NumPy steps had its heap trimmed and regrown every step (about 180
page faults per step at N = 40) while the other did not, which made the NumPy step without
contact slower than the one with it.  msprings allocates nothing while stepping.

Usage, from the repository root::

    python benchmarks/bench_contact.py            # full run (about 20 s)
    python benchmarks/bench_contact.py --quick    # short timed runs, 2 repeats; numbers are rough

Prints a Markdown report; the exit status is 0, or 1 if an implementation disagrees with
msprings or the settled cloth has too few nodes in contact.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from .common import (cpu_model, format_rate, format_seconds, import_msprings, keep_freed_memory, load_average,
                         parse_quick_repeats, round_steps)
except ImportError:  # as a script: python benchmarks/bench_contact.py
    from common import (cpu_model, format_rate, format_seconds, import_msprings, keep_freed_memory, load_average,
                        parse_quick_repeats, round_steps)

SIZES = (40, 80)
#: Time step (s): the one ``python -m msprings run tablecloth`` uses.
TIME_STEP = 2e-3
#: Untimed steps before anything is measured: 5 s simulated.
SETTLE_STEPS = 2500
#: Steps of the agreement check.
CHECK_STEPS = 100
#: Largest node distance (m) allowed between an implementation and msprings after the check.
TOLERANCE = 1e-9
#: A node within thickness + this (m) of a collider's surface counts as in contact.
CONTACT_TOLERANCE = 1e-6
#: Fewest nodes in contact in the settled state, as a fraction of all nodes.
MIN_CONTACT_FRACTION = 0.2
#: The name of the row of msprings with colliders on every online core.
ALL_CORES = "msprings, colliders, all cores"

#: Springs shorter than sqrt of this (m^2) exert no force (msprings' own cut-off).
MIN_LENGTH_SQUARED = 1e-24


def _single_threaded(system: Any) -> Any:
    """Asks for one thread when the build has a thread setting; returns the system."""
    if hasattr(type(system), "threads"):
        system.threads = 1
    return system


def _all_cores(system: Any) -> Any:
    """Asks for all online cores when the build has a thread setting; returns the system."""
    if hasattr(type(system), "threads"):
        system.threads = 0
    return system


def without_colliders(system: Any) -> Any:
    """A copy of the system with every collider removed, on one thread."""
    copy = _single_threaded(system.copy())
    for collider in copy.colliders:
        copy.remove_collider(collider)
    return copy


# ---------------------------------------------------------------------------------------------
# the NumPy peer


@dataclass
class PeerState:
    """Positions (m) and velocities (m/s) of the NumPy peer, (nnode, 3) each."""

    x: np.ndarray
    v: np.ndarray


class PlaneContact:
    """A static plane collider: solid on the side opposite its unit normal."""

    def __init__(self, point: np.ndarray, normal: np.ndarray, restitution: float, friction: float,
                 thickness: float) -> None:
        self.point = np.asarray(point, dtype=float)
        self.normal = np.asarray(normal, dtype=float)
        self.restitution = float(restitution)
        self.friction = float(friction)
        self.thickness = float(thickness)

    def distance(self, p: np.ndarray) -> np.ndarray:
        """(nnode,) signed distance (m) of the points p (nnode, 3) from the plane."""
        return (p - self.point) @ self.normal

    def contacts(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Indices of the points closer than ``thickness`` to the surface, their gaps
        (distance - thickness, < 0, m) and the surface normals there, (count, 3)."""
        gap = self.distance(p) - self.thickness
        inside = np.flatnonzero(gap < 0.0)
        return inside, gap[inside], np.broadcast_to(self.normal, (inside.size, 3))


class CylinderContact:
    """A static solid capped cylinder: radius R and half height H / 2 (m) about a unit axis."""

    def __init__(self, center: np.ndarray, axis: np.ndarray, radius: float, half_height: float,
                 restitution: float, friction: float, thickness: float) -> None:
        self.center = np.asarray(center, dtype=float)
        self.axis = np.asarray(axis, dtype=float)
        self.radius = float(radius)
        self.half_height = float(half_height)
        self.restitution = float(restitution)
        self.friction = float(friction)
        self.thickness = float(thickness)
        # msprings' radial direction for a point on the axis: a fixed perpendicular
        helper = np.array([1.0, 0.0, 0.0]) if abs(self.axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        perpendicular = helper - (helper @ self.axis) * self.axis
        self.perpendicular = perpendicular / np.linalg.norm(perpendicular)

    def _parts(self, p: np.ndarray) -> tuple[np.ndarray, ...]:
        """Signed distance (m) of every point and the pieces its normal is made of: the
        offset along the axis, the radial vector and its length."""
        r = p - self.center
        along = r @ self.axis
        radial = r - along[:, None] * self.axis
        rho = np.sqrt(np.einsum("ij,ij->i", radial, radial))
        dr = rho - self.radius  # > 0: outside the side
        dh = np.abs(along) - self.half_height  # > 0: beyond a cap
        distance = np.maximum(dr, dh)  # inside, the nearest surface; outside one of them, its distance
        rim = (dr > 0.0) & (dh > 0.0)  # outside both: distance to the rim circle
        distance[rim] = np.sqrt(dr[rim] * dr[rim] + dh[rim] * dh[rim])
        return distance, along, radial, rho, dr, dh

    def distance(self, p: np.ndarray) -> np.ndarray:
        """(nnode,) signed distance (m) of the points p (nnode, 3) from the cylinder's surface."""
        return self._parts(p)[0]

    def contacts(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As :meth:`PlaneContact.contacts`; normals only for the points in contact."""
        distance, along, radial, rho, dr, dh = self._parts(p)
        gap = distance - self.thickness
        inside = np.flatnonzero(gap < 0.0)
        along, radial, rho, dr, dh = along[inside], radial[inside], rho[inside], dr[inside], dh[inside]
        on_axis = rho == 0.0
        if on_axis.any():
            radial[on_axis] = self.perpendicular
            rho[on_axis] = 1.0
        radial /= rho[:, None]
        side = np.where(along < 0.0, -1.0, 1.0)
        normal = side[:, None] * self.axis  # through a cap
        through_side = dr > dh
        normal[through_side] = radial[through_side]
        rim = (dr > 0.0) & (dh > 0.0)
        normal[rim] = ((dr[rim, None] * radial[rim] + (dh[rim] * side[rim])[:, None] * self.axis)
                       / distance[inside][rim, None])
        return inside, gap[inside], normal


Contact = PlaneContact | CylinderContact


def peer_colliders(system: Any) -> list[Contact]:
    """The system's colliders, in the order they act, as the peer's contact objects."""
    peers: list[Contact] = []
    for collider in system.colliders:
        if np.any(collider.velocity != 0.0):
            raise ValueError("the NumPy peer handles static colliders only")
        surface = dict(restitution=collider.restitution, friction=collider.friction, thickness=collider.thickness)
        if collider.kind == "plane":
            peers.append(PlaneContact(collider.center, collider.normal, **surface))
        elif collider.kind == "cylinder":
            peers.append(CylinderContact(collider.center, collider.axis, collider.radius, 0.5 * collider.height,
                                         **surface))
        else:
            raise ValueError(f"the NumPy peer has no {collider.kind} collider")
    return peers


def respond(contact: Contact, inside: np.ndarray, gap: np.ndarray, normal: np.ndarray, x_old: np.ndarray,
            x: np.ndarray, v: np.ndarray) -> None:
    """msprings' contact rule for the nodes ``inside`` of one collider, in place on x and v:
    out along the normal to distance ``thickness``, then restitution and Coulomb friction on
    approaching nodes, and no tangential creep for the nodes friction holds."""
    moved = x[inside] - gap[:, None] * normal
    velocity = v[inside]
    vn = np.einsum("ij,ij->i", velocity, normal)
    approaching = np.flatnonzero(vn < 0.0)
    if approaching.size:
        n_hit = normal[approaching]
        vn_hit = vn[approaching]
        change = -(1.0 + contact.restitution) * vn_hit  # normal velocity change, > 0 (m/s)
        tangent = velocity[approaching] - vn_hit[:, None] * n_hit
        speed = np.sqrt(np.einsum("ij,ij->i", tangent, tangent))
        limit = contact.friction * change
        slides = (speed > 0.0) & (speed > limit)
        keep = np.zeros_like(speed)
        keep[slides] = 1.0 - limit[slides] / speed[slides]
        v[inside[approaching]] = (vn_hit + change)[:, None] * n_hit + keep[:, None] * tangent
        if contact.friction > 0.0:
            held = approaching[keep == 0.0]
            if held.size:
                n_held = normal[held]
                slip = moved[held] - x_old[inside[held]]
                along = np.einsum("ij,ij->i", slip, n_held)
                moved[held] -= slip - along[:, None] * n_held
    x[inside] = moved


@dataclass
class PeerLog:
    """What the peer's contact pass did, step by step (filled only when asked for)."""

    moved: list[list[int]] = field(default_factory=list)  # nodes moved per collider, per step
    largest_step: float = 0.0  # largest node displacement from the start of a step to a contact pass (m)


def numpy_stepper(system: Any, contact: bool, log: PeerLog | None = None) -> Callable[[PeerState, int], None]:
    """A vectorised NumPy symplectic Euler step of the system (springs, gravity and, with
    ``contact``, its colliders), as a function of (state, n)."""
    nnode = system.n_nodes
    springs = np.asarray(system.springs)
    first = springs[:, 0].astype(np.intp)
    second = springs[:, 1].astype(np.intp)
    axes = np.arange(3)
    # flat force-component index of each (spring end, axis): +f on the first ends, -f on the second
    scatter = np.concatenate((3 * first[:, None] + axes, 3 * second[:, None] + axes)).ravel()
    mass = np.asarray(system.mass, dtype=float)
    free = ~np.asarray(system.pinned, dtype=bool)
    weight = mass[:, None] * np.asarray(system.gravity, dtype=float)
    h = TIME_STEP
    step_mass = (h * np.where(free, 1.0 / np.where(free, mass, 1.0), 0.0))[:, None]  # h / m, 0 when pinned
    rest = np.asarray(system.rest, dtype=float).copy()
    k = np.asarray(system.k, dtype=float).copy()
    c = np.asarray(system.c, dtype=float).copy()
    colliders = peer_colliders(system) if contact else []
    all_free = bool(free.all())

    def step(state: PeerState) -> None:
        x, v = state.x, state.v
        d = x.take(second, axis=0) - x.take(first, axis=0)
        length2 = np.einsum("ij,ij->i", d, d)
        length = np.sqrt(length2)
        inv_length = np.divide(1.0, length, out=np.zeros_like(length), where=length2 > MIN_LENGTH_SQUARED)
        closing = np.einsum("ij,ij->i", v.take(second, axis=0) - v.take(first, axis=0), d) * inv_length
        magnitude = (k * (length - rest) + c * closing) * inv_length
        pull = d * magnitude[:, None]
        force = np.bincount(scatter, weights=np.concatenate((pull, -pull)).ravel(), minlength=3 * nnode)
        v += step_mass * (weight + force.reshape(nnode, 3))
        if not colliders:
            x += h * v
            return
        x_new = x + h * v
        moved = []
        for collider in colliders:
            if log is not None:  # the path msprings' swept test would follow for this collider
                shift = x_new - x
                log.largest_step = max(log.largest_step, float(np.sqrt(np.einsum("ij,ij->i", shift, shift).max())))
            inside, gap, normal = collider.contacts(x_new)
            if not all_free:
                keep = free[inside]
                inside, gap, normal = inside[keep], gap[keep], normal[keep]
            if inside.size:
                respond(collider, inside, gap, normal, x, x_new, v)
            moved.append(int(inside.size))
        if log is not None:
            log.moved.append(moved)
        state.x = x_new

    def run(state: PeerState, n: int) -> None:
        for _ in range(n):
            step(state)

    return run


def peer_state(system: Any) -> PeerState:
    """The peer's copy of a system's state."""
    return PeerState(np.array(system.x, dtype=float), np.array(system.v, dtype=float))


# ---------------------------------------------------------------------------------------------
# contact counts


@dataclass
class ContactCount:
    """Nodes within thickness + CONTACT_TOLERANCE of each collider's surface."""

    table_top: float
    table_side: float  # side and rim
    ground: float
    total: float  # nodes touching either collider


def count_contacts(system: Any, contacts: list[Contact]) -> ContactCount:
    """Nodes of the system in contact with the table (top; side and rim) and the ground."""
    x = np.asarray(system.x)
    touching = []
    top = side = 0
    for contact in contacts:
        if isinstance(contact, CylinderContact):
            distance, along, _, _, dr, _ = contact._parts(x)
            close = distance <= contact.thickness + CONTACT_TOLERANCE
            over_top = close & (dr <= 0.0) & (along > 0.0)  # above the top disc
            top += int(np.count_nonzero(over_top))
            side += int(np.count_nonzero(close & ~over_top))
        else:
            close = contact.distance(x) <= contact.thickness + CONTACT_TOLERANCE
        touching.append(close)
    ground = sum(int(np.count_nonzero(close)) for close, contact in zip(touching, contacts)
                 if isinstance(contact, PlaneContact))
    return ContactCount(top, side, ground, int(np.count_nonzero(np.logical_or.reduce(touching))))


def contacts_per_step(base: Any, contacts: list[Contact], steps: int) -> list[ContactCount]:
    """:func:`count_contacts` after every step of a run like a timed one (one untimed step,
    then ``steps``), stepped one step at a time on a copy of the settled state."""
    system = _single_threaded(base.copy())
    system.step(TIME_STEP)
    counts = []
    for _ in range(steps):
        system.step(TIME_STEP)
        counts.append(count_contacts(system, contacts))
    return counts


def mean_count(counts: Sequence[ContactCount]) -> ContactCount:
    """The mean of several counts, field by field."""
    return ContactCount(*(statistics.fmean(getattr(count, name) for count in counts)
                          for name in ("table_top", "table_side", "ground", "total")))


# ---------------------------------------------------------------------------------------------
# agreement


@dataclass
class Agreement:
    """One implementation against a msprings run of CHECK_STEPS steps."""

    scene: str
    name: str
    reference: str
    distance: float  # largest node distance (m)
    speed: float  # largest velocity difference (m/s)
    moved: tuple[float, ...] | None = None  # nodes the peer's contact pass moved per step, per collider
    largest_step: float | None = None  # largest node displacement from a step's start to a contact pass (m)
    checked: bool = True  # False: shown for scale only

    @property
    def passed(self) -> bool:
        """Whether the run agrees within TOLERANCE (always True for rows shown for scale)."""
        return not self.checked or self.distance <= TOLERANCE


def _difference(a_x: np.ndarray, a_v: np.ndarray, b_x: np.ndarray, b_v: np.ndarray) -> tuple[float, float]:
    """Largest node distance (m) and velocity difference (m/s) between two states."""
    return (float(np.linalg.norm(np.asarray(a_x) - np.asarray(b_x), axis=1).max()),
            float(np.linalg.norm(np.asarray(a_v) - np.asarray(b_v), axis=1).max()))


def check(scene: str, base: Any) -> list[Agreement]:
    """CHECK_STEPS steps of every implementation from the settled state, against msprings."""
    with_colliders = _single_threaded(base.copy())
    with_colliders.step(TIME_STEP, CHECK_STEPS)
    removed = without_colliders(base)
    removed.step(TIME_STEP, CHECK_STEPS)
    rows = []
    log = PeerLog()
    state = peer_state(base)
    numpy_stepper(base, True, log)(state, CHECK_STEPS)
    moved = tuple(float(value) for value in np.mean(log.moved, axis=0))
    rows.append(Agreement(scene, "NumPy, contact", "msprings, colliders",
                          *_difference(state.x, state.v, with_colliders.x, with_colliders.v), moved,
                          log.largest_step))
    state = peer_state(base)
    numpy_stepper(base, False)(state, CHECK_STEPS)
    rows.append(Agreement(scene, "NumPy, no contact", "msprings, colliders removed",
                          *_difference(state.x, state.v, removed.x, removed.v)))
    rows.append(Agreement(scene, "msprings, colliders removed", "msprings, colliders",
                          *_difference(removed.x, removed.v, with_colliders.x, with_colliders.v), checked=False))
    return rows


# ---------------------------------------------------------------------------------------------
# timing


@dataclass
class Contender:
    """One row to time: a fresh copy of the settled state, and n steps on it."""

    name: str
    fresh: Callable[[], Any]
    run: Callable[[Any, int], None]
    steps: int = 0
    samples: list[float] = field(default_factory=list)  # seconds per step, one per timed run

    @property
    def per_step(self) -> float:
        """Median time per step (s)."""
        return statistics.median(self.samples)


def calibrate(contender: Contender, seconds: float) -> int:
    """Steps per timed run so that a run of the contender takes about ``seconds``."""
    state = contender.fresh()
    steps = 4
    while True:
        start = time.perf_counter()
        contender.run(state, steps)
        elapsed = time.perf_counter() - start
        if elapsed >= 0.05 or steps >= 100_000:
            return round_steps(steps * seconds / max(elapsed, 1e-9))
        steps *= 4


def contenders(base: Any) -> list[Contender]:
    """The five rows of a scene, in the order they take turns: the four on one thread, then
    msprings with colliders on all cores."""
    with_contact = numpy_stepper(base, True)
    no_contact = numpy_stepper(base, False)
    return [
        Contender("msprings, colliders", lambda: _single_threaded(base.copy()),
                  lambda system, n: system.step(TIME_STEP, n)),
        Contender("msprings, colliders removed", lambda: without_colliders(base),
                  lambda system, n: system.step(TIME_STEP, n)),
        Contender("NumPy, contact", lambda: peer_state(base), with_contact),
        Contender("NumPy, no contact", lambda: peer_state(base), no_contact),
        Contender(ALL_CORES, lambda: _all_cores(base.copy()), lambda system, n: system.step(TIME_STEP, n)),
    ]


def measure(rows: list[Contender], seconds: float, repeats: int) -> None:
    """Median time per step of every row: the msprings rows run the same number of steps,
    the NumPy rows theirs; each run on a fresh copy of the settled state after one untimed
    step, the rows taking turns."""
    rows[0].steps = rows[1].steps = rows[4].steps = calibrate(rows[0], seconds)
    rows[2].steps = rows[3].steps = calibrate(rows[2], seconds)
    for _ in range(repeats):
        for row in rows:
            state = row.fresh()
            row.run(state, 1)
            start = time.perf_counter()
            row.run(state, row.steps)
            row.samples.append((time.perf_counter() - start) / row.steps)


# ---------------------------------------------------------------------------------------------
# report


@dataclass
class Scene:
    """Everything measured on one tablecloth-N."""

    n: int
    nodes: int
    springs: int
    thickness: float
    settled: ContactCount
    during: ContactCount  # mean per step over the steps of a msprings timed run
    during_numpy: ContactCount  # the same over the (fewer) steps of a NumPy timed run
    agreement: list[Agreement]
    rows: list[Contender]

    @property
    def name(self) -> str:
        """The scene's name."""
        return f"tablecloth-{self.n}"

    def row(self, name: str) -> Contender:
        """The timed row of that name."""
        return next(row for row in self.rows if row.name == name)


def _nanoseconds(value: float) -> str:
    """A duration (s) in ns with one decimal."""
    return f"{value * 1e9:,.1f} ns"


def report(scenes: list[Scene], repeats: int, quick: bool, msprings: ModuleType, load_start: str,
           allocator: str, wall: float) -> list[str]:
    """The Markdown report."""
    out = ["# Contact cost per step: tablecloth" + (" (--quick: smoke run, not a measurement)" if quick else ""), ""]
    out += [
        f"- CPU: {cpu_model()} ({os.cpu_count()} logical CPUs; every row runs on one thread)",
        f"- OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"- Python {platform.python_version()}, NumPy {np.__version__}, msprings "
        f"{getattr(msprings, '__version__', 'unknown')} ({Path(msprings.__file__).parent})",
        f"- Date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}; "
        f"load average at the start: {load_start}, at the end: {load_average()}; the run took {wall:.0f} s",
        "- Scene: `msprings.scenes.tablecloth(n)`: n x n nodes of 3 kg on a 25 m square, structural, shear and "
        "bend springs with k = 3000 N/m, c = 8 N s/m, dropped from 1 m above a round table (capped cylinder, "
        "radius 8.75 m, top at 10 m) on a ground plane; restitution 0, friction 0.3, contact thickness = "
        f"spacing / 10; gravity on; symplectic Euler, h = {TIME_STEP:g} s (the step of "
        "`python -m msprings run tablecloth`)",
        f"- Settled by {SETTLE_STEPS} untimed steps ({SETTLE_STEPS * TIME_STEP:g} s simulated); in contact: "
        f"within thickness + {CONTACT_TOLERANCE:g} m of the table or the ground",
        f"- Threads: `s.threads = 1` on every msprings row but the last, `{ALL_CORES}` (`s.threads = 0`: "
        f"{os.cpu_count()} threads here, each applying the contacts of its own nodes). With colliders msprings "
        "steps through the double buffer; without them it steps in place",
        f"- Timing: median of {repeats} runs per row, each on a fresh copy of the settled state (`s.copy()`, "
        "or copies of its x and v for NumPy) after one untimed step, the rows taking turns; the msprings rows "
        "run the same number of steps, the NumPy rows theirs",
        f"- Memory: {allocator}, so that NumPy's temporaries do not cost page faults in some steps and not in "
        "others",
        "",
        "## Settled state",
        "",
        "| scene | nodes | springs | thickness (m) | in contact: table top | table side and rim | ground "
        "| total | share of nodes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scene in scenes:
        s = scene.settled
        out.append(f"| {scene.name} | {scene.nodes:,} | {scene.springs:,} | {scene.thickness:.4g} "
                   f"| {s.table_top:,} | {s.table_side:,} | {s.ground:,} | {s.total:,} "
                   f"| {s.total / scene.nodes:.0%} |")
    out += [
        "",
        f"## Agreement after {CHECK_STEPS} steps from the settled state (tolerance {TOLERANCE:g} m)",
        "",
        "| scene | implementation | compared with | max node distance (m) | max velocity difference (m/s) "
        "| nodes moved by the contact pass per step (table, ground) | largest node displacement in one step "
        "| check |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for scene in scenes:
        for row in scene.agreement:
            moved = ", ".join(f"{value:,.1f}" for value in row.moved) if row.moved else "-"
            largest = (f"{row.largest_step * 1e3:.2f} mm ({row.largest_step / scene.thickness:.2f} x thickness)"
                       if row.largest_step is not None else "-")
            verdict = ("pass" if row.passed else "**FAIL**") if row.checked else "for scale: what contact changes"
            out.append(f"| {scene.name} | {row.name} | {row.reference} | {row.distance:.1e} | {row.speed:.1e} "
                       f"| {moved} | {largest} | {verdict} |")
    out += [
        "",
        "## Speed",
        "",
        "'x NumPy' is the row's rate divided by that of the NumPy row with the same contact setting (above 1: "
        "faster than NumPy).",
        "",
        "| scene | nodes | springs | nodes in contact per step | implementation | steps/run | steps/s "
        "| spring evals/s (M) | time per step | x NumPy |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    peer_of = {"msprings, colliders": "NumPy, contact", "msprings, colliders removed": "NumPy, no contact",
               "NumPy, contact": "NumPy, contact", "NumPy, no contact": "NumPy, no contact",
               ALL_CORES: "NumPy, contact"}
    for scene in scenes:
        for row in scene.rows:
            ratio = scene.row(peer_of[row.name]).per_step / row.per_step
            during = scene.during_numpy if row.name.startswith("NumPy") else scene.during
            out.append(f"| {scene.name} | {scene.nodes:,} | {scene.springs:,} | {during.total:,.0f} "
                       f"| {row.name} | {row.steps:,} | {format_rate(1.0 / row.per_step)} "
                       f"| {scene.springs / row.per_step / 1e6:.1f} | {format_seconds(row.per_step)} "
                       f"| {ratio:.2f} |")
    out += [
        "",
        "## Contact cost",
        "",
        "Cost per step = time per step with contact minus without. Nodes in contact: mean per step over the "
        "steps of a timed run (after each step, the nodes within thickness + "
        f"{CONTACT_TOLERANCE:g} m of a collider), for msprings over its runs' steps, for NumPy over its "
        "shorter runs' (the first steps of the same span). Every step tests every free node against both "
        "colliders, so part of the cost grows with the nodes, not with the contacts.",
        "",
        "| scene | nodes | msprings: nodes in contact per step (table, ground) | cost per step | per node "
        "| per node in contact | share of its step | NumPy: nodes in contact per step | cost per step "
        "| per node in contact | share of its step | x NumPy (contact cost) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scene in scenes:
        ms = scene.row("msprings, colliders").per_step - scene.row("msprings, colliders removed").per_step
        np_cost = scene.row("NumPy, contact").per_step - scene.row("NumPy, no contact").per_step
        during, during_numpy = scene.during, scene.during_numpy
        table = during.table_top + during.table_side
        per_contact = ms / during.total if during.total else float("nan")
        np_per_contact = np_cost / during_numpy.total if during_numpy.total else float("nan")
        ratio = f"{np_cost / ms:.2f}" if ms > 0 else "not measurable"
        out.append(f"| {scene.name} | {scene.nodes:,} | {during.total:,.0f} ({table:,.0f}, {during.ground:,.0f}) "
                   f"| {format_seconds(ms)} | {_nanoseconds(ms / scene.nodes)} | {_nanoseconds(per_contact)} "
                   f"| {ms / scene.row('msprings, colliders').per_step:.0%} | {during_numpy.total:,.0f} "
                   f"| {format_seconds(np_cost)} | {_nanoseconds(np_per_contact)} "
                   f"| {np_cost / scene.row('NumPy, contact').per_step:.0%} | {ratio} |")
    out.append("")
    out.append("'x NumPy (contact cost)' is NumPy's contact cost per step divided by msprings' (above 1: "
               "msprings handles contact faster). 'share of its step': the contact cost as a fraction of the "
               "time per step with contact.")
    failures = [row for scene in scenes for row in scene.agreement if not row.passed]
    sparse = [scene for scene in scenes if scene.settled.total < MIN_CONTACT_FRACTION * scene.nodes]
    out.append("")
    for row in failures:
        out.append(f"- {row.scene}: {row.name} DISAGREES with {row.reference} by {row.distance:.1e} m")
    for scene in sparse:
        out.append(f"- {scene.name}: only {scene.settled.total} nodes in contact after settling "
                   f"(< {MIN_CONTACT_FRACTION:.0%}): the scene no longer measures contact")
    if not failures and not sparse:
        out.append(f"- Every implementation agrees with msprings within {TOLERANCE:g} m, and at least "
                   f"{MIN_CONTACT_FRACTION:.0%} of the nodes of each settled cloth are in contact.")
    for scene in scenes:
        largest = max(row.largest_step or 0.0 for row in scene.agreement)
        if largest < 0.5 * scene.thickness:
            out.append(f"- {scene.name}: no node moved half the thickness in one step during the check "
                       f"(largest: {largest / scene.thickness:.2f} x), so msprings' swept test, which the NumPy "
                       "peer leaves out, pushed every node that ended a step in contact out as the plain rule "
                       "does (see the script's docstring).")
        else:
            out.append(f"- {scene.name}: a node moved {largest / scene.thickness:.2f} x the thickness in one "
                       "step: msprings' swept test, which the NumPy peer leaves out, may have acted.")
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    return parse_quick_repeats("Contact cost per step on tablecloth-40 and tablecloth-80.", "short timed runs, 2 repeats (a smoke test)", argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark, prints the Markdown report and returns the exit status."""
    args = parse_args(argv)
    began = time.perf_counter()
    allocator = keep_freed_memory()
    msprings = import_msprings()
    scenes_module = importlib.import_module("msprings.scenes")
    load_start = load_average()
    seconds = 0.05 if args.quick else 0.5
    measured: list[Scene] = []
    for n in SIZES:
        base = _single_threaded(scenes_module.tablecloth(n))
        base.step(TIME_STEP, SETTLE_STEPS)
        contacts = peer_colliders(base)
        settled = count_contacts(base, contacts)
        agreement = check(f"tablecloth-{n}", base)
        rows = contenders(base)
        measure(rows, seconds, args.repeats)
        counts = contacts_per_step(base, contacts, max(rows[0].steps, rows[2].steps))
        measured.append(Scene(n, base.n_nodes, base.n_springs, contacts[0].thickness, settled,
                              mean_count(counts[:rows[0].steps]), mean_count(counts[:rows[2].steps]),
                              agreement, rows))
    print("\n".join(report(measured, args.repeats, args.quick, msprings, load_start, allocator,
                           time.perf_counter() - began)))
    passed = all(row.passed for scene in measured for row in scene.agreement)
    dense = all(scene.settled.total >= MIN_CONTACT_FRACTION * scene.nodes for scene in measured)
    return 0 if passed and dense else 1


if __name__ == "__main__":
    sys.exit(main())
