"""Charts of a run and of the integrators: :func:`plot_energy` (the energy ledger),
:func:`plot_stability` (the damped oscillator of :mod:`msprings.stability`) and
:func:`compare_integrators` (the integrators on a real system).

Part of :mod:`msprings.plot`, which re-exports its public names.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import stability
from .._core import DivergenceError
from .._system import Energy, StabilityWarning, System
from ..trajectory import ENERGY_FIELDS, Trajectory

__all__ = ["compare_integrators", "plot_energy", "plot_stability"]

_DIVERGED_COLOR = "tab:red"
# compare_integrators treats a value beyond this as overflowed (matplotlib's tick and scale
# arithmetic itself overflows near the largest float).
_BLOWN_UP = 1e200
# compare_integrators' shared scale: it holds runs within _RANGE_FACTOR times the typical
# magnitude and is at least _SMALLEST_SPAN of it tall.
_RANGE_FACTOR = 1e3
_SMALLEST_SPAN = 1e-3

_METHOD_COLORS = {
    "explicit_euler": "tab:red",
    "symplectic_euler": "tab:blue",
    "velocity_verlet": "tab:green",
    "rk4": "tab:purple",
    "implicit_euler": "tab:orange",
    "projective": "tab:olive",
    "xpbd": "tab:brown",
}
_METHOD_STYLES = {"velocity_verlet": (0, (5, 3))}  # dashed: it overlaps symplectic Euler when undamped
_ENERGY_COLORS = {
    "kinetic": "tab:red",
    "spring": "tab:green",
    "gravity": "tab:blue",
    "dissipated": "tab:orange",
    "work": "tab:cyan",
    "mechanical": "tab:purple",
    "total": "black",
}
_ENERGY_LABELS = {
    "mechanical": "mechanical (kinetic + spring + gravity)",
    "total": "total (mechanical + dissipated - work)",
}
# The mechanisms of the ledger that remove energy (the rest are sources of work).
_DISSIPATIVE = ("dampers", "drag", "contact", "energy_loss", "numerical")
_LEDGER_COLORS = {
    "dampers": "tab:orange",
    "drag": "tab:olive",
    "contact": "tab:brown",
    "energy_loss": "tab:pink",
    "numerical": "tab:green",
    "wind": "tab:cyan",
    "external": "tab:blue",
    "pins": "black",
    "colliders": "tab:gray",
    "constraints": "tab:purple",
    "user": "tab:red",
}


def _ledger_panel(trajectory: Trajectory, ax: Axes) -> None:
    """Where the energy went, mechanism by mechanism (J, cumulative): what each dissipative
    mechanism removed as stacked areas (each never negative), and the work each outside
    source did as lines (either sign).  What a large-step solver removed by itself
    (numerical) is stacked too, unless it went below zero somewhere (a solver short of
    convergence handing energy back): then it is a dotted line.  Mechanisms that stayed at
    zero are left out."""
    from ..trajectory import LEDGER_FIELDS

    times = trajectory.times
    ledger = np.asarray(trajectory.ledger)
    columns = {name: ledger[:, index] for index, name in enumerate(LEDGER_FIELDS)}
    used = {name: values for name, values in columns.items() if np.any(values != 0.0)}
    removed = [name for name in _DISSIPATIVE if name in used and np.all(used[name] >= 0.0)]
    labels = {name: f"removed by {name}" for name in removed}
    if "numerical" in labels:
        labels["numerical"] = "removed by the solver (numerical)"
    if removed:
        ax.stackplot(times, *[used[name] for name in removed], labels=list(labels.values()),
                     colors=[_LEDGER_COLORS[name] for name in removed], alpha=0.55)
    for name in used:
        if name == "numerical" and name not in removed:
            ax.plot(times, used[name], color=_LEDGER_COLORS[name], linewidth=1.6, linestyle=":", gid=name,
                    label="removed by the solver (numerical)")
        elif name not in _DISSIPATIVE:
            ax.plot(times, used[name], color=_LEDGER_COLORS[name], linewidth=1.6, label=f"work by {name}", gid=name)
    if not used:
        ax.text(0.5, 0.5, "nothing dissipated, no work done", transform=ax.transAxes, ha="center", va="center",
                color="0.4")
    ax.axhline(0.0, color="0.5", linewidth=0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cumulative energy (J)")
    ax.set_title("Ledger by mechanism", fontsize="medium")
    if used:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    ax.grid(True, alpha=0.3)


def plot_energy(trajectory: Trajectory, ax: Axes | Sequence[Axes] | None = None, *,
                breakdown: bool = False) -> Axes | tuple[Axes, Axes]:
    """The energy ledger of a run against time (s), in J: kinetic, spring, gravity,
    dissipated (removed by dampers, drag, contact, energy loss and, for implicit_euler,
    projective and xpbd, by the solver itself), work (done on the system from outside),
    mechanical (= kinetic + spring + gravity) and total (= mechanical + dissipated - work,
    dashed).  The total is constant up to an explicit integrator's error, and to rounding
    for the large-step solvers, which book what they remove as numerical.

    With ``breakdown=True`` a second panel below shows the ledger mechanism by mechanism
    (:data:`msprings.trajectory.LEDGER_FIELDS`): what each dissipative mechanism removed,
    stacked, and the work of each outside source; ``ax`` is then a pair of Axes (default a
    new figure) and the pair is returned.  Each line's ``gid`` is its field's name.

    Parameters
    ----------
    trajectory : Trajectory
        The run (:meth:`msprings.System.run`).
    ax : matplotlib.axes.Axes or pair of Axes, optional
        Where to draw (a pair with ``breakdown=True``); default a new figure.
    breakdown : bool, default False
        Add the panel of the ledger by mechanism.

    Returns
    -------
    matplotlib.axes.Axes or tuple of (Axes, Axes)
        The Axes, or the pair with ``breakdown=True``.

    Raises
    ------
    TypeError
        If ``trajectory`` is not a Trajectory, ``breakdown`` is not a bool, or ``ax`` is not
        an Axes (a pair of them with ``breakdown=True``).
    """
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"plot_energy() takes a Trajectory (System.run), not {type(trajectory).__name__}")
    if not isinstance(breakdown, bool):
        raise TypeError(f"breakdown must be True or False, not {breakdown!r}")
    below: Axes | None = None
    if breakdown:
        if ax is None:
            _, (ax, below) = plt.subplots(2, 1, figsize=(8.5, 7.5), sharex=True, layout="constrained",
                                          height_ratios=(3, 2))
        elif isinstance(ax, Sequence) and len(ax) == 2 and all(isinstance(a, Axes) for a in ax):
            ax, below = ax
        else:
            raise TypeError("with breakdown=True, ax must be a pair of Axes (energies, breakdown)")
    elif ax is None:
        _, ax = plt.subplots(figsize=(8.5, 4.5), layout="constrained")
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, not {type(ax).__name__}")
    for name in ENERGY_FIELDS:
        ax.plot(trajectory.times, getattr(trajectory, name), label=_ENERGY_LABELS.get(name, name), gid=name,
                color=_ENERGY_COLORS[name], linestyle="--" if name == "total" else "-",
                linewidth=2.0 if name == "total" else 1.4)
    if below is None:
        ax.set_xlabel("time (s)")
    ax.set_ylabel("energy (J)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    ax.grid(True, alpha=0.3)
    if below is None:
        return ax
    _ledger_panel(trajectory, below)
    return ax, below


# ---- stability -------------------------------------------------------------------------


def _integrator_list(integrators: Sequence[str] | str | None, known: Sequence[str]) -> list[str]:
    names = list(known) if integrators is None else [integrators] if isinstance(integrators, str) \
        else list(integrators)
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(f"integrators must be names from {tuple(known)}, got {names!r}")
    return names


def _color(name: str, index: int) -> str:
    return _METHOD_COLORS.get(name, f"C{index}")


def _describe_limit(limit: float) -> str:
    if limit == 0.0:
        return "unstable at every ω h"
    if math.isinf(limit):
        return "stable at every ω h"
    return f"stable for ω h ≤ {limit:.3g}"


def plot_stability(integrators: Sequence[str] | None = None, *, zeta: float = 0.0,
                   kind: Literal["radius", "region"] = "radius", ax: Axes | None = None,
                   omega_h_max: float | None = None) -> Axes:
    """The integrators' stability on the damped oscillator (:mod:`msprings.stability`).

    ``kind="radius"``: the spectral radius of one step against ``omega h`` (dimensionless;
    omega = sqrt(k/m) in rad/s, h the step in s) at damping ratio ``zeta``, on a log
    scale, with the line radius = 1 (above it every step amplifies the motion) and each
    method's stability limit marked by a vertical dotted line (2 for symplectic Euler and
    velocity Verlet, 2 sqrt 2 for RK4 when undamped; explicit Euler has none when undamped,
    implicit Euler none ever: see the legend).

    ``kind="region"``: the stable set (spectral radius <= 1) of each method in the
    (omega h, zeta) plane, shaded and outlined (:func:`msprings.stability.region_grid`);
    ``zeta`` > 0 is marked as a horizontal line.

    Parameters
    ----------
    integrators : sequence of str, optional
        Names from :data:`msprings.stability.INTEGRATORS`; default all of them.
    zeta : float, default 0.0
        Damping ratio (dimensionless), >= 0 and finite.
    kind : {"radius", "region"}, default "radius"
        Which plot.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default a new figure.
    omega_h_max : float, optional
        Right end of the ``omega h`` axis (dimensionless); default chosen to show every
        method's limit.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn in.

    Raises
    ------
    ValueError
        If an integrator name is unknown, ``zeta`` is negative or not finite, or ``kind``
        is not one of its choices.
    """
    names = _integrator_list(integrators, stability.INTEGRATORS)
    if not (isinstance(zeta, (int, float)) and zeta >= 0 and math.isfinite(zeta)):
        raise ValueError(f"zeta must be >= 0 and finite, got {zeta!r}")
    if kind not in ("radius", "region"):
        raise ValueError(f"kind must be 'radius' or 'region', not {kind!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 4.8), layout="constrained")
    limits = {name: float(stability.stability_limit(name, zeta)) for name in names}
    finite = [limit for limit in limits.values() if 0.0 < limit < math.inf]
    top = float(omega_h_max) if omega_h_max is not None else max([4.0] + [1.25 * limit for limit in finite])
    if kind == "radius":
        steps = np.linspace(0.0, top, 1201)
        lowest, highest = 1.0, 1.0
        for index, name in enumerate(names):
            radius = np.asarray(stability.spectral_radius(name, steps, zeta))
            lowest, highest = min(lowest, float(radius.min())), max(highest, float(radius.max()))
            color = _color(name, index)
            ax.plot(steps, radius, color=color, linestyle=_METHOD_STYLES.get(name, "-"),
                    label=f"{name} ({_describe_limit(limits[name])})")
            limit = limits[name]
            if 0.0 < limit < math.inf:
                marker = ax.axvline(limit, color=color, linestyle=":", linewidth=1.5, label="_limit")
                marker.set_gid(f"stability-limit:{name}")
        unit = ax.axhline(1.0, color="black", linewidth=1.0, linestyle="--", label="radius = 1")
        unit.set_gid("radius-one")
        ax.set_yscale("log")
        ax.set_ylim(max(lowest * 0.8, 1e-2), min(highest * 1.25, 1e3))
        ax.set_xlim(0.0, top)
        ax.set_xlabel("ω h (dimensionless; ω = √(k/m), h = time step)")
        ax.set_ylabel("spectral radius of one step")
        ax.set_title(f"Growth per step of the oscillator, ζ = {zeta:g}")
        ax.legend(loc="upper left", fontsize="small")
    else:
        zeta_max = max(2.0, 1.25 * zeta)
        handles = []
        # A conservative method's radius is 1 to round-off where it is stable: the boundary
        # is drawn at 1 + 1e-9 so that round-off does not draw spurious curves.
        level = 1.0 + 1e-9
        for index, name in enumerate(names):
            steps, zetas, radius = stability.region_grid(name, top, zeta_max, 301)
            color = _color(name, index)
            style = _METHOD_STYLES.get(name, "-")
            if radius.max() > level:
                ax.contourf(steps, zetas, radius, levels=[0.0, level], colors=[color], alpha=0.07)
                outline = ax.contour(steps, zetas, radius, levels=[level], colors=[color], linewidths=1.8,
                                     linestyles=[style])
                outline.set_gid(f"stability-boundary:{name}")
                label = name
            else:
                label = f"{name} (stable everywhere)"
            handles.append(Line2D([], [], color=color, linewidth=1.8, linestyle=style, label=label))
        if zeta > 0:
            handles.append(ax.axhline(zeta, color="black", linestyle=":", linewidth=1.0, label=f"ζ = {zeta:g}"))
        ax.set_xlim(0.0, top)
        ax.set_ylim(0.0, zeta_max)
        ax.set_xlabel("ω h (dimensionless; ω = √(k/m), h = time step)")
        ax.set_ylabel("damping ratio ζ (dimensionless)")
        ax.set_title("Stable steps: shaded side of each curve (spectral radius ≤ 1)")
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


@dataclass
class _Divergence:
    """Where a run stopped: the time (s) and number of the failing step, and why."""

    time: float
    step: int
    reason: str


def _energy_in_play(energy: Energy, gravity_start: float) -> float:
    """How much energy a state has in play (J): the largest of its kinetic and spring
    energies, the change of its gravitational energy since the start (whose zero is wherever
    y = 0 happens to be), the energy dissipated and the magnitude of the work done on it."""
    return max(energy.kinetic, energy.spring, abs(energy.gravity - gravity_start), energy.dissipated,
               abs(energy.work))


def _run_series(system: System, dt: float, steps: int, quantity: str, node: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Divergence | None]:
    """Times (s) and finite values of ``quantity`` over a run (at most about 1500 records),
    the energy in play at each record (J, see :func:`_energy_in_play`), and where it
    diverged: a :class:`~msprings.DivergenceError`, or the quantity itself overflowing
    (beyond 1e200: an energy of a blowing-up state reaches inf before the state does)."""
    gravity_start = system.energy().gravity

    def value() -> tuple[float, float]:
        energy = system.energy()
        in_play = _energy_in_play(energy, gravity_start)
        if quantity == "position":
            return float(system.x[node, 1]), in_play
        return float(getattr(energy, quantity)), in_play

    every = max(1, steps // 1500)
    first = value()
    times, values, energies = [system.t], [first[0]], [first[1]]
    done = 0
    while done < steps:
        chunk = min(every, steps - done)
        try:
            system.step(dt, chunk)
        except DivergenceError as error:
            last, in_play = value()
            if system.t > times[-1] and abs(last) <= _BLOWN_UP:
                times.append(system.t)
                values.append(last)
                energies.append(in_play)
            return (np.array(times), np.array(values), np.array(energies),
                    _Divergence(error.time, error.step, "non-finite state"))
        done += chunk
        current, in_play = value()
        if not abs(current) <= _BLOWN_UP:
            return (np.array(times), np.array(values), np.array(energies),
                    _Divergence(system.t, system.steps, f"{quantity} overflowed"))
        times.append(system.t)
        values.append(current)
        energies.append(in_play)
    return np.array(times), np.array(values), np.array(energies), None


@dataclass
class _Series:
    """One integrator's run for compare_integrators."""

    name: str
    times: np.ndarray
    values: np.ndarray
    energies: np.ndarray
    failure: _Divergence | None
    above_limit: bool


