"""The lab bench of ``msprings.interact``: the instruments a student measures with.

Everything here is computed in Python from the system and sent to the view compactly:

- force and motion arrows on a sample of nodes (spring, damper, gravity, other forces and
  their sum; velocity and acceleration), one float32 block per frame;
- a ruler the student drags, a stopwatch that counts simulated time, and reference lines
  (the chosen node at rest length, at equilibrium, and the lowest it has been);
- a period and amplitude readout measured from the chosen node's motion, and a trace of
  its displacement over time;
- a mass slider for the chosen node and masses to swap onto it, one of them a "mystery"
  mass whose value is hidden until :meth:`Lab.reveal`;
- gravity presets (Earth, Moon, Jupiter, a mystery planet) beside the gravity slider;
- the last sane frame, kept so that a blow-up shows a picture the student recognises.

The view draws them in clearly separated functions of ``static/interact.js``.
"""
from __future__ import annotations

import html
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets
import numpy as np
import traitlets

from .._system import System

if TYPE_CHECKING:  # pragma: no cover
    from .widgets import LiveControls

__all__ = ["ARROWS", "GRAVITY_PRESETS", "LINES", "SHOW", "Lab", "LabViewTraits", "measure_oscillation"]

ARROWS = ("spring", "damper", "gravity", "other", "net", "velocity", "acceleration")
"""The arrows on nodes, in the order of their columns in :attr:`LabViewTraits.arrows`:
forces (N) of the springs, of the dampers, of gravity, of everything else (wind, drag,
contacts, external forces) and their sum, then velocity (m/s) and acceleration (m/s²)."""

LINES = ("rest", "equilibrium", "lowest")
"""Reference lines through the chosen node: where it sits with every spring at rest length
(the initial state), where it would rest under gravity, and the lowest it has been."""

SHOW = (*ARROWS, "ruler", "stopwatch", *LINES, "trace")
"""The names of the show/hide toggles (``live.show[name]``)."""

GRAVITY_PRESETS = {"Earth": 9.81, "Moon": 1.62, "Jupiter": 24.79}
"""Surface gravity (m/s²) of the gravity presets; "Planet X" is the mystery planet."""

MYSTERY = "mystery"
PLANET_X = "Planet X"
ARROW_SAMPLE = 24  # nodes with arrows on a mesh or cloth (all free nodes up to this many)
TRACE_SAMPLES = 400  # samples of the trace sent to the view
RECORD_LIMIT = 4000  # samples of the chosen node's motion kept for the readout
ECHO_SECONDS = 30.0  # how long a browser's late answer to a value set from Python is recognised
EQUILIBRIUM_NODES = 500  # the largest network whose equilibrium line is solved for (a 22 x 22 cloth)
SHRINK_FRAMES = 45  # frames (1.5 s at 30 fps) of short arrows before their unit is chosen smaller
EQUILIBRIUM_BUDGET = 0.2  # s of computing for the equilibrium line after a change of the settings
BLOW_UP_STRAIN = 100.0  # a spring 100 times longer than at rest: the picture is no longer the model
BLOW_UP_DRIFT = 3.0  # the energy balance off by three times the energies of sane frames: not physics any more

_LABELS = {"spring": "spring", "damper": "damper", "gravity": "gravity", "other": "other forces",
           "net": "net force", "velocity": "velocity", "acceleration": "acceleration",
           "ruler": "ruler", "stopwatch": "stopwatch", "rest": "rest length", "equilibrium": "equilibrium",
           "lowest": "lowest point", "trace": "trace"}


class LabViewTraits(traitlets.HasTraits):
    """The traits of :class:`~msprings.plot.widgets.SystemView` that the lab bench fills.

    ``arrows`` float32 (S, 7, 3): the :data:`ARROWS` vectors of the sampled nodes
    ``arrow_nodes`` int32 (S,); ``trace`` float32 (T, 2): time (s) and displacement (m) of
    the chosen node; ``lab``: what is shown, the arrow units, the lines, the stopwatch,
    the readout; ``ruler``: the world position (m) of the ruler's top end, which the view
    moves when the ruler is dragged.
    """

    arrows = traitlets.Bytes(b"").tag(sync=True)
    arrow_nodes = traitlets.Bytes(b"").tag(sync=True)
    trace = traitlets.Bytes(b"").tag(sync=True)
    lab = traitlets.Dict().tag(sync=True)
    ruler = traitlets.List(traitlets.Float(), default_value=[0.0, 0.0, 0.0], minlen=3, maxlen=3).tag(sync=True)