def _early(values: np.ndarray) -> np.ndarray:
    """The first twentieth of a run's records (at least two): before a blow-up has grown."""
    return values[: max(2, len(values) // 20)]


def _shared_range(series: Sequence[_Series], quantity: str) -> tuple[float, float, list[bool]]:
    """The vertical range (low, high) every panel shares, and which runs it holds whole.

    The range is measured against the scene's scale: for an energy, the energy in play
    (the largest kinetic, spring, dissipated energy, work or change of gravitational energy
    over the first twentieth of the run, of the run where that is smallest, so that a run
    blowing up from the start does not set it); for a position, the largest height over
    the same records.  A quantity that is conserved (the total energy starts at 0 when the
    scene starts at rest at y = 0) is then not drawn on a scale of its own round-off.

    A run is held whole when it did not diverge and its quantity moves less than
    _RANGE_FACTOR times that scale from its initial value: a blow-up cannot stretch the
    axes to 10^192.  The range is at least _SMALLEST_SPAN of the scale tall, so that a drift
    of round-off size (RK4's 1e-7 J) is drawn flat rather than stretched into a look of a
    blow-up."""
    if quantity == "position":
        measures = [np.abs(_early(s.values)).max() for s in series]
    else:
        measures = [_early(s.energies).max() for s in series]
    scale = float(min(measures))
    if not (scale > 0 and math.isfinite(scale)):
        scale = max(float(np.abs(_early(s.values)).max()) for s in series) or 1.0
    held = [s.failure is None and float(np.abs(s.values - s.values[0]).max()) <= _RANGE_FACTOR * scale
            for s in series]
    chosen = [s.values for s, whole in zip(series, held) if whole] or [_early(s.values) for s in series]
    low = min(float(v.min()) for v in chosen)
    high = max(float(v.max()) for v in chosen)
    middle, half = 0.5 * (low + high), 0.5 * max(high - low, _SMALLEST_SPAN * scale)
    return middle - 1.08 * half, middle + 1.08 * half, held


def _exit(times: np.ndarray, values: np.ndarray, low: float, high: float) -> int | None:
    """The first record outside [low, high], or None."""
    outside = np.flatnonzero((values < low) | (values > high))
    return int(outside[0]) if outside.size else None


def compare_integrators(system_factory: Callable[[], System], dt: float, steps: int,
                        integrators: Sequence[str] | None = None, *,
                        quantity: str = "total", node: int = -1) -> Figure:
    """Runs the same scene with each integrator and plots a quantity against time (s), one
    panel per integrator, side by side, on one shared vertical scale.

    ``system_factory()`` must return a fresh :class:`~msprings.System` each call; each is
    stepped ``steps`` times with ``dt`` (s).  ``quantity``: an energy of the ledger
    (:data:`msprings.trajectory.ENERGY_FIELDS`, J) or ``"position"``: the height y (m) of
    node ``node``.

    The shared scale is set against the energy in play early in the runs (J: the largest
    kinetic, spring, dissipated energy, work or change of gravitational energy, from the run
    where that is smallest; for a position, the largest height, m), so that a conserved
    total is not drawn on the scale of its round-off.  It holds every run that neither
    diverged nor moved further than 1000 times that from its initial value, and is at least
    0.1 % of it tall (a drift smaller than that is drawn flat; the legend gives each
    energy's drift, last minus first value, in J).
    A run that leaves the scale is drawn up to the edge, where a triangle marks the time it
    left.  A method that diverges (a non-finite state, :class:`~msprings.DivergenceError`,
    or the quantity overflowing beyond 1e200) is marked with a red cross and a dashed line
    at the time of the failing step, and its panel title says so; a step above the
    method's stability limit (:class:`~msprings.StabilityWarning`) is noted in the title
    instead of being warned.  A dotted line marks the initial value.  Each run's curve has
    the integrator's name as its ``gid``.

    Parameters
    ----------
    system_factory : callable
        ``system_factory()`` returns a fresh :class:`~msprings.System` each call.
    dt : float
        Time step (s).
    steps : int
        Number of steps of each run (>= 1).
    integrators : sequence of str, optional
        Names from :data:`msprings.stability.INTEGRATORS`; default all of them.
    quantity : str, default "total"
        A name of :data:`msprings.trajectory.ENERGY_FIELDS` (J) or ``"position"`` (m).
    node : int, default -1
        The node whose height ``"position"`` plots.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, one panel per integrator.

    Raises
    ------
    TypeError
        If ``system_factory()`` does not return a System.
    ValueError
        If an integrator name or ``quantity`` is unknown, ``steps`` is not an integer >= 1,
        ``node`` is out of range, or ``dt`` is bad (as for :meth:`msprings.System.step`).
    """
    names = _integrator_list(integrators, stability.INTEGRATORS)
    if quantity not in ENERGY_FIELDS and quantity != "position":
        raise ValueError(f"quantity must be one of {ENERGY_FIELDS + ('position',)}, not {quantity!r}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    series = []
    for name in names:
        system = system_factory()
        if not isinstance(system, System):
            raise TypeError(f"system_factory() must return a msprings.System, not {type(system).__name__}")
        if quantity == "position" and not -system.n_nodes <= node < system.n_nodes:
            raise ValueError(f"node {node} is outside 0..{system.n_nodes - 1}")
        system.integrator = name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StabilityWarning)
            times, values, energies, failure = _run_series(system, dt, steps, quantity, node)
        for entry in caught:
            if not issubclass(entry.category, StabilityWarning):
                warnings.warn_explicit(entry.message, entry.category, entry.filename, entry.lineno)
        above_limit = any(issubclass(entry.category, StabilityWarning) for entry in caught)
        series.append(_Series(name, times, values, energies, failure, above_limit))
    low, high, _ = _shared_range(series, quantity)

    columns = min(len(names), 3)
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.6 * rows), squeeze=False,
                                sharey=True, layout="constrained")
    unit = "y of node {} (m)".format(node) if quantity == "position" else f"{quantity} energy (J)"
    for index, run in enumerate(series):
        ax = axes.flat[index]
        times, values, failure = run.times, run.values, run.failure
        color = _color(run.name, index)
        ax.axhline(values[0], color="0.5", linestyle=":", linewidth=1.0, label="initial")
        leaves = _exit(times, values, low, high)
        label = run.name
        if quantity != "position" and leaves is None and failure is None:
            label += f" (drift {values[-1] - values[0]:+.3g} J)"
        if leaves is None:
            ax.plot(times, values, color=color, label=label, gid=run.name)
            end_time, end_value = times[-1], values[-1]
        else:
            # Up to the edge of the scale: the crossing, interpolated between two records.
            edge = high if values[leaves] > high else low
            before = max(leaves - 1, 0)
            share = 0.0 if leaves == before else (edge - values[before]) / (values[leaves] - values[before])
            end_time = times[before] + share * (times[leaves] - times[before])
            end_value = edge
            ax.plot(np.append(times[:leaves], end_time), np.append(values[:leaves], edge), color=color, label=label,
                    gid=run.name)
            ax.plot([end_time], [edge], linestyle="none", marker="^" if edge == high else "v", markersize=9,
                    color=color, label=f"left the scale at t = {end_time:.4g} s", clip_on=False)
        title = run.name
        if failure is not None:
            ax.plot([min(failure.time, dt * steps)], [end_value], linestyle="none", marker="X", markersize=10,
                    color=_DIVERGED_COLOR, label=f"diverged at t = {failure.time:.4g} s", clip_on=False)
            ax.axvline(failure.time, color=_DIVERGED_COLOR, linestyle="--", linewidth=1.0)
            title += f"\ndiverged at t = {failure.time:.4g} s (step {failure.step}: {failure.reason})"
        elif leaves is not None:
            title += f"\nleft the scale at t = {end_time:.4g} s"
        if failure is None and run.above_limit:
            title += "\ndt above its stability limit"
        ax.set_title(title, fontsize="medium", color=_DIVERGED_COLOR if failure is not None else "black")
        ax.set_xlabel("time (s)")
        if index % columns == 0:
            ax.set_ylabel(unit)
        ax.set_xlim(0.0, dt * steps)
        ax.set_ylim(low, high)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="x-small")
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    figure.suptitle(f"{unit} with dt = {dt:g} s, {steps} steps")
    return figure