def _nice(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is >= ``value`` (> 0)."""
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 5.0, 10.0):
        if step * power >= value * (1 - 1e-9):
            return step * power
    return 10.0 * power  # pragma: no cover


def _grams(kilograms: float) -> str:
    return f"{kilograms * 1e3:.3g} g" if kilograms < 1.0 else f"{kilograms:.3g} kg"


def _checked_positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def node_forces(system: System, dt: float | None = None) -> dict[str, np.ndarray]:
    """The forces (N) on every node by cause, each shape (n, 3), with velocity and acceleration.

    ``spring``: k (l - L) along each spring; ``damper``: c (v_j - v_i).n along it; ``gravity``:
    m g; ``net``: the total force on the node (:meth:`System.update_forces`, which holds drag,
    wind and the external force, plus the push and friction of a collider on a node touching
    it); ``other``: net minus the three named ones; ``velocity`` (m/s); ``acceleration`` =
    net / m (m/s²), zero on pinned nodes.

    A collider's push is not a force of the model but a correction of the step, so for the
    nodes touching a collider it is measured: a copy of the system takes one step of ``dt``
    (s; default a hundredth of the critical step, at most 1 ms) and the contact force is
    m (v' - v) / dt - F, what the node's change of velocity asks for beyond the model's
    forces F.  The arrows of a node resting on a floor then add up to zero, those of a
    node sliding on it to the friction that slows it.
    """
    x, v = np.asarray(system.x), np.asarray(system.v)
    springs = np.asarray(system.springs)
    i, j = springs[:, 0], springs[:, 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        d = x[j] - x[i]
        length = np.linalg.norm(d, axis=1)
        unit = np.where(length[:, None] > 0, d / np.where(length > 0, length, 1.0)[:, None], 0.0)
        elastic = (np.asarray(system.k) * (length - np.asarray(system.rest)))[:, None] * unit
        rate = np.einsum("ij,ij->i", v[j] - v[i], unit)
        viscous = (np.asarray(system.c) * rate)[:, None] * unit
    n = system.n_nodes

    def gather(pull: np.ndarray) -> np.ndarray:
        total = np.zeros((n, 3))
        for axis in range(3):
            total[:, axis] = (np.bincount(i, pull[:, axis], minlength=n)
                              - np.bincount(j, pull[:, axis], minlength=n))
        return total

    spring, damper = gather(elastic), gather(viscous)
    mass = np.asarray(system.mass, dtype=float)
    free = ~np.asarray(system.pinned, dtype=bool)
    gravity = mass[:, None] * np.asarray(system.gravity, dtype=float)[None, :]
    net = np.array(system.update_forces(), dtype=float)
    net += _contact_forces(system, net, free, dt)
    for array in (spring, damper, gravity, net):
        array[~free] = 0.0
    acceleration = np.zeros((n, 3))
    acceleration[free] = net[free] / mass[free, None]
    return {"spring": spring, "damper": damper, "gravity": gravity, "other": net - spring - damper - gravity,
            "net": net, "velocity": np.where(free[:, None], v, 0.0), "acceleration": acceleration}


def _contact_forces(system: System, force: np.ndarray, free: np.ndarray, dt: float | None) -> np.ndarray:
    """The force (N), shape (n, 3), of the colliders on the free nodes touching one (within
    its thickness and a step's travel of its surface), measured over one step of a copy:
    m (v' - v) / dt - ``force``; zero elsewhere."""
    n = system.n_nodes
    contact = np.zeros((n, 3))
    if not system.colliders or not free.any():
        return contact
    x, v = np.asarray(system.x, dtype=float), np.asarray(system.v, dtype=float)
    if dt is None:
        with np.errstate(all="ignore"):
            critical = float(system.critical_dt())
        dt = min(1e-3, 0.01 * critical) if math.isfinite(critical) and critical > 0 else 1e-3
    reach = np.linalg.norm(v, axis=1) * dt + 1e-9
    touching = np.zeros(n, dtype=bool)
    with np.errstate(all="ignore"):
        for collider in system.colliders:
            touching |= collider.distance(x) <= float(collider.thickness) + reach + 1e-6
    touching &= free & np.isfinite(x).all(axis=1)
    if not touching.any():
        return contact
    probe = system.copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe.step(dt)
    except Exception:  # a probe step that diverges: no contact arrow rather than a wrong one
        return contact
    mass = np.asarray(system.mass, dtype=float)[touching, None]
    change = (np.asarray(probe.v, dtype=float)[touching] - v[touching]) / dt
    contact[touching] = mass * change - force[touching]
    return contact


def measure_oscillation(times: np.ndarray, positions: np.ndarray) -> tuple[float | None, float | None, np.ndarray]:
    """Period (s) and amplitude (m) of a node's oscillation, from its sampled positions.

    The displacement is taken along the direction in which the node moves most (the first
    principal axis of its positions), about the middle of its range.  Its swings are the
    moves between its turning points (each refined by a parabola through its three samples)
    that span more than 1 % of the largest; small wiggles are ignored.  Each upward swing
    crosses its own midline, the mean of the low before it and the high after it: for a
    damped oscillation, which shrinks by the same factor every cycle, these crossings come
    exactly one damped period 2 pi / omega_d apart, wherever the motion started.  The
    period is the mean time between the last crossings (up to four cycles; each crossing
    interpolated linearly between samples), the amplitude half the last full swing.  None
    before two crossings, and again once no crossing has come for two periods (the motion
    has died away).

    Returns
    -------
    period : float or None
    amplitude : float or None
    displacement : ndarray, shape (T,)
        The displacement (m) of every sample along that direction.
    """
    t = np.asarray(times, dtype=float)
    p = np.asarray(positions, dtype=float).reshape(len(t), 3)
    if len(t) < 3 or not np.all(np.isfinite(p)):
        return None, None, np.zeros(len(t))
    centred = p - p.mean(axis=0)
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)
    axis = axes[0]
    if singular[0] == 0.0:
        return None, None, np.zeros(len(t))
    # Point the axis the way most motion points along a fixed world axis, so the sign is stable.
    if axis[int(np.argmax(np.abs(axis)))] < 0:
        axis = -axis
    s = centred @ axis
    s = s - 0.5 * (s.max() + s.min())
    swings = _turning_points(t, s, 0.01 * float(np.ptp(s)))
    crossings: list[float] = []
    heights: list[float] = []
    for (i0, _, low), (i1, _, high) in zip(swings[:-1], swings[1:]):
        if high <= low:
            continue  # a downward swing
        level = 0.5 * (low + high)
        segment = s[i0:i1 + 1]
        up = np.flatnonzero((segment[:-1] < level) & (segment[1:] >= level))
        if up.size == 0:
            continue
        k = i0 + int(up[0])
        crossings.append(t[k] + (t[k + 1] - t[k]) * (level - s[k]) / (s[k + 1] - s[k]))
        heights.append(high - low)
    if len(crossings) < 2:
        return None, None, s
    last = np.asarray(crossings[-5:])
    period = float((last[-1] - last[0]) / (len(last) - 1))
    if t[-1] - last[-1] > 2.0 * period:
        return None, None, s
    return period, 0.5 * heights[-1], s


def _turning_points(t: np.ndarray, s: np.ndarray, least: float) -> list[tuple[int, float, float]]:
    """The turning points of ``s`` (index, time s, value m), alternately highs and lows,
    whose swings from one to the next are at least ``least`` (m); their values are the vertex
    of a parabola through the sample and its neighbours."""
    sign = np.sign(np.diff(s))
    nonzero = np.flatnonzero(sign)
    if nonzero.size < 2:
        return []
    before = sign[nonzero[:-1]]
    change = before != sign[nonzero[1:]]
    points: list[tuple[int, float, float]] = []
    kinds: list[bool] = []
    for k, high in zip(nonzero[1:][change], before[change] > 0):
        a, b, c = s[k - 1], s[k], s[k + 1]
        curve = a - 2.0 * b + c
        shift = 0.5 * (a - c) / curve if curve != 0.0 else 0.0
        value = float(b - 0.25 * (a - c) * shift) if abs(shift) <= 1.0 else float(b)
        point = (int(k), float(t[k]), value)
        if not points:
            points.append(point)
            kinds.append(bool(high))
        elif kinds[-1] == high:  # a small swing between was skipped: keep the farther turn
            if (value > points[-1][2]) == high:
                points[-1] = point
        elif abs(value - points[-1][2]) >= least:
            points.append(point)
            kinds.append(bool(high))
    return points


def equilibrium(system: System, *, tolerance: float = 1e-9, max_steps: int = 200,
                budget: float = 1.0) -> np.ndarray | None:
    """Where the nodes would rest under the system's forces (m), shape (n, 3), or None when
    they do not come to rest (a free body falls for ever), rest on a collider other than a
    plane (a long step would pass through it), have more than :data:`EQUILIBRIUM_NODES`
    nodes or do not settle within ``budget`` seconds of computing, so the controls never
    freeze.

    A copy of the system is stepped by implicit Euler with 10 s steps (each strongly damps
    every mode; each solved to ``newton_tol`` = 1e-9 at most) from the current positions at
    rest, until no node moves more than ``tolerance`` times the model's size in a step.
    """
    if not np.any(system.pinned) and not system.colliders and not np.any(system.external):
        return None
    if any(collider.kind != "plane" for collider in system.colliders):
        return None  # a long step would pass through a table or a ball: no line rather than a wrong one
    if system.n_nodes > EQUILIBRIUM_NODES:
        return None  # one implicit step of a large network alone can take seconds
    probe = system.copy()
    probe.v[:] = 0.0
    probe.integrator = "implicit_euler"
    probe.newton_tol = min(probe.newton_tol, 1e-9)  # a static solve: the forces balanced to 1e-9 of the load
    probe.energy_loss = 0.0
    scale = max(float(np.ptp(probe.x, axis=0).max()), 1e-3)
    dt = 10.0
    moved = math.inf
    deadline = time.perf_counter() + budget
    try:
        for _ in range(max_steps):
            if time.perf_counter() > deadline:
                return None
            probe.step(dt)
            moved = float(np.abs(probe.v).max()) * dt
            if moved < tolerance * scale:
                break
    except Exception:  # a solver that fails to converge: no line rather than a wrong one
        return None
    return np.array(probe.x) if moved < 1e-6 * scale else None


class Lab:
    """The lab bench attached to a :class:`~msprings.plot.widgets.LiveControls` as ``live.lab``.

    Its controls are also attributes of the controls themselves (``live.show``,
    ``live.node``, ``live.mass``, ``live.masses``, ``live.planet``, ``live.stopwatch_button``,
    ``live.stopwatch_reset``, ``live.readout``), so they can be set from Python like any
    ipywidget.
    """

    def __init__(self, live: LiveControls, *, node: int | None, mystery_mass: float | None,
                 mystery_gravity: float | None, show: Mapping[str, bool] | None) -> None:
        self.live = live
        system = live.system
        self.system = system
        free = np.flatnonzero(~np.asarray(system.pinned, dtype=bool))
        self._initial = np.array(system._initial_state()[0])
        if node is None:
            node = self._default_node(free)
        self._records: list[tuple[float, float, float, float]] = []
        self._lowest: float | None = None
        self._equilibrium: np.ndarray | None | bool = False  # False: not computed for these settings
        self._units: dict[str, float | None] = {"force": None, "velocity": None, "acceleration": None}
        self._small = {"force": 0, "velocity": 0, "acceleration": 0}  # frames with every arrow under 1/3 unit
        self._largest: dict[str, float] = {}  # the largest unit chosen for each kind of arrow
        self._sample = np.zeros(0, dtype=np.int64)
        self._sane: dict[str, Any] | None = None
        self._balance: tuple[float, float] | None = self._start_balance()
        self.blown_up = False
        self._watch_running = False
        self._watch_start = 0.0
        self._watch_total = 0.0
        self._quiet = False
        self._between: list[tuple[float, float, float, float]] = []  # records inside the last frame
        self._sent: list[tuple[float, float]] = []  # (monotonic s, kg) put on the mass slider from Python
        self._sent_gravity: list[tuple[float, float]] = []  # (monotonic s, m/s²) put on the gravity slider
        self._solved: dict[bytes, np.ndarray] = {}  # equilibria found, by the settings they hold for
        self._rest: np.ndarray | None = None  # the nodes at rest length (m), solved when first drawn
        self._hidden_on: tuple[int, float] | None = None  # the node with the mystery mass, and its own mass (kg)

        typical = float(np.median(system.mass[free])) if free.size else 1.0
        self._reference_mass = float(system.mass[node]) if system.mass[node] > 0 else typical
        reference = self._reference_mass
        # Exact preset values: 0.5 and 2.5 times the node's own mass, named in grams.
        self.presets = {_grams(0.5 * reference): 0.5 * reference, _grams(reference): reference,
                        _grams(2.5 * reference): 2.5 * reference}
        rng = np.random.default_rng()
        self._mystery_mass = (float(np.round(reference * rng.uniform(1.3, 2.2), 4)) if mystery_mass is None
                              else _checked_positive(mystery_mass, "mystery_mass"))
        planets = np.array(list(GRAVITY_PRESETS.values()))
        guess = float(np.round(rng.uniform(3.0, 22.0), 2))
        while np.min(np.abs(planets - guess)) < 1.5:  # not to be mistaken for a labelled planet
            guess = float(np.round(rng.uniform(3.0, 22.0), 2))
        self._mystery_gravity = guess if mystery_gravity is None else _checked_positive(mystery_gravity,
                                                                                        "mystery_gravity")

        row = {"width": "118px"}
        self.show: dict[str, ipywidgets.Checkbox] = {
            name: ipywidgets.Checkbox(value=False, description=_LABELS[name], indent=False, layout=row)
            for name in SHOW}
        for name, value in (show or {}).items():
            if name not in self.show:
                raise ValueError(f"show has no toggle {name!r}; choose from {', '.join(SHOW)}")
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"show[{name!r}] must be True or False, not {type(value).__name__}")
            self.show[name].value = bool(value)
        style = {"description_width": "128px"}
        low, high = (int(free.min()), int(free.max())) if free.size else (0, system.n_nodes - 1)
        self.node = ipywidgets.BoundedIntText(value=node, min=low, max=high, description="measured node",
                                              style=style, layout={"width": "220px"})
        mass = float(system.mass[node])
        self.mass = ipywidgets.FloatLogSlider(
            value=mass if mass > 0 else reference, base=10.0, min=math.log10(reference) - 1.5,
            max=math.log10(reference) + 1.5, step=0.01, description="mass (kg)", readout_format=".3g",
            style=style, layout={"width": "370px"})
        self.masses = ipywidgets.ToggleButtons(options=[*self.presets, MYSTERY], value=_grams(reference),
                                               description="swap mass", style={**style, "button_width": "64px"})
        self.planet = ipywidgets.ToggleButtons(options=[*GRAVITY_PRESETS, PLANET_X], value=None,
                                               description="planet", style={**style, "button_width": "76px"},
                                               tooltips=[f"g = {g} m/s²" for g in GRAVITY_PRESETS.values()]
                                               + ["g hidden: measure it"])
        self._match_planet(live.gravity.value)
        self.stopwatch_button = ipywidgets.ToggleButton(description="Start", icon="clock-o",
                                                        tooltip="Start or stop the stopwatch (simulated time)",
                                                        layout={"width": "96px"})
        self.stopwatch_reset = ipywidgets.Button(description="Zero", tooltip="Set the stopwatch to 0 s",
                                                 layout={"width": "72px"})
        self.watch_label = ipywidgets.HTML("")
        self.readout = ipywidgets.HTML("")
        self.revealed = ipywidgets.HTML("")

        for checkbox in self.show.values():
            checkbox.observe(lambda _change: self.publish_alone(), "value")
        self.node.observe(self._on_node, "value")
        self.mass.observe(self._on_mass, "value")
        self.masses.observe(self._on_masses, "value")
        self.planet.observe(self._on_planet, "value")
        live.gravity.observe(self._on_gravity_slider, "value")
        for slider in live.stiffness.values():
            slider.observe(lambda _change: self._changed(publish=True), "value")
        self.stopwatch_button.observe(self._on_watch, "value")
        self.stopwatch_reset.on_click(lambda _button: self.zero_stopwatch())
        self._place_ruler()
        self._choose_sample()

    # -- layout ------------------------------------------------------------------------
    def panel(self) -> list[ipywidgets.Widget]:
        """The lab's controls, for the panel beside the view."""
        toggles = ipywidgets.GridBox(list(self.show.values()),
                                     layout={"grid_template_columns": "repeat(3, 124px)", "margin": "4px 0 0 8px"})
        watch = ipywidgets.HBox([self.stopwatch_button, self.stopwatch_reset, self.watch_label],
                                layout={"align_items": "center"})
        return [self.node, self.mass, self.masses, toggles, watch, self.readout, self.revealed]

    # -- set-up helpers ------------------------------------------------------------------
    def _default_node(self, free: np.ndarray) -> int:
        """The free node farthest from the pinned ones (the bob of a spring, the end of a
        chain, a cloth's free corner), or the last node when nothing is pinned."""
        system = self.system
        if free.size == 0:
            return 0
        pinned = np.flatnonzero(system.pinned)
        if pinned.size == 0:
            return int(free[-1])
        x = self._initial
        distance = np.linalg.norm(x[free][:, None, :] - x[pinned][None, :, :], axis=2).min(axis=1)
        return int(free[int(np.argmax(distance))])

    def _up(self) -> np.ndarray:
        g = np.asarray(self.system.gravity, dtype=float)
        size = float(np.linalg.norm(g))
        return -g / size if size > 0 else np.array([0.0, 1.0, 0.0])

    def _place_ruler(self) -> None:
        """A ruler beside the model, its top level with the model's top, as long as a nice
        length a little longer than the model is tall."""
        x = self._initial
        up = np.array([0.0, 1.0, 0.0])
        height = float(np.ptp(x @ up))
        width = float(max(np.ptp(x[:, 0]), np.ptp(x[:, 2])))
        self.ruler_length = _nice(max(1.2 * max(height, 0.5 * width), 1e-3))
        top = x.max(axis=0)
        centre = 0.5 * (x.max(axis=0) + x.min(axis=0))
        # Beside a tall, narrow model; at the right edge of a wide one (which swings or hangs
        # down from its pins, away from that edge), so as not to widen the picture much.
        offset = 0.3 * max(height, 1e-3) if width < 0.5 * height else 0.05 * width
        self.live.view.ruler = [float(top[0] + offset), float(top[1]), float(centre[2])]

    def _choose_sample(self) -> None:
        """The nodes that carry arrows: every free node up to :data:`ARROW_SAMPLE`, else a
        sample spread over the model (farthest-point order from the measured node)."""
        system = self.system
        free = np.flatnonzero(~np.asarray(system.pinned, dtype=bool))
        node = int(self.node.value)
        if free.size <= ARROW_SAMPLE:
            chosen = free
        else:
            x = self._initial[free]
            start = int(np.argmin(np.linalg.norm(x - self._initial[node], axis=1)))
            chosen_local = [start]
            distance = np.linalg.norm(x - x[start], axis=1)
            while len(chosen_local) < ARROW_SAMPLE:
                far = int(np.argmax(distance))
                chosen_local.append(far)
                distance = np.minimum(distance, np.linalg.norm(x - x[far], axis=1))
            chosen = np.sort(free[chosen_local])
        self._sample = chosen.astype(np.int64)
        self.live.view.arrow_nodes = self._sample.astype("<i4").tobytes()

    # -- controls ------------------------------------------------------------------------
    def _changed(self, publish: bool = False) -> None:
        """The settings changed: the readout starts again and the equilibrium is recomputed
        (and shown at once with ``publish``: the controls' own observer published before)."""
        self._records.clear()
        self._equilibrium = False
        self._lowest = None
        self._balance = self._start_balance()
        if publish:
            self.publish_alone()

    def _mass_changed(self) -> None:
        """A node's mass changed: the readout starts again, the damping sliders keep their
        damping ratio (c follows the mass, as it follows k), the critical step is recomputed."""
        live = self.live
        self._changed()
        if live.damping_mode == "zeta":
            for family, slider in live.damping.items():
                live._apply_ratio(family, slider.value)
        live._update_critical()

    def _on_node(self, change: Mapping[str, Any]) -> None:
        node = int(change["new"])
        pinned = np.asarray(self.system.pinned, dtype=bool)
        if pinned[node] and not pinned.all():
            # A pinned node does not move: the box skips to the next free node the way it went.
            free = np.flatnonzero(~pinned)
            ahead = free[free > node] if node >= int(change["old"]) else free[free < node][::-1]
            self.node.value = int(ahead[0]) if ahead.size else int(change["old"])
            return
        if self.masses.value == MYSTERY and self._hidden_on is not None and self._hidden_on[0] != node:
            # The mystery mass moves with the measured node; the old node gets its own back.
            old, own = self._hidden_on
            self.system.mass[old] = own
            self._hidden_on = (node, float(self.system.mass[node]))
            self.system.mass[node] = self._mystery_mass
            self._mass_changed()
        self._changed()
        self._choose_sample()
        mass = float(self.system.mass[node])
        if mass > 0 and self.masses.value != MYSTERY:
            # Show the new node's mass on the slider without writing it back.
            self._quiet = True
            try:
                low, high = math.log10(mass) - 1.5, math.log10(mass) + 1.5
                if low > self.mass.max:  # keep min <= max at every assignment
                    self.mass.max, self.mass.min = high, low
                else:
                    self.mass.min, self.mass.max = low, high
                self._show_mass(mass)
            finally:
                self._quiet = False
            matching = [name for name, value in self.presets.items() if math.isclose(value, mass, rel_tol=1e-9)]
            self.masses.value = matching[0] if matching else None
        self.publish_alone()

    def _show_mass(self, value: float) -> None:
        """Puts ``value`` (kg) on the mass slider from Python, remembering it: a browser's
        slider answers each such value with its own rounding of it, late."""
        self._sent.append((time.monotonic(), float(value)))
        del self._sent[:-16]
        self.mass.value = value

    def _on_mass(self, change: Mapping[str, Any]) -> None:
        if self.masses.value == MYSTERY or self._quiet:
            return
        new = float(change["new"])
        # A browser's slider rounds a value it is sent to the slider's step (2.3 % apart on
        # the log scale) and sends that back, after the cell that set it has run.  The answer
        # to the latest value stands for it; an answer to an earlier one is stale (a cell set
        # several masses in turn) and puts the latest back.
        recent = [value for when, value in self._sent if time.monotonic() - when < ECHO_SECONDS]
        if recent and new != recent[-1]:
            if math.isclose(new, recent[-1], rel_tol=0.012):
                new = recent[-1]
            elif any(math.isclose(new, value, rel_tol=0.012) for value in recent[:-1]):
                self._show_mass(recent[-1])
                return
        # A value within half a step of a labelled mass is that mass.
        matching = [name for name, value in self.presets.items() if math.isclose(value, new, rel_tol=0.012)]
        mass = self.presets[matching[0]] if matching else new
        node = int(self.node.value)
        if self.system.mass[node] == mass and self.masses.value == (matching[0] if matching else None):
            return  # the browser's answer to what is already so
        self.system.mass[node] = mass
        self.masses.value = matching[0] if matching else None
        self._mass_changed()

    def _on_masses(self, change: Mapping[str, Any]) -> None:
        name = change["new"]
        if name is None:
            return
        node = int(self.node.value)
        if name == MYSTERY:
            if self._hidden_on is None or self._hidden_on[0] != node:
                self._hidden_on = (node, float(self.system.mass[node]))
            self.system.mass[node] = self._mystery_mass
            self.mass.disabled = True
            self.mass.readout = False
            self.mass.description = "mass (kg): ?"
            self._mass_changed()
            return
        self._hidden_on = None
        self.mass.disabled = False
        self.mass.readout = True
        self.mass.description = "mass (kg)"
        if math.isclose(self.mass.value, self.presets[name], rel_tol=1e-6):
            self.system.mass[int(self.node.value)] = self.presets[name]
            self._mass_changed()
        else:
            self._show_mass(self.presets[name])

    def _match_planet(self, value: float) -> None:
        matching = [name for name, g in GRAVITY_PRESETS.items() if math.isclose(g, value, abs_tol=5e-3)]
        self.planet.value = matching[0] if matching else None

    def _on_planet(self, change: Mapping[str, Any]) -> None:
        name = change["new"]
        live = self.live
        if name is None:
            return
        if name == PLANET_X:
            live.system.gravity = self._mystery_gravity * live._gravity_direction
            live.gravity.disabled = True
            live.gravity.readout = False
            live.gravity.description = "gravity (m/s²): ?"
            self._changed()
            live._show_verdict()  # publishes, with the energies veiled
            return
        live.gravity.disabled = False
        live.gravity.readout = True
        live.gravity.description = "gravity (m/s²)"
        live._show_verdict()
        if live.gravity.value == GRAVITY_PRESETS[name]:
            live.system.gravity = GRAVITY_PRESETS[name] * live._gravity_direction
            self._changed()
            live._publish()
        else:
            self._sent_gravity.append((time.monotonic(), GRAVITY_PRESETS[name]))
            del self._sent_gravity[:-16]
            live.gravity.value = GRAVITY_PRESETS[name]

    def _on_gravity_slider(self, change: Mapping[str, Any]) -> None:
        new = float(change["new"])
        # As for the mass slider: a browser's late answer to a planet chosen before the
        # latest one (a cell visited several in turn) puts the latest one back.
        recent = [value for when, value in self._sent_gravity if time.monotonic() - when < ECHO_SECONDS]
        if recent and abs(new - recent[-1]) > 0.006 and any(abs(new - value) <= 0.006 for value in recent[:-1]):
            self.live.gravity.value = recent[-1]
            return
        if self.planet.value != PLANET_X:
            self._match_planet(new)
        self._changed(publish=True)

    def _on_watch(self, change: Mapping[str, Any]) -> None:
        if change["new"]:
            self._watch_running = True
            self._watch_start = float(self.system.t)
            self.stopwatch_button.description = "Stop"
        else:
            if self._watch_running:
                self._watch_total += float(self.system.t) - self._watch_start
            self._watch_running = False
            self.stopwatch_button.description = "Start"
        self.publish_alone()

    # -- what the student reads ----------------------------------------------------------
    @property
    def stopwatch(self) -> float:
        """The stopwatch's reading (s of simulated time)."""
        running = float(self.system.t) - self._watch_start if self._watch_running else 0.0
        return self._watch_total + running

    def zero_stopwatch(self) -> None:
        """Sets the stopwatch to 0 s; a running stopwatch keeps running from there."""
        self._watch_total = 0.0
        self._watch_start = float(self.system.t)
        self.publish_alone()

    def reveal(self) -> dict[str, float]:
        """The hidden values, shown in the panel too: the mystery mass (kg) and the mystery
        planet's gravity (m/s²)."""
        self.revealed.value = (f'<div style="font-size:12px;color:#555">mystery mass {self._mystery_mass:.4g} kg, '
                               f'{html.escape(PLANET_X)}: g = {self._mystery_gravity:.4g} m/s²</div>')
        return {"mass": self._mystery_mass, "gravity": self._mystery_gravity}

    @property
    def mystery(self) -> bool:
        """True while a hidden value acts: the mystery mass is on the measured node or the
        mystery planet is chosen.  The page is then sent nothing that gives it away more
        closely than the ruler and the stopwatch measure it (see :meth:`veil`)."""
        return self.masses.value == MYSTERY or self.planet.value == PLANET_X

    def veil(self, values: Sequence[float | None]) -> list[float | None]:
        """Energies (J) for the page: as they are, or while :attr:`mystery` is on, rounded to
        a step of a twentieth or more of the largest of them (so that m g h, 1/2 m v² or the
        ledger do not give the hidden mass or gravity to better than a few %)."""
        if not self.mystery:
            return list(values)
        finite = [abs(value) for value in values if value is not None and math.isfinite(value)]
        size = max(finite, default=0.0)
        if size == 0.0:
            return list(values)
        step = _nice(size / 20.0)
        return [None if value is None else (float(np.round(value / step) * step) if math.isfinite(value) else value)
                for value in values]

    def measurement(self) -> tuple[float | None, float | None]:
        """The period (s) and amplitude (m) of the measured node, see :func:`measure_oscillation`."""
        if len(self._records) < 3:
            return None, None
        record = np.asarray(self._records)
        period, amplitude, _ = measure_oscillation(record[:, 0], record[:, 1:])
        return period, amplitude

    def trace(self) -> tuple[np.ndarray, np.ndarray]:
        """The measured node's recorded motion since the settings last changed: times (s)
        and displacement (m) along the direction it moves most, as the trace draws it."""
        if not self._records:
            return np.zeros(0), np.zeros(0)
        record = np.asarray(self._records)
        return record[:, 0].copy(), measure_oscillation(record[:, 0], record[:, 1:])[2]

    def lines(self) -> dict[str, float | None]:
        """The heights (m, along -gravity) of the reference lines through the measured node."""
        node = int(self.node.value)
        up = self._up()
        resting = self._resting()
        return {"rest": float(self._rest_positions()[node] @ up),
                "equilibrium": None if resting is None or resting is False else float(resting[node] @ up),
                "lowest": self._lowest}

    def _resting(self) -> np.ndarray | None:
        """The equilibrium (m) under the present settings, solved with a short budget
        (:data:`EQUILIBRIUM_BUDGET`, so that a slider dragged while playing does not stall
        the frames) and kept for each setting it was found for, so that going back to a
        mass, k or planet already seen costs nothing."""
        if self._equilibrium is False:
            system = self.system
            pinned = np.asarray(system.pinned, dtype=bool)
            key = b"".join(np.ascontiguousarray(array, dtype=float).tobytes() for array in (
                system.mass, system.k, system.rest, pinned, np.asarray(system.x)[pinned], system.gravity,
                system.external)) + repr([collider.describe() for collider in system.colliders]).encode()
            found = self._solved.get(key)
            if found is None:
                found = equilibrium(system, budget=EQUILIBRIUM_BUDGET)
                if found is not None:
                    self._solved[key] = found
                    while len(self._solved) > 64:
                        self._solved.pop(next(iter(self._solved)))
            self._equilibrium = found
        return None if self._equilibrium is False else self._equilibrium

    def _rest_positions(self) -> np.ndarray:
        """Where the nodes sit with the springs at rest length (m), shape (n, 3): the initial
        state let settle without gravity, wind or external force (a lab spring started
        stretched shortens to its rest length; a model started at rest stays where it is).
        Solved once: the springs' rest lengths do not change on the bench."""
        if self._rest is None:
            probe = self.system.copy()
            probe.x[:] = self._initial
            probe.v[:] = 0.0
            probe.gravity = (0.0, 0.0, 0.0)
            probe.wind = (0.0, 0.0, 0.0)
            probe.external[:] = 0.0
            settled = equilibrium(probe, budget=EQUILIBRIUM_BUDGET) if np.any(probe.pinned) else None
            self._rest = self._initial if settled is None else settled
        return self._rest

    # -- each frame ----------------------------------------------------------------------
    def _energy_balance(self) -> tuple[float, float]:
        """kinetic + spring + gravity + dissipated - work (J), conserved by the physics, and
        the size of the energies in it (J)."""
        energy = self.system.energy()
        parts = (energy.kinetic, energy.spring, energy.gravity, energy.dissipated, -energy.work)
        return float(sum(parts)), float(sum(abs(part) for part in parts))

    def _start_balance(self) -> tuple[float, float] | None:
        """The energy balance the next frames are held to, taken now: a change of the settings
        (gravity, a mass, k) leaves it as it was, since the ledger books the change as the
        work of the user."""
        with np.errstate(invalid="ignore", over="ignore"):
            total, scale = self._energy_balance()
        return (total, scale) if math.isfinite(total) and math.isfinite(scale) else None

    def step(self, dt: float, steps: int, per_frame: int) -> None:
        """Steps the system ``steps`` times by ``dt`` (s), as :meth:`System.step` does (bit
        for bit, all or nothing).  A frame that catches up more than ``per_frame`` steps
        (playing behind the clock) is run recording the measured node every ``per_frame``
        steps, so that the trace and the readout get its motion in between rather than a
        straight line across it."""
        system = self.system
        if steps <= per_frame:
            system.step(dt, steps)
            return
        record = system.run(dt, steps, record_every=per_frame, progress=False)
        node = int(self.node.value)
        times = np.asarray(record.times, dtype=float)[1:-1]
        positions = np.asarray(record.positions, dtype=float)[1:-1, node]
        self._between = [(float(time_), *map(float, position)) for time_, position in zip(times, positions)]

    def after_step(self) -> bool:
        """Records the measured node after a frame's steps; False when the state has blown up:
        a non-finite value, a spring stretched :data:`BLOW_UP_STRAIN` times its rest length,
        or an energy balance whose drift makes up half the energy now and is more than
        :data:`BLOW_UP_DRIFT` times the energies of the sane frames (a stable integrator keeps
        it within a few % of them)."""
        system = self.system
        between, self._between = self._between, []
        with np.errstate(invalid="ignore", over="ignore"):
            strain = np.asarray(system.strain())
            finite = np.isfinite(system.x).all() and np.isfinite(system.v).all()
            wild = bool(np.any(np.abs(strain[np.isfinite(strain)]) > BLOW_UP_STRAIN))
            total, scale = self._energy_balance()
        if finite and not wild and self._balance is not None and math.isfinite(total):
            before, size = self._balance
            drift = abs(total - before)
            # Growth that makes up most of the energy now, and dwarfs the energies of the sane
            # frames: a hand pulling or a coarse but stable step drifts by far less.
            wild = drift > 0.5 * scale and drift > BLOW_UP_DRIFT * max(size, 1e-12)
        if not finite or wild or not math.isfinite(total):
            self.blown_up = True
            return False
        if self._balance is None:
            self._balance = (total, scale)
        elif abs(total - self._balance[0]) < 0.1 * scale:
            # The energies may grow (a drag, the wind) while the balance holds; not while it drifts.
            self._balance = (self._balance[0], max(self._balance[1], scale))
        node = int(self.node.value)
        position = np.asarray(system.x[node], dtype=float)
        if between and np.all(np.isfinite(between)):
            self._records.extend(between)
            heights = np.asarray(between)[:, 1:] @ self._up()
            lowest = float(heights.min())
            self._lowest = lowest if self._lowest is None else min(self._lowest, lowest)
        self._records.append((float(system.t), *position))
        del self._records[:-RECORD_LIMIT]
        height = float(position @ self._up())
        self._lowest = height if self._lowest is None else min(self._lowest, height)
        return True

    def blow_up_note(self) -> str:
        """What the picture shows after a blow-up."""
        if self._sane is None:
            return ""
        return f"The picture shows the last sane frame, t = {self._sane['time']:.4g} s."

    def reset(self) -> None:
        """Forgets the measurement, the lowest point and the blow-up; zeroes the stopwatch."""
        self._changed()
        self._units = {"force": None, "velocity": None, "acceleration": None}
        self._small = dict.fromkeys(self._small, 0)
        self._largest = {}
        self.blown_up = False
        self._sane = None
        self._watch_total = 0.0
        self._watch_start = 0.0
        self.stopwatch_button.value = False

    def publish_alone(self) -> None:
        """Sends the lab's part of the picture (not a new frame of the model)."""
        view = self.live.view
        with view.hold_sync():
            self.publish()

    def publish(self) -> None:
        """Fills the lab's traits of the view; after a blow-up, the view's positions, strain
        and energies are those of the last sane frame.  Called inside the view's hold_sync."""
        view, system = self.live.view, self.system
        if not hasattr(self, "show"):
            return
        energy = dict(view.energy)
        sane = (not self.blown_up and all(value is not None for value in energy.values())
                and np.isfinite(system.x).all())
        if sane:
            # While playing, the view's traits hold the picture from before Play (the frames
            # go as messages, and frame() keeps each): only a paused view's traits are current.
            if not self.live.player.playing:
                self.remember(view.positions, view.strain, energy, dict(view.status))
        elif self._sane is not None:
            view.positions = self._sane["positions"]
            view.strain = self._sane["strain"]
            view.energy = self._sane["energy"]
            view.status = self._sane["status"]
        arrows, trace, lab = self._overlay(sane)
        if arrows is not None:
            view.arrows = arrows
        view.trace = trace
        view.lab = lab

    def remember(self, positions: bytes, strain: bytes, energy: dict[str, float | None],
                 status: dict[str, Any]) -> None:
        """Keeps a sane frame (the view's float32 bytes, its energies and status line): the
        picture shown after a blow-up."""
        self._sane = {"positions": positions, "strain": strain, "energy": energy, "status": status,
                      "time": float(self.system.t)}

    def frame(self, positions: bytes, strain: bytes, energy: dict[str, float | None],
              status: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """The lab's part of a frame streamed while playing (the frame is sane: it passed
        :meth:`after_step`): its JSON (the ``lab`` dict) and two float32 buffers, the arrows
        (empty when none is shown) and the trace, so that the page draws them with the
        positions they belong to."""
        self.remember(positions, strain, energy, status)
        arrows, trace, lab = self._overlay(True)
        return lab, [arrows if arrows is not None else b"", trace]

    def _overlay(self, sane: bool) -> tuple[bytes | None, bytes, dict[str, Any]]:
        """The arrows (float32 bytes; None: keep those shown), the trace (float32 bytes) and
        the ``lab`` dict of the view, for the system as it is; updates the readout widgets."""
        system = self.system
        shown = {name: box.value for name, box in self.show.items()}
        wanted = [name for name in ARROWS if shown[name]]
        arrows: bytes | None = None
        if wanted and sane and self._sample.size:
            critical = self.live._critical
            probe = min(1e-3, 0.01 * critical) if math.isfinite(critical) and critical > 0 else 1e-3
            forces = node_forces(system, probe)
            block = np.stack([forces[name][self._sample] for name in ARROWS], axis=1)
            self._rescale(block)
            if self.mystery:
                block = self._rounded(block)
            arrows = np.clip(block, -1e30, 1e30).astype("<f4").tobytes()
        elif not sane:
            arrows = b""
        period, amplitude = self.measurement()
        record = np.asarray(self._records[-TRACE_SAMPLES:]) if self._records else np.zeros((0, 4))
        trace = b""
        if shown["trace"] and len(record) >= 3:
            _, _, displacement = measure_oscillation(record[:, 0], record[:, 1:])
            trace = np.column_stack([record[:, 0], displacement]).astype("<f4").tobytes()
        lines = self.lines() if (shown["rest"] or shown["equilibrium"] or shown["lowest"]) else {}
        if self.mystery:  # as closely as the ruler reads them: half its smallest division
            tick = self.ruler_length / 100.0
            lines = {name: None if value is None else float(np.round(value / tick) * tick)
                     for name, value in lines.items()}
        extent = self._extent()
        if self.mystery:  # its lowest point is twice the way down to the equilibrium: as coarse as the lines
            tick = self.ruler_length / 100.0
            extent = [[float(np.round(value / tick) * tick) for value in point] for point in extent]
        self.watch_label.value = f'<span style="font-variant-numeric:tabular-nums">{self.stopwatch:.2f} s</span>'
        self.readout.value = self._readout_html(period, amplitude)
        lab = {
            "show": shown, "node": int(self.node.value), "units": dict(self._units),
            "lines": {name: lines.get(name) for name in LINES}, "up": [float(u) for u in self._up()],
            "stopwatch": {"time": self.stopwatch, "running": self._watch_running},
            "period": period, "amplitude": amplitude, "ruler_length": self.ruler_length,
            "blown_up": not sane, "extent": extent, "mystery": self.mystery,
        }
        return arrows, trace, lab

    def _extent(self) -> list[list[float]]:
        """Points the view keeps in the picture from the start (m): the ruler's ends when it
        is shown and, for a single mass on springs, its lowest point when let go from where
        it is (twice the way down to its equilibrium)."""
        points: list[list[float]] = []
        if self.show["ruler"].value:
            top = list(self.live.view.ruler)
            points += [top, [top[0], top[1] - self.ruler_length, top[2]]]
        if np.count_nonzero(~np.asarray(self.system.pinned, dtype=bool)) == 1:
            if self._resting() is not None:
                node = int(self.node.value)
                low = 2.0 * self._equilibrium[node] - self._initial[node]
                points.append([float(value) for value in low])
        return points

    def _rounded(self, block: np.ndarray) -> np.ndarray:
        """The arrows rounded to a tenth of their unit in the key (while a mystery is on, so
        that the gravity arrow does not give m g, nor the acceleration arrow m, exactly)."""
        block = np.array(block)
        for name, columns in (("force", slice(0, 5)), ("velocity", slice(5, 6)), ("acceleration", slice(6, 7))):
            unit = self._units[name]
            if unit:
                block[:, columns] = np.round(block[:, columns] / (0.1 * unit)) * (0.1 * unit)
        return block

    def _rescale(self, block: np.ndarray) -> None:
        """Chooses the arrow units (a unit arrow is 40 px long): a round value about half the
        largest arrow, chosen again when an arrow grows past three units or when every arrow
        has stayed below a third of a unit for :data:`SHRINK_FRAMES` frames."""
        groups = {"force": block[:, :5], "velocity": block[:, 5:6], "acceleration": block[:, 6:7]}
        for name, vectors in groups.items():
            size = float(np.max(np.linalg.norm(vectors, axis=2), initial=0.0))
            if not math.isfinite(size) or size <= 0.0:
                continue
            unit = self._units[name]
            if unit is not None and size < unit / 3.0:
                # Every arrow short for a while (the motion died down): a smaller unit again.
                self._small[name] += 1
            else:
                self._small[name] = 0
            if unit is None or size > 3.0 * unit or self._small[name] > SHRINK_FRAMES:
                # Not below a thousandth of the largest unit: a resting node's round-off stays invisible.
                self._units[name] = max(_nice(size / 2.0), 1e-3 * self._largest.get(name, 0.0))
                self._largest[name] = max(self._largest.get(name, 0.0), self._units[name])
                self._small[name] = 0

    def _readout_html(self, period: float | None, amplitude: float | None) -> str:
        node = int(self.node.value)
        if period is None:
            text = f"node {node}: period and amplitude after two full swings"
        else:
            text = f"node {node}: period <b>{period:.3f} s</b>"
            if amplitude is not None:
                text += f", amplitude <b>{amplitude:.3g} m</b>"
        return f'<div style="font-size:12px;margin-left:8px">{text}</div>'
