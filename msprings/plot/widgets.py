"""Live notebook controls: ``msprings.interact(system)`` plays a system with sliders,
energy bars, a running energy ledger and a view you can turn and grab.

Design
------
All physics stays in Python and C.  A tick runs ``system.step(dt, steps_per_frame)`` in the
kernel and publishes one frame: positions and spring strains as float32 bytes, the energy
ledger and a bounded history of it.  The browser only draws and reports the mouse and keys.

Libraries (the ``widgets`` extra):

- **ipywidgets** (8): the standard widget protocol of Jupyter.  Its buttons, sliders and
  dropdown are familiar, keyboard-accessible and can be set from Python, which is how the
  tests and the tutorial notebooks drive the controls without a browser.  The same widgets
  render in JupyterLab, Notebook 7, VS Code and Voila.
- **anywidget**: a custom view as one plain ES module shipped inside this package
  (``msprings/plot/static/interact.js``), with no JavaScript build step and no separate
  front-end extension to install; it works offline in every front end that runs
  ipywidgets 8.  The view draws on a 2-D canvas (an orthographic projection of the 3-D
  network, energy bars, a ledger strip chart), which needs no WebGL and keeps the module
  small.  The plotly figures of :func:`msprings.plot.view` were not reused for it: a
  plotly update carries its numbers as JSON, and plotly has no way to drag a single node.

Playing is pushed by the kernel and paced by a simulated clock (:class:`Playback`).  A page
that asked for one frame at a time and waited for it (as this module did before) spends a
round trip per frame: JupyterLab's relay takes some 45 ms each way, so the views drew 12 to
18 frames a second and the simulation ran at 0.4 to 0.6 of real time, though a frame costs
the kernel 1 to 2 ms.  Now, while playing, a timer on the kernel's asyncio loop moves the
clock on by ``speed * period`` simulated seconds ``fps`` times a second (``period`` is
``1 / fps``, real time, until ``steps_per_frame`` is set, then ``steps_per_frame * dt``);
each system takes the whole steps of its ``dt`` that bring it to the clock, and its frame
goes out as a custom message, positions and strains as binary buffers (``widget.send``),
the energies and status as JSON, and the ledger sample, which the page appends to its chart.
The page buffers frames briefly (120 ms, against the relay's jitter), draws the state at its
clock's simulated time at every animation frame of the browser, interpolating positions
between the two frames around it, and acknowledges each frame as it arrives.  The kernel
sends no more while a second's worth of frames are unacknowledged, so a slow relay or page
slows the clock (the page's clock waits at the newest frame) instead of piling up messages.
A timer that fires late (a busy machine) makes a longer frame, up to ``CATCH_UP`` s of wall
time; a kernel slower than real time for longer drops time rather than catching up in a
burst.  The steps of a frame are held to ``FRAME_BUDGET`` of its wall time (from the
measured cost of a step), so a kernel slower than real time slows the clock evenly.  A page
that starts drawing (shown while playing, reloaded) says hello and the kernel forgets the
frames in flight to it, as it does frames unacknowledged for ``LOST_AFTER`` s.  Slow motion
(``speed``) slows the clock, not the frames.  Pausing publishes the kernel's state through
the traits, so the picture ends where the system is.  Views of one :func:`compare` share the
kernel's clock and one clock on the page (kept on the page's global object, since the front
end loads the module once per view).  ``close()`` stops playing and closes every control.
A divergence during playback pauses, rolls back and explains exactly as
:meth:`LiveControls.tick` does; ``tick()`` and ``run()`` from Python step without any of
this, which is how tests and notebooks drive the controls.

Drawing a cloth of thousands of springs is kept to a few milliseconds by stroking the
springs as one path per strain colour (41 colours) and filling the faces, far to near, in
runs of one shade (32 shades).

The lab bench (arrows, ruler, stopwatch, reference lines, period readout, trace, mass swap,
gravity presets) is computed in :mod:`msprings.plot._lab` and drawn by its own functions in
the same ES module.  While playing, its overlays travel in the frames they belong to.

This module is also reachable as :mod:`msprings.widgets`, the same module object.
"""
from __future__ import annotations

import asyncio
import html
import math
import os
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import numpy as np
import traitlets

from .. import _core
from .._system import Ledger, StabilityWarning, System
from ._lab import SHOW, Lab, LabViewTraits

__all__ = ["CATCH_UP", "DISSIPATION_PARTS", "ENERGY_BARS", "FRAME_BUDGET", "HISTORY_LIMIT", "IN_FLIGHT_SECONDS",
           "LOST_AFTER", "SPEEDS", "WORK_PARTS", "Comparison", "LiveControls", "Playback", "SystemView", "compare",
           "interact"]

ENERGY_BARS = ("kinetic", "spring", "gravity", "dissipated", "work")
"""The energy fields (J) shown as bars and in the ledger plot, in that order."""

DISSIPATION_PARTS = Ledger._fields[:Ledger._fields.index("wind")]
"""The fields of :meth:`System.ledger` that make up ``dissipated`` (they come first)."""

WORK_PARTS = Ledger._fields[len(DISSIPATION_PARTS):]
"""The fields of :meth:`System.ledger` that make up ``work``."""

HISTORY_LIMIT = 20_000
"""Samples of the ledger kept in Python (the oldest are dropped beyond it)."""

SPEEDS = {"1×": 1.0, "½×": 0.5, "¼×": 0.25, "1/10×": 0.1}
"""The choices of the ``speed`` control: simulated seconds per second of wall time."""

CATCH_UP = 0.25
"""Most wall time (s) one frame of playback makes up for when the kernel's timer was late."""

IN_FLIGHT_SECONDS = 1.0
"""While playing, the kernel sends at most this many seconds' worth of frames (at ``fps``,
and at least 4) that the page has not acknowledged yet; past that it waits."""

LOST_AFTER = 2.0
"""Wall time (s) the kernel waits for acknowledgements before it counts the frames in flight
as lost (a page that went away or never drew them) and sends again."""

FRAME_BUDGET = 0.8
"""Fraction of a frame's wall time (``1 / fps``) the steps of one frame may take, from the
measured cost of a step; a kernel slower than real time slows the clock to fit it."""

_CHART_SAMPLES = 600  # samples of the ledger history sent to the strip chart
_LABELS = {
    "explicit_euler": "explicit Euler",
    "symplectic_euler": "symplectic Euler",
    "velocity_verlet": "velocity Verlet",
    "rk4": "RK4",
    "implicit_euler": "implicit Euler",
    "projective": "projective dynamics",
    "xpbd": "XPBD",
}
_DESCRIPTION_STYLE = {"description_width": "128px"}
_SLIDER_LAYOUT = {"width": "370px"}
# Where ipywidgets 8 puts the track of a slider with that description width and layout
# width (px from the slider's left edge): the gauge under the dt slider lines up with it.
_TRACK_LEFT, _TRACK_WIDTH = 142, 146
_SAFE_COLOUR = "#2e7d32"
_DANGER_COLOUR = "#c62828"


class SystemView(anywidget.AnyWidget, LabViewTraits):
    """The canvas: a projected 3-D drawing of the network, energy bars and a ledger strip chart.

    Binary traits hold little-endian arrays: ``positions`` float32 (n, 3) in m, ``springs``
    int32 (m, 2), ``faces`` int32 (F, 3), ``pinned`` uint8 (n,), ``strain`` float32 (m,)
    and ``history`` float32 (H, 6): time (s) and the :data:`ENERGY_BARS` (J).

    While ``playing`` the kernel streams frames as custom messages (see :class:`Playback`):
    ``{"type": "frame", "run", "seq", "clock", "t", "rate", "energy", "status", "sample"}``
    with the positions and strains (float32) as two binary buffers, or none when the frame
    did not step.  The view draws them at their simulated time and answers each with
    ``{"type": "ack", "run", "seq"}``.  Views with the same ``clock`` id share one clock
    on the page.  The view also sends ``{"type": "drag", "node": i, "position": [x, y, z]}``
    / ``{"type": "release", "node": i}`` when a node is grabbed, and ``{"type": "key",
    "action": "play" | "step" | "reset"}`` for the keys space, → and r on the canvas.
    The lab bench's traits (arrows, ruler, lines, trace) are those of
    :class:`~msprings.plot._lab.LabViewTraits`.
    """

    _esm = Path(__file__).with_name("static") / "interact.js"

    positions = traitlets.Bytes(b"").tag(sync=True)
    springs = traitlets.Bytes(b"").tag(sync=True)
    faces = traitlets.Bytes(b"").tag(sync=True)
    pinned = traitlets.Bytes(b"").tag(sync=True)
    strain = traitlets.Bytes(b"").tag(sync=True)
    history = traitlets.Bytes(b"").tag(sync=True)
    energy = traitlets.Dict().tag(sync=True)
    status = traitlets.Dict().tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    playing = traitlets.Bool(False).tag(sync=True)
    frame = traitlets.Int(0).tag(sync=True)
    generation = traitlets.Int(0).tag(sync=True)
    fps = traitlets.Float(30.0).tag(sync=True)
    clock = traitlets.Unicode("").tag(sync=True)
    azimuth = traitlets.Float(0.0).tag(sync=True)
    elevation = traitlets.Float(0.0).tag(sync=True)
    width = traitlets.Int(640).tag(sync=True)
    height = traitlets.Int(480).tag(sync=True)


class Playback:
    """The kernel's clock while playing: it steps one or more :class:`LiveControls` (lanes)
    on one simulated clock and pushes their frames to the page.

    Every ``1 / fps`` s of wall time (a timer on the kernel's asyncio loop) the clock moves
    on by ``speed * period()`` simulated seconds per ``1 / fps`` s of wall time since the
    last frame, and each playing lane takes the whole steps of its ``dt`` that bring its
    time to the clock or just past it, then sends one frame.  A timer that fires late (a
    busy machine) makes a longer frame, up to :data:`CATCH_UP` s of wall time.  The steps
    of one frame are held to :data:`FRAME_BUDGET` of its wall time, from the measured cost
    of a step (:attr:`cost`): a kernel slower than real time moves the clock on by the same
    smaller amount every frame, so the motion slows down evenly instead of lurching.  A
    frame the page has not acknowledged is in flight; while a lane has :attr:`window` frames
    in flight the clock waits (neither steps nor sends, and the wall time passes unused), so
    a slow page or relay slows the playback down instead of piling up messages.  A page that
    starts drawing (a view shown while playing, a reloaded tab) says hello, and the frames in
    flight to it are forgotten; so are frames unacknowledged for :data:`LOST_AFTER` s.  A
    system stepped or reset from a cell while playing, more than a frame off the clock, sets
    the clock to its time.  Without a running event loop (plain Python) nothing is
    scheduled (a RuntimeWarning says so once): :meth:`pump` moves the clock one frame by
    hand.  The timer holds the player only weakly, so a widget that is dropped can go.

    Parameters
    ----------
    lanes : sequence of LiveControls
        What the clock steps; a lane plays while its ``play`` toggle is on.
    period : callable
        Simulated seconds (s) per frame at ``speed`` 1.
    fps : float
        Frames per second of wall time.
    """

    def __init__(self, lanes: Sequence[LiveControls], period: Callable[[], float], fps: float) -> None:
        self.lanes = list(lanes)
        self.period = period
        self.fps = float(fps)
        self.speed = 1.0
        self.playing = False
        self.run = 0  # numbers each play, so that late frames and acks of an earlier one are ignored
        self.clock = 0.0  # s, simulated
        self.sent: dict[int, int] = {}
        self.acked: dict[int, int] = {}
        self.cost: dict[int, float] = {}  # s of wall time per step, by lane (a running mean)
        self.stalls = 0  # frames of wall time the clock waited for acknowledgements
        self.timer: Callable[[], float] = time.perf_counter  # what measures the cost of the steps
        self._waited = 0.0  # s of wall time waited for acknowledgements in a row
        self._warned = False
        self._due = 0.0
        self._last = 0.0  # loop time of the last frame
        self._timer: asyncio.TimerHandle | None = None

    @property
    def window(self) -> int:
        """Most frames a lane may have in flight (unacknowledged)."""
        return max(4, math.ceil(self.fps * IN_FLIGHT_SECONDS))

    @property
    def rate(self) -> float:
        """Simulated seconds per second of wall time."""
        return self.speed * self.period() * self.fps

    def active(self) -> list[LiveControls]:
        """The lanes whose ``play`` toggle is on.

        Returns
        -------
        list of LiveControls
            The playing lanes, in order.
        """
        return [lane for lane in self.lanes if lane.play.value]

    def in_flight(self, lane: LiveControls) -> int:
        """Frames sent to ``lane``'s page and not yet acknowledged.

        Parameters
        ----------
        lane : LiveControls
            One of :attr:`lanes`.

        Returns
        -------
        int
            The number of frames in flight.
        """
        return self.sent.get(id(lane), 0) - self.acked.get(id(lane), 0)

    def start(self) -> None:
        """A new run: the clock starts at the earliest time of the playing lanes."""
        if self.playing:
            return
        active = self.active()
        if not active:
            return
        self.playing = True
        self.run += 1
        self.sent.clear()
        self.acked.clear()
        self._waited = 0.0
        self.clock = min(float(lane.system.t) for lane in active)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # plain Python: the caller pumps
            if not self._warned:
                self._warned = True
                warnings.warn("Play does nothing here: there is no running asyncio event loop to play on "
                              "(outside a notebook's kernel); use tick() or run(frames) to step the controls",
                              RuntimeWarning, stacklevel=2)
            return
        self._last = loop.time()
        self._due = self._last + 1.0 / self.fps
        self._timer = loop.call_at(self._due, Playback._fire, weakref.ref(self), loop)

    def stop(self) -> None:
        """Stop playing: cancel the timer (the lanes keep their state)."""
        self.playing = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def ack(self, lane: LiveControls, run: int, seq: int) -> None:
        """The page has the lane's frame ``seq`` of run ``run`` (and every one before it).

        Parameters
        ----------
        lane : LiveControls
            The lane whose page acknowledges.
        run : int
            The play the frame belongs to (acknowledgements of an earlier one are ignored).
        seq : int
            The frame's number in that play.
        """
        if run == self.run and seq <= self.sent.get(id(lane), 0):
            self.acked[id(lane)] = max(self.acked.get(id(lane), 0), seq)
            self._waited = 0.0

    def hello(self, lane: LiveControls) -> None:
        """A page started drawing the lane (shown while playing, or reloaded): the frames in
        flight to it will never be acknowledged, so they no longer count.

        Parameters
        ----------
        lane : LiveControls
            The lane whose page started drawing.
        """
        self.acked[id(lane)] = self.sent.get(id(lane), 0)
        self._waited = 0.0

    def pump(self, elapsed: float | None = None) -> bool:
        """One frame of the clock, for ``elapsed`` s of wall time (default ``1 / fps``; at
        most :data:`CATCH_UP`).  Returns False when it waited (a lane had :attr:`window`
        frames in flight, for less than :data:`LOST_AFTER` s) or nothing plays any more.

        Parameters
        ----------
        elapsed : float, optional
            Wall time the frame stands for (s); default ``1 / fps``.

        Returns
        -------
        bool
            True if the clock moved on and frames were sent.
        """
        active = self.active()
        if not active:
            self.stop()
            return False
        wall = 1.0 / self.fps if elapsed is None else max(elapsed, 0.0)
        if any(self.in_flight(lane) >= self.window for lane in active):
            self._waited += wall
            if self._waited < LOST_AFTER:
                self.stalls += 1
                return False
            for lane in active:  # lost on the way, or sent to a page that went away
                self.hello(lane)
        self._waited = 0.0
        advance = self.speed * self.period() * min(wall, CATCH_UP) * self.fps
        # A cell stepped or reset a system while playing: the clock goes to it, not it to the clock.
        frame = max(advance, self.speed * self.period())
        if any(abs(lane.system.t - self.clock) > frame + lane.dt.value for lane in active):
            self.clock = min(float(lane.system.t) for lane in active)
        # Wall time per simulated second of all the lanes' steps: at most FRAME_BUDGET of a frame's worth.
        load = sum(self.cost.get(id(lane), 0.0) / lane.dt.value for lane in active)
        if load > 0.0:
            advance = min(advance, FRAME_BUDGET / self.fps / load)
        self.clock += advance
        rate = self.rate
        for lane in active:
            dt = lane.dt.value
            steps = min(max(math.ceil((self.clock - lane.system.t) / dt - 1e-6), 0), 100_000)
            if steps:
                began = self.timer()
                advanced = lane._advance(steps)
                spent = max(self.timer() - began, 0.0) / steps
                known = self.cost.get(id(lane))
                self.cost[id(lane)] = spent if known is None else 0.75 * known + 0.25 * spent
                if not advanced:
                    continue  # it paused itself with its message
            self.sent[id(lane)] = self.sent.get(id(lane), 0) + 1
            lane._stream(self.run, self.sent[id(lane)], self.clock, rate, stepped=steps > 0)
        if not self.active():
            self.stop()
        return True

    @staticmethod
    def _fire(player: weakref.ref[Playback], loop: asyncio.AbstractEventLoop) -> None:
        playback = player()
        if playback is not None:
            playback._on_timer(loop)

    def _on_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if not self.playing:
            return
        now = loop.time()
        elapsed, self._last = now - self._last, now
        try:
            self.pump(elapsed)
        except Exception as error:  # noqa: BLE001  (a timer's exception would only be logged)
            for lane in self.active():
                lane.play.value = False
                lane._set_message("Playing stopped:", f"{type(error).__name__}: {error}")
            self.stop()
            return
        if not self.playing:
            return
        now = loop.time()
        self._due += 1.0 / self.fps
        if self._due < now:  # late (a slow step or a busy machine): the next frame is longer
            self._due = now + 0.5 / self.fps
        self._timer = loop.call_at(self._due, Playback._fire, weakref.ref(self), loop)


def _positive_number(value: Any, name: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _integer(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return int(value)


def _close_tree(widget: ipywidgets.Widget) -> None:
    """Closes a widget and, first, every widget inside it (ipywidgets keeps each one alive
    until it is closed)."""
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    ipywidgets.Widget.close(widget)


def _joules(value: float) -> str:
    """An energy for reading at a glance: 3 significant digits, whole joules from 1000 J."""
    return f"{value:.0f}" if 1e3 <= abs(value) < 1e6 else f"{value:.3g}"


def _typical(values: np.ndarray) -> float:
    """The median of the finite values, or 0 when there are none."""
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else 0.0


class LiveControls(ipywidgets.Box):
    """The widget returned by :func:`interact`; see there.  Its parts are attributes that
    can be set from Python like any ipywidget: ``play`` (toggle), ``step_button``,
    ``reset_button``, ``dt``, ``steps_per_frame``, ``integrator``, ``stiffness`` and
    ``damping`` (dicts of sliders by spring family), ``gravity``, ``wind`` (None when the
    system has nothing the wind acts on), ``breakdown`` (the ledger by mechanism),
    ``message``, ``view`` (:class:`SystemView`), ``speed`` (simulated seconds per wall
    second while playing, one of :data:`SPEEDS`) and ``player`` (:class:`Playback`).  The lab
    bench (``lab``, a :class:`~msprings.plot._lab.Lab`) adds ``show`` (a dict of tick boxes by
    name: :data:`~msprings.plot._lab.SHOW`), ``node`` (the measured node), ``mass`` (its mass,
    kg), ``masses`` (masses to swap, one of them the hidden ``"mystery"``), ``planet``
    (gravity presets), ``stopwatch_button``, ``stopwatch_reset`` and ``readout`` (period and
    amplitude).

    Made by :func:`interact` (which checks the options) and :func:`compare`.

    Parameters
    ----------
    system : System
        The system to play.
    dt : float or None
        Initial step (s); None for the default.
    integrator : str or None
        Integrator name; None for the system's own.
    steps_per_frame : int or None
        Steps of a Step; None for the default.
    damping : {"zeta", "c"}
        What the damping sliders set.
    fps : float
        Frames per second while playing.
    azimuth, elevation : float or None
        Initial view angles (degrees).
    width, height : int
        Canvas size (CSS pixels).
    shared : Comparison, optional
        The comparison whose clock this lane shares.
    node : int, optional
        The measured node.
    mystery_mass : float, optional
        Hidden mass (kg).
    mystery_gravity : float, optional
        Hidden gravity (m/s²).
    show : dict of str to bool, optional
        Lab bench parts to show at once.
    """

    def __init__(self, system: System, *, dt: float | None, integrator: str | None, steps_per_frame: int | None,
                 damping: str, fps: float, azimuth: float | None, elevation: float | None,
                 width: int, height: int, shared: Comparison | None = None, node: int | None = None,
                 mystery_mass: float | None = None, mystery_gravity: float | None = None,
                 show: Mapping[str, bool] | None = None) -> None:
        self.system = system
        self._shared = shared
        self.damping_mode = damping
        self._held: dict[int, tuple[np.ndarray, bool]] = {}
        self._history: list[tuple[float, ...]] = []
        self._critical = math.inf  # s, the critical step shown; set by _update_critical
        if integrator is not None:
            system.integrator = integrator
        self.view = SystemView(
            springs=np.ascontiguousarray(system.springs, dtype="<i4").tobytes(),
            faces=np.ascontiguousarray(system.faces, dtype="<i4").tobytes(),
            fps=fps, width=width, height=height, **self._default_camera(azimuth, elevation))
        self.view.on_msg(self._on_view_message)
        # Unique on a page that shows several kernels' widgets: the process's id and the owner's.
        self.view.clock = f"msprings-{os.getpid():x}-{id(shared if shared is not None else self):x}"

        self.play = ipywidgets.ToggleButton(description="Play", icon="play", tooltip="Play or pause",
                                            layout={"width": "96px"})
        self.step_button = ipywidgets.Button(description="Step", icon="step-forward",
                                             tooltip="One frame: steps_per_frame steps of dt", layout={"width": "96px"})
        self.reset_button = ipywidgets.Button(description="Reset", icon="undo",
                                              tooltip="Back to the initial positions and velocities, t = 0",
                                              layout={"width": "96px"})
        self.speed = ipywidgets.Dropdown(options=list(SPEEDS.items()), value=1.0, tooltip="Slow motion",
                                         layout={"width": "84px"})
        self.message = ipywidgets.HTML("")
        self.breakdown = ipywidgets.HTML("", layout={"margin": "6px 0 0 8px"})

        self.integrator = ipywidgets.Dropdown(
            options=[(_LABELS.get(name, name), name) for name in _core.INTEGRATORS], value=system.integrator,
            description="integrator", style=_DESCRIPTION_STYLE, layout=_SLIDER_LAYOUT)
        # One dt scale for every integrator, centred on symplectic Euler's limit, so that
        # switching integrators moves the critical mark, not the slider.
        reference = self._finite_critical("symplectic_euler") or self._finite_critical() or 0.01
        low, high = reference / 300.0, reference * 4.0
        if dt is None:
            own = self._finite_critical() or reference
            dt = min(0.5 * own, 1.0 / 60.0)
        low, high = min(low, dt), max(high, dt)
        self.dt = ipywidgets.FloatLogSlider(
            value=dt, base=10.0, min=math.log10(low), max=math.log10(high), step=0.001,
            description="dt (s)", readout_format=".3g", style=dict(_DESCRIPTION_STYLE), layout=_SLIDER_LAYOUT)
        self.critical = ipywidgets.HTML("")
        steps_per_frame_given = steps_per_frame
        if steps_per_frame is None:
            steps_per_frame = max(1, min(200, round(1.0 / (fps * dt))))
        self.steps_per_frame = ipywidgets.IntSlider(
            value=steps_per_frame, min=1, max=max(200, steps_per_frame), description="steps per frame",
            style=_DESCRIPTION_STYLE, layout=_SLIDER_LAYOUT)

        self.stiffness: dict[str, ipywidgets.FloatLogSlider] = {}
        self.damping: dict[str, ipywidgets.FloatSlider] = {}
        for family, indices in self._families().items():
            if indices.size == 0:
                continue
            label = "" if family == "all" else f" {family}"
            k = _typical(system.k[indices]) or 1.0
            self.stiffness[family] = ipywidgets.FloatLogSlider(
                value=k, base=10.0, min=math.log10(k) - 1.5, max=math.log10(k) + 1.5, step=0.01,
                description=f"k{label} (N/m)", readout_format=".4r", style=_DESCRIPTION_STYLE, layout=_SLIDER_LAYOUT)
            if damping == "zeta":
                zeta = _typical(system.damping_ratio()[indices])
                self.damping[family] = ipywidgets.FloatSlider(
                    value=zeta, min=0.0, max=max(2.0, zeta), step=0.001, description=f"ζ{label}",
                    readout_format=".3f", style=_DESCRIPTION_STYLE, layout=_SLIDER_LAYOUT,
                    tooltip="damping ratio c / (2 sqrt(k m)); 1 is critical damping")
            else:
                c = _typical(system.c[indices])
                self.damping[family] = ipywidgets.FloatSlider(
                    value=c, min=0.0, max=max(10.0 * c, 1.0), step=max(10.0 * c, 1.0) / 1000.0,
                    description=f"c{label} (N s/m)", readout_format=".3g", style=_DESCRIPTION_STYLE,
                    layout=_SLIDER_LAYOUT)

        gravity = np.array(system.gravity, dtype=float)
        strength = float(np.linalg.norm(gravity))
        self._gravity_direction = gravity / strength if strength > 0 else np.array([0.0, -1.0, 0.0])
        self.gravity = ipywidgets.FloatSlider(
            value=strength, min=0.0, max=max(25.0, strength), step=0.01, description="gravity (m/s²)",
            readout_format=".2f", style=_DESCRIPTION_STYLE, layout=_SLIDER_LAYOUT)
        self.wind: ipywidgets.FloatSlider | None = None
        if self._wind_acts(system):
            wind = np.array(system.wind, dtype=float)
            speed = float(np.linalg.norm(wind))
            self._wind_direction = wind / speed if speed > 0 else np.array([1.0, 0.0, 0.0])
            self.wind = ipywidgets.FloatSlider(
                value=speed, min=0.0, max=max(20.0, 2.0 * speed), step=0.1, description="wind (m/s)",
                readout_format=".1f", style=_DESCRIPTION_STYLE, layout=_SLIDER_LAYOUT)

        # Real time while the steps per frame are the default; else steps_per_frame * dt a frame.
        self._real_time = steps_per_frame_given is None
        self.player = Playback([self], self._frame_period, fps)
        self.speed.observe(lambda change: setattr(self.player, "speed", float(change["new"])), "value")
        self.play.observe(self._on_play, "value")
        self.view.observe(self._on_view_playing, "playing")
        self.step_button.on_click(lambda _button: self.tick())
        self.reset_button.on_click(lambda _button: self.reset())
        self.integrator.observe(self._on_integrator, "value")
        self.dt.observe(self._on_dt, "value")
        self.steps_per_frame.observe(lambda _change: setattr(self, "_real_time", False), "value")
        for family, slider in self.stiffness.items():
            slider.observe(lambda change, family=family: self._on_stiffness(family, change["new"]), "value")
        for family, slider in self.damping.items():
            slider.observe(lambda change, family=family: self._on_damping(family, change["new"]), "value")
        self.gravity.observe(self._on_gravity, "value")
        if self.wind is not None:
            self.wind.observe(self._on_wind, "value")

        self.lab = Lab(self, node=node, mystery_mass=mystery_mass, mystery_gravity=mystery_gravity, show=show)
        self.show, self.node, self.mass, self.masses = self.lab.show, self.lab.node, self.lab.mass, self.lab.masses
        self.planet, self.readout = self.lab.planet, self.lab.readout
        self.stopwatch_button, self.stopwatch_reset = self.lab.stopwatch_button, self.lab.stopwatch_reset

        sliders: list[ipywidgets.Widget] = [self.integrator, ipywidgets.VBox([self.dt, self.critical]),
                                            self.steps_per_frame]
        for family in self.stiffness:
            sliders += [self.stiffness[family], self.damping[family]]
        sliders += [self.gravity, self.planet]
        if self.wind is not None:
            sliders.append(self.wind)
        self.buttons = ipywidgets.HBox([self.play, self.step_button, self.reset_button, self.speed])
        panel = ipywidgets.VBox([self.buttons, *sliders, *self.lab.panel(), self.breakdown, self.message],
                                layout={"padding": "0 0 0 12px", "width": "424px"})
        super().__init__([self.view, panel], layout={"display": "flex", "flex_flow": "row wrap",
                                                     "align_items": "flex-start"})
        self._update_critical()
        self._publish(full=True)

    # -- set-up helpers ---------------------------------------------------------------
    def _default_camera(self, azimuth: float | None, elevation: float | None) -> dict[str, float]:
        """Face-on for a network that lies and moves in the x-y plane, oblique otherwise."""
        system = self.system
        planar = (not np.any(system.x[:, 2]) and not np.any(system.v[:, 2]) and system.gravity[2] == 0.0
                  and system.wind[2] == 0.0 and system.gust == 0.0)
        return {"azimuth": (0.0 if planar else -35.0) if azimuth is None else float(azimuth),
                "elevation": (0.0 if planar else 20.0) if elevation is None else float(elevation)}

    def _families(self) -> dict[str, np.ndarray]:
        families = getattr(self.system, "families", None) or {}
        if not families:
            return {"all": np.arange(self.system.n_springs)}
        return {name: np.asarray(indices) for name, indices in families.items()}

    @staticmethod
    def _wind_acts(system: System) -> bool:
        """Wind moves a system through linear drag or through faces that catch the air."""
        surface = system.n_faces > 0 and system.air_density > 0 and (
            system.drag_coefficient != 0 or system.lift_coefficient != 0)
        return system.drag > 0 or surface

    def _finite_critical(self, integrator: str | None = None) -> float | None:
        value = self.system.critical_dt(integrator)
        return value if math.isfinite(value) and value > 0 else None

    # -- what the controls do -----------------------------------------------------------
    def _on_play(self, change: Mapping[str, Any]) -> None:
        playing = bool(change["new"])
        self.play.description, self.play.icon = ("Pause", "pause") if playing else ("Play", "play")
        if playing:
            self._set_message("")
        self.view.playing = playing
        if self._shared is not None:
            self._shared._lane_played(self, playing)
        elif playing:
            self.player.start()
        else:
            self.player.stop()
            self._publish()  # the kernel's latest state, ahead of the frames the page drew

    def _frame_period(self) -> float:
        """Simulated seconds per frame while playing at speed 1: ``1 / fps`` (real time)
        until ``steps_per_frame`` is set, then ``steps_per_frame * dt``."""
        if self._real_time:
            return 1.0 / self.player.fps
        return self.steps_per_frame.value * self.dt.value

    def _on_view_playing(self, change: Mapping[str, Any]) -> None:
        self.play.value = bool(change["new"])

    def _on_integrator(self, change: Mapping[str, Any]) -> None:
        self.system.integrator = change["new"]
        self._update_critical()

    def _on_dt(self, _change: Mapping[str, Any]) -> None:
        self._show_verdict()

    def _on_stiffness(self, family: str, value: float) -> None:
        indices = self._families()[family]
        self.system.k[indices] = value
        if self.damping_mode == "zeta":
            self._apply_ratio(family, self.damping[family].value)
        self._update_critical()

    def _on_damping(self, family: str, value: float) -> None:
        if self.damping_mode == "zeta":
            self._apply_ratio(family, value)
        else:
            self.system.c[self._families()[family]] = value
        self._update_critical()

    def _apply_ratio(self, family: str, zeta: float) -> None:
        """c = 2 zeta sqrt(k mu) on the family's springs; springs between two pinned nodes
        (no reduced mass, c undefined) keep their c."""
        indices = self._families()[family]
        with np.errstate(invalid="ignore"):
            wanted = self.system.damping_for_ratio(zeta)[indices]
        self.system.c[indices] = np.where(np.isfinite(wanted), wanted, self.system.c[indices])

    def _on_gravity(self, change: Mapping[str, Any]) -> None:
        self.system.gravity = change["new"] * self._gravity_direction
        self._publish()

    def _on_wind(self, change: Mapping[str, Any]) -> None:
        self.system.wind = change["new"] * self._wind_direction
        self._publish()

    def _update_critical(self) -> None:
        """Recomputes the critical step after a change of the system's settings (not every
        frame: its Lanczos iterations cost up to tens of ms) and shows it."""
        self._critical = self.system.critical_dt()
        self._show_verdict()

    def _hidden(self) -> bool:
        """True while the lab bench hides a mystery mass or gravity: then the critical step
        (which gives the mass) and the energies are not shown exactly."""
        return hasattr(self, "lab") and self.lab.mystery

    def _critical_text(self, critical: float) -> str:
        return "?" if self._hidden() else f"{critical:.3g}"

    def _show_verdict(self) -> None:
        """The critical step of the chosen integrator under the dt slider, red once dt is above it."""
        name = self.system.integrator
        label = _LABELS.get(name, name)
        critical, dt = self._critical, self.dt.value
        above = dt > critical
        colour = _DANGER_COLOUR if above else _SAFE_COLOUR
        if self._hidden() and math.isfinite(critical) and critical > 0.0:
            # The critical step gives the mystery mass (2 sqrt(m / k) for one spring): hidden.
            colour = "#757575"
            self.dt.style.handle_color = colour
            self.critical.value = (
                f'<div style="margin-left:{_TRACK_LEFT}px;line-height:1.3;font-size:12px">'
                f'<span style="color:{colour}">critical step for {label}: ? s (hidden with a mystery on)</span></div>')
            self._publish()
            return
        if math.isinf(critical):
            text = f"{label} is stable at any dt"
        elif critical == 0.0:
            text = f"{label} is unstable at any dt here (no damping)"
        else:
            verdict = "above it: unstable" if above else "below it: stable"
            text = (f"critical step {critical:.3g} s for {label}<br>"
                    f"dt = {dt / critical:.2f} × critical, {verdict}")
        self.dt.style.handle_color = colour
        self.critical.value = (
            f'<div style="margin-left:{_TRACK_LEFT}px;line-height:1.3;font-size:12px">{self._gauge(critical, colour)}'
            f'<br><span style="color:{colour}">{text}</span></div>')
        self._publish()

    def _gauge(self, critical: float, colour: str) -> str:
        """An SVG strip under the dt slider's track, on its log scale: green below the
        critical step, red above it, a mark at the critical step and a triangle at dt."""
        width, low, high = float(_TRACK_WIDTH), self.dt.min, self.dt.max

        def place(value: float) -> float:
            if value <= 0:
                return 0.0
            return width * min(max((math.log10(value) - low) / (high - low), 0.0), 1.0)

        split = width if math.isinf(critical) else place(critical)
        mark = "" if split in (0.0, width) else (
            f'<line x1="{split:.1f}" y1="0" x2="{split:.1f}" y2="14" stroke="#111" stroke-width="2"/>')
        at = place(self.dt.value)
        return (
            f'<svg width="{width:.0f}" height="16" role="img" aria-label="dt against the critical step">'
            f'<rect x="0" y="4" width="{split:.1f}" height="6" fill="#a5d6a7"/>'
            f'<rect x="{split:.1f}" y="4" width="{width - split:.1f}" height="6" fill="#ef9a9a"/>{mark}'
            f'<path d="M{at - 5:.1f},16 L{at + 5:.1f},16 L{at:.1f},9 Z" fill="{colour}"/></svg>')

    def _breakdown_table(self) -> str:
        """The ledger by mechanism (J): what was dissipated and what did work, non-zero parts only."""
        ledger = self.system.ledger()
        rows = []
        for title, parts, colour in (("dissipated", DISSIPATION_PARTS, "#8e5ea2"), ("work", WORK_PARTS, "#b8860b")):
            total = sum(getattr(ledger, name) for name in parts)
            shown = ", ".join(f"{name} {'?' if self._hidden() else _joules(getattr(ledger, name))}"
                              for name in parts if getattr(ledger, name) != 0.0)
            amount = "?" if self._hidden() else _joules(total)
            rows.append(f'<tr><td style="color:{colour};padding-right:10px"><b>{title}</b> {amount} J</td>'
                        f'<td style="color:#555">{shown or "none yet"}</td></tr>')
        return f'<table style="font-size:12px;line-height:1.4">{"".join(rows)}</table>'

    def _set_message(self, headline: str, detail: str = "") -> None:
        """Shows a message (plain text) under the sliders, its headline in bold, and on the canvas."""
        self.view.message = f"{headline} {detail}".strip()
        self.message.value = (
            f'<div style="color:{_DANGER_COLOUR};max-width:380px;line-height:1.35"><b>{html.escape(headline)}</b> '
            f'{html.escape(detail)}</div>' if headline else "")

    # -- stepping, dragging and resetting ---------------------------------------------
    @property
    def history(self) -> np.ndarray:
        """The ledger recorded at every frame, shape (H, 6): t (s) and the :data:`ENERGY_BARS` (J)."""
        return np.array(self._history, dtype=float).reshape(-1, 1 + len(ENERGY_BARS))

    def tick(self) -> bool:
        """One frame: ``steps_per_frame`` steps of ``dt``, then a new picture.

        Returns
        -------
        bool
            False (and paused with a message) when the step diverged; the system is then as
            it was before the frame's steps, as :meth:`System.step` leaves it.
        """
        if not self._advance(self.steps_per_frame.value):
            return False
        self._publish()
        return True

    def _advance(self, steps: int) -> bool:
        """``steps`` steps of ``dt`` with the held nodes held; False (paused, with the
        message, the system rolled back and published) when they diverged."""
        system = self.system
        for node, (position, _was_pinned) in self._held.items():
            system.x[node] = position
            system.v[node] = 0.0
        try:
            with warnings.catch_warnings():
                # The controls show the stability verdict beside the dt slider.
                warnings.simplefilter("ignore", StabilityWarning)
                self.lab.step(self.dt.value, steps, self.steps_per_frame.value)
        except _core.DivergenceError as error:
            self.play.value = False
            self._set_message(*self._blow_up(
                f"at t = {error.time:.4g} s (step {error.step})", "the state became non-finite",
                f"The system is as it was before this frame (t = {system.t:.4g} s): lower dt or change the "
                f"integrator and play on, or press Reset. {self.lab.blow_up_note()}".strip()))
            self._publish()
            return False
        except ValueError as error:
            self.play.value = False
            self._set_message("Cannot step:", str(error))
            return False
        if not self.lab.after_step():
            self.play.value = False
            self._publish()
            self._set_message(*self._blow_up(
                f"by t = {system.t:.4g} s", "a spring stretched to over a hundred times its rest length",
                f"{self.lab.blow_up_note()} Lower dt or change the integrator, then press Reset."))
            return False
        return True

    def _blow_up(self, when: str, otherwise: str, advice: str) -> tuple[str, str]:
        """The headline and text of a blow-up's message: why (dt above the critical step shown
        beside the slider, not that of the wild state, or ``otherwise``), then ``advice``."""
        label = _LABELS.get(self.system.integrator, self.system.integrator)
        reason = (f"dt = {self.dt.value:.3g} s is above its critical step {self._critical_text(self._critical)} s"
                  if self.dt.value > self._critical else otherwise)
        return f"{label} blew up", f"{when}: {reason}. {advice}"

    def reveal(self) -> dict[str, float]:
        """The hidden values of the lab bench, shown under its controls too: ``{"mass": kg
        of the mystery mass, "gravity": m/s² of the mystery planet}``.

        Returns
        -------
        dict of str to float
            ``mass`` (kg) and ``gravity`` (m/s²).
        """
        return self.lab.reveal()

    def run(self, frames: int) -> bool:
        """``frames`` ticks, as if playing; stops early at a divergence.

        Parameters
        ----------
        frames : int
            Number of ticks, 0 to 10**9.

        Returns
        -------
        bool
            False if a tick diverged.

        Raises
        ------
        TypeError
            If ``frames`` is not an integer.
        ValueError
            If ``frames`` is out of range.
        """
        frames = _integer(frames, "frames", 0, 10**9)
        return all(self.tick() for _ in range(frames))

    def reset(self) -> None:
        """Back to the initial positions and velocities at t = 0, with an empty ledger; the
        sliders keep their values."""
        self.play.value = False
        self._release_all()
        self.system.reset()
        self.lab.reset()
        self._history.clear()
        self._set_message("")
        self.view.generation += 1
        self._update_critical()

    def close(self) -> None:
        """Pauses (the player's timer stops) and closes the view and every control."""
        if self.comm is None and self.view.comm is None:
            return  # closed already
        self._closed = True  # nothing more to publish
        if self._shared is None:
            self.player.stop()
        self.play.value = False
        _close_tree(self)
        # anywidget keeps every view of a module file for live reloading: the closed view lets go of us.
        self.view.unobserve_all()
        self.view.on_msg(self._on_view_message, remove=True)

    def drag(self, node: int, position: Sequence[float]) -> None:
        """Hold ``node`` at ``position`` (m) with zero velocity until :meth:`release`, as the
        mouse does; while held it is pinned, so the rest of the network pulls on the hand.

        Parameters
        ----------
        node : int
            The node, 0 to n - 1.
        position : sequence of float, shape (3,)
            Where to hold it (m).

        Raises
        ------
        TypeError
            If ``node`` is not an integer.
        ValueError
            If ``node`` is out of range or ``position`` is not 3 finite numbers.
        """
        node = _integer(node, "node", 0, self.system.n_nodes - 1)
        where = np.asarray(position, dtype=float)
        if where.shape != (3,) or not np.all(np.isfinite(where)):
            raise ValueError(f"position must be 3 finite numbers, got {position!r}")
        if node not in self._held:
            self._held[node] = (where, bool(self.system.pinned[node]))
            self.system.pinned[node] = True
        self._held[node] = (where, self._held[node][1])
        self.system.x[node] = where
        self.system.v[node] = 0.0
        if not self.player.playing:  # while playing, the next frame carries it
            self._publish()

    def release(self, node: int) -> None:
        """Let go of a node held by :meth:`drag`: it is free again (unless it was pinned).

        Parameters
        ----------
        node : int
            The node; one not held is ignored.
        """
        held = self._held.pop(int(node), None)
        if held is not None:
            self.system.pinned[node] = held[1]
            self.system.v[node] = 0.0
            self._update_critical()

    def _release_all(self) -> None:
        for node in list(self._held):
            self.release(node)

    def _on_view_message(self, _widget: Any, content: Mapping[str, Any], _buffers: Any) -> None:
        kind = content.get("type")
        if kind == "ack":
            self.player.ack(self, int(content.get("run", -1)), int(content.get("seq", 0)))
        elif kind == "hello":
            self.player.hello(self)
        elif kind == "key":
            owner = self._shared if self._shared is not None else self
            action = content.get("action")
            if action == "play":
                owner.play.value = not owner.play.value
            elif action == "step":
                owner.play.value = False
                owner.tick()
            elif action == "reset":
                owner.reset()
        elif kind == "tick":
            if self.view.playing:
                self.tick()
            else:
                self.view.frame += 1
        elif kind == "drag":
            self.drag(int(content["node"]), content["position"])
        elif kind == "release":
            self.release(int(content["node"]))

    def _publish(self, full: bool = False) -> None:
        """Sends the current state to the view in one message."""
        if not hasattr(self, "view") or getattr(self, "_closed", False):
            return
        system = self.system
        shown, _sample = self._record()
        strain = self._strain()
        # float32 holds up to 3.4e38; a blown-up ledger is drawn at the edge of that range.
        recent = np.asarray(self._history[-_CHART_SAMPLES:], dtype=float).reshape(-1, 1 + len(ENERGY_BARS))
        if hasattr(self, "lab") and self.lab.mystery:
            recent = np.array([[row[0], *self.lab.veil(row[1:])] for row in recent.tolist()]).reshape(recent.shape)
        recent = np.clip(recent, -1e30, 1e30).astype("<f4")
        self.breakdown.value = self._breakdown_table()
        with self.view.hold_sync():
            if full:
                self.view.pinned = np.ascontiguousarray(system.pinned, dtype=np.uint8).tobytes()
            self.view.positions = np.ascontiguousarray(np.clip(system.x, -1e30, 1e30), dtype="<f4").tobytes()
            self.view.strain = strain.tobytes()
            self.view.history = recent.tobytes()
            self.view.energy = shown
            self.view.status = self._status()
            if hasattr(self, "lab"):
                self.lab.publish()
            self.view.frame += 1

    def _record(self) -> tuple[dict[str, float | None], tuple[float, ...]]:
        """The energy fields now, for the view (None where not finite: JSON has no inf or
        NaN), and the ledger sample (t and the fields), added to the history if new."""
        system = self.system
        energy = system.energy()
        values = tuple(float(getattr(energy, name)) for name in ENERGY_BARS)
        shown = {name: value if math.isfinite(value) else None for name, value in zip(ENERGY_BARS, values)}
        sample = (float(system.t), *values)
        blown_up = hasattr(self, "lab") and self.lab.blown_up  # the chart ends at the last sane frame
        if not blown_up and (not self._history or self._history[-1][0] != sample[0]):
            self._history.append(sample)
            del self._history[:-HISTORY_LIMIT]
        if hasattr(self, "lab") and self.lab.mystery:  # the page gets no closer look at a hidden value
            shown = dict(zip(ENERGY_BARS, self.lab.veil(list(shown.values()))))
            sample = (sample[0], *self.lab.veil(sample[1:]))
        return shown, sample

    def _strain(self) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            strain = np.nan_to_num(self.system.strain(), nan=0.0, posinf=1e30, neginf=-1e30)
        return np.clip(strain, -1e30, 1e30).astype("<f4")

    def _status(self) -> dict[str, Any]:
        system, critical = self.system, self._critical
        return {
            "time": float(system.t), "steps": int(system.steps), "dt": float(self.dt.value),
            "critical": critical if math.isfinite(critical) and not self._hidden() else None,
            "hidden": self._hidden() and math.isfinite(critical) and critical > 0.0,
            "integrator": _LABELS.get(system.integrator, system.integrator),
        }

    def _stream(self, run: int, seq: int, clock: float, rate: float, stepped: bool = True) -> None:
        """Sends one frame of playback to the page as a custom message: positions and strains
        as float32 buffers (none when the frame did not step), the rest as JSON."""
        content: dict[str, Any] = {"type": "frame", "run": run, "seq": seq, "clock": clock,
                                   "t": float(self.system.t), "rate": rate}
        buffers: list[bytes] = []
        if stepped:
            shown, sample = self._record()
            content.update(energy=shown, status=self._status(),
                           sample=[min(max(value, -1e30), 1e30) if math.isfinite(value) else 1e30
                                   for value in sample])
            buffers = [np.ascontiguousarray(np.clip(self.system.x, -1e30, 1e30), dtype="<f4").tobytes(),
                       self._strain().tobytes()]
            if hasattr(self, "lab"):  # the lab's overlays travel with the positions they belong to
                content["lab"], overlays = self.lab.frame(buffers[0], buffers[1], shown, content["status"])
                buffers += overlays
            if seq % max(1, round(self.player.fps / 4)) == 0:  # the ledger table, a few times a second
                self.breakdown.value = self._breakdown_table()
        self.view.send(content, buffers)


def interact(system: System, *, dt: float | None = None, integrator: str | None = None,
             steps_per_frame: int | None = None, damping: str = "zeta", fps: float = 30.0,
             azimuth: float | None = None, elevation: float | None = None, width: int = 640,
             height: int = 480, node: int | None = None, mystery_mass: float | None = None,
             mystery_gravity: float | None = None, show: Mapping[str, bool] | None = None) -> LiveControls:
    """Live controls for ``system`` in a notebook: play/pause/step/reset, sliders and a view.

    While playing, the kernel steps the system on a simulated clock and pushes frames to
    the page ``fps`` times a second, each ``speed / fps`` simulated seconds further on (real
    time at speed 1; once ``steps_per_frame`` is given or its slider moved, ``speed *
    steps_per_frame * dt``), taking the whole steps of ``dt`` that reach the clock.  The
    ``speed`` control (1, ½, ¼, 1/10 ×) gives slow motion, every frame advancing less.
    The page draws each frame at its simulated time (between two frames it interpolates the
    positions), so the motion is smooth whatever the delay between kernel and page; a page
    or kernel that cannot keep up slows the clock down rather than piling up frames.  Space,
    → and r on the canvas (click it first) play/pause, step and reset.  To stop playing,
    press Pause or space: interrupting the kernel does not (it plays while the kernel is
    idle, and an idle kernel ignores an interrupt); ``close()`` stops it too.  Play needs the
    kernel's event loop: in plain Python, step with ``tick()`` or ``run(frames)``.  The
    sliders write straight into the system: ``dt`` (its critical step for the chosen
    integrator is marked beside it, red once crossed), the integrator, ``k`` and the
    damping ratio ζ (or ``c``) per spring family (``system.families``), gravity, and wind
    when the system has something the wind acts on.  The canvas shows the network coloured
    by strain (blue compressed, red stretched), pinned nodes as squares, bars of the energy
    fields (J) and a strip chart of their history; beside the sliders, :meth:`System.ledger`
    says which mechanisms dissipated energy and which did work.  Drag a node to move it (it is held with
    zero velocity while the button is down); drag empty space to turn the view.  A step that
    diverges (:class:`msprings.DivergenceError`) pauses the controls and says why; the system
    is as it was before that frame's steps.  A frame that leaves a spring stretched a
    hundredfold, or an energy balance (kinetic + spring + gravity + dissipated - work) that
    has drifted by most of the energy, is a blow-up too: the controls pause, and the view
    keeps showing the last sane frame and its energies.

    The lab bench, each part a named control that starts off as in PhET's "Masses and
    Springs": force and motion arrows on the nodes (spring, damper, gravity, other forces,
    net force, velocity, acceleration; on a sample of about 24 nodes of a large network) with
    a key of round values; a ruler to drag; a stopwatch counting simulated time; reference
    lines through the measured node (rest length, equilibrium, lowest point so far); a
    trace of its displacement and its period and amplitude measured from zero crossings; a
    mass slider and masses to swap onto it (half, once and 2.5 times its mass, and a
    mystery mass, hidden until :meth:`LiveControls.reveal`); gravity presets (Earth 9.81,
    Moon 1.62, Jupiter 24.79 m/s² and a hidden Planet X).

    Parameters
    ----------
    system : System
        The system to play; the controls change it in place.
    dt : float, optional
        Initial step (s); default half the critical step of the integrator, at most 1/60 s.
    integrator : str, optional
        One of :data:`msprings.INTEGRATORS`; default the system's own.
    steps_per_frame : int, optional
        Steps of a Step (and of ``tick()``), 1 to 100000; default about ``1 / (fps dt)``.
        Given, it also sets how far a frame goes while playing (``steps_per_frame * dt``);
        not given, playing runs in real time.
    damping : {"zeta", "c"}
        Damping sliders set the damping ratio ζ (``c = damping_for_ratio(ζ)``, kept when k
        changes) or ``c`` (N s/m) itself.
    fps : float
        Frames per second while playing, in (0, 60].
    azimuth, elevation : float, optional
        Initial view angles (degrees); default face-on for a network in the x-y plane.
    width, height : int
        Canvas size in CSS pixels (320 to 2000).
    node : int, optional
        The measured node: its mass is the mass slider's, the lines, trace and readout are
        its.  Default the free node farthest from the pinned ones (a spring's mass, a
        chain's end).
    mystery_mass : float, optional
        The hidden mass (kg) of the ``"mystery"`` choice; default drawn at random between
        1.3 and 2.2 times the measured node's mass.
    mystery_gravity : float, optional
        The hidden gravity (m/s²) of Planet X; default drawn at random in 3 to 22 m/s², not
        within 1.5 m/s² of a labelled planet.
    show : dict of str to bool, optional
        Lab bench parts to show at once, by name (``{"ruler": True, "net": True}``); the
        names are :data:`msprings.plot._lab.SHOW`.

    Returns
    -------
    LiveControls
        An ipywidgets box; display it (last expression of a cell) to see it.  Drive it from
        Python with ``.tick()``, ``.run(frames)``, ``.reset()``, ``.drag(node, position)``
        or by setting its sliders' ``value``.

    Raises
    ------
    TypeError
        If ``system`` is not a System, a number has the wrong type (``dt``, ``fps``,
        ``steps_per_frame``, ``width``, ``height``, the angles, ``node``), or ``show`` is not
        a dict of bools.
    ValueError
        If a number is out of range (``dt`` and the mystery values finite and > 0, ``fps``
        in (0, 60], ``steps_per_frame`` 1 to 100000, canvas 320 to 2000 px, angles
        finite), ``integrator`` or ``damping`` is unknown, ``node`` is out of range or
        pinned, or ``show`` names an unknown part.

    See Also
    --------
    compare : two or more systems side by side on one clock (``msprings.compare``), e.g.
        one scene with two integrators or two time steps: when one blows up, it stops with
        its message while the other plays on.
    """
    options = _checked(system, dt=dt, integrator=integrator, steps_per_frame=steps_per_frame, damping=damping,
                       fps=fps, azimuth=azimuth, elevation=elevation, width=width, height=height)
    if node is not None:
        node = _integer(node, "node", 0, system.n_nodes - 1)
        if system.pinned[node] and not np.all(system.pinned):
            raise ValueError(f"node {node} is pinned: it cannot move, so there is nothing to measure; "
                             "choose a free node")
    _positive_number(mystery_mass, "mystery_mass", allow_none=True)
    _positive_number(mystery_gravity, "mystery_gravity", allow_none=True)
    if show is not None:
        if not isinstance(show, Mapping):
            raise TypeError(f"show must be a dict of toggle names to True/False, not {type(show).__name__}")
        for name, value in show.items():
            if name not in SHOW:
                raise ValueError(f"show has no toggle {name!r}; choose from {', '.join(SHOW)}")
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"show[{name!r}] must be True or False, not {type(value).__name__}")
    return LiveControls(system, **options, node=node, mystery_mass=mystery_mass,
                        mystery_gravity=mystery_gravity, show=show)


def _checked(system: System, *, dt: float | None, integrator: str | None, steps_per_frame: int | None,
             damping: str, fps: float, azimuth: float | None, elevation: float | None, width: int,
             height: int, name: str = "system") -> dict[str, Any]:
    """The options of :func:`interact`, checked (errors name the argument)."""
    if not isinstance(system, System):
        raise TypeError(f"{name} must be an msprings.System, not {type(system).__name__}")
    _positive_number(dt, "dt", allow_none=True)
    if integrator is not None and integrator not in _core.INTEGRATORS:
        raise ValueError(f"integrator {integrator!r} is unknown; choose one of {', '.join(_core.INTEGRATORS)}")
    if steps_per_frame is not None:
        _integer(steps_per_frame, "steps_per_frame", 1, 100_000)
    if damping not in ("zeta", "c"):
        raise ValueError(f"damping must be 'zeta' or 'c', not {damping!r}")
    fps = _positive_number(fps, "fps")
    if fps > 60:
        raise ValueError(f"fps must be at most 60, got {fps}")
    for label, angle in (("azimuth", azimuth), ("elevation", elevation)):
        if angle is not None:
            if isinstance(angle, bool) or not isinstance(angle, (int, float, np.integer, np.floating)):
                raise TypeError(f"{label} must be a number of degrees, not {type(angle).__name__}")
            if not math.isfinite(angle):
                raise ValueError(f"{label} must be finite, got {angle!r}")
    width = _integer(width, "width", 320, 2000)
    height = _integer(height, "height", 320, 2000)
    return {"dt": dt, "integrator": integrator, "steps_per_frame": steps_per_frame, "damping": damping, "fps": fps,
            "azimuth": azimuth, "elevation": elevation, "width": width, "height": height}


class Comparison(ipywidgets.VBox):
    """The widget returned by :func:`compare`; see there.  ``lanes`` are the
    :class:`LiveControls` of the systems (their own sliders work as in :func:`interact`);
    ``play``, ``step_button``, ``reset_button`` and ``speed`` act on all of them, and
    ``player`` is the :class:`Playback` whose clock they share.

    Parameters
    ----------
    systems : sequence of System
        The systems, checked by :func:`compare`.
    options : sequence of dict
        Each system's :class:`LiveControls` options.
    labels : sequence of str
        A title above each system.
    fps : float
        Frames per second while playing.
    """

    def __init__(self, systems: Sequence[System], options: Sequence[dict[str, Any]], labels: Sequence[str],
                 fps: float) -> None:
        self.fps = fps
        self.lanes = [LiveControls(system, shared=self, **lane_options)
                      for system, lane_options in zip(systems, options)]
        self.player = Playback(self.lanes, lambda: 1.0 / self.fps, fps)
        self._halted: set[int] = set()  # lanes that blew up since the last Play or Reset
        self.play = ipywidgets.ToggleButton(description="Play", icon="play", tooltip="Play or pause all (space)",
                                            layout={"width": "96px"})
        self.step_button = ipywidgets.Button(description="Step", icon="step-forward", layout={"width": "96px"},
                                             tooltip="One frame of the shared clock (→)")
        self.reset_button = ipywidgets.Button(description="Reset", icon="undo", layout={"width": "96px"},
                                              tooltip="All back to t = 0 (r)")
        self.speed = ipywidgets.Dropdown(options=list(SPEEDS.items()), value=1.0, tooltip="Slow motion",
                                         layout={"width": "84px"})
        self.play.observe(self._on_play, "value")
        self.step_button.on_click(lambda _button: self.tick())
        self.reset_button.on_click(lambda _button: self.reset())
        self.speed.observe(lambda change: setattr(self.player, "speed", float(change["new"])), "value")
        columns = []
        for lane, label in zip(self.lanes, labels):
            lane.player = self.player
            lane.buttons.layout.display = "none"
            lane.steps_per_frame.layout.display = "none"  # the shared clock sets the frames
            lane.layout.flex_flow = "column"
            title = ipywidgets.HTML(f"<b>{html.escape(label)}</b>")
            columns.append(ipywidgets.VBox([title, lane], layout={"margin": "0 16px 0 0"}))
        buttons = ipywidgets.HBox([self.play, self.step_button, self.reset_button, self.speed])
        super().__init__([buttons, ipywidgets.HBox(columns, layout={"flex_flow": "row wrap",
                                                                    "align_items": "flex-start"})])

    @property
    def systems(self) -> list[System]:
        return [lane.system for lane in self.lanes]

    def _on_play(self, change: Mapping[str, Any]) -> None:
        playing = bool(change["new"])
        self.play.description, self.play.icon = ("Pause", "pause") if playing else ("Play", "play")
        if playing:
            self._halted.clear()
        for lane in self.lanes:
            lane.play.value = playing
        if playing:
            self.player.start()
        else:
            self.player.stop()
            for lane in self.lanes:
                lane._publish()

    def _lane_played(self, _lane: LiveControls, playing: bool) -> None:
        """A lane stopped by itself (it blew up): the others play on, and when none plays
        the shared Play button pauses."""
        if not playing and self.play.value:
            if _lane.system.t < self.player.clock - _lane.dt.value:  # it stopped short of the clock
                self._halted.add(id(_lane))
            if not any(lane.play.value for lane in self.lanes):
                self.play.value = False

    def tick(self) -> bool:
        """One frame of the shared clock (``1 / fps`` s): every lane takes the steps of its
        ``dt`` that bring it to the clock.  A lane that blew up shows why and stays where it
        was until Play or Reset; the others go on.

        Returns
        -------
        bool
            False when a lane has blown up.
        """
        self.play.value = False
        waiting = [lane for lane in self.lanes if id(lane) not in self._halted]
        if waiting:
            # The lanes are at most one step past the clock, unless stepped on their own.
            behind = min(lane.system.t - lane.dt.value for lane in waiting)
            self.player.clock = max(self.player.clock, behind) + 1.0 / self.fps
        for lane in waiting:
            steps = max(math.ceil((self.player.clock - lane.system.t) / lane.dt.value - 1e-6), 0)
            if not steps:
                continue
            if lane._advance(steps):
                lane._publish()
            else:
                self._halted.add(id(lane))
        return not self._halted

    def run(self, frames: int) -> bool:
        """``frames`` frames of the shared clock.

        Parameters
        ----------
        frames : int
            Number of frames, 0 to 10**9.

        Returns
        -------
        bool
            False when a lane blew up (the others ran on).

        Raises
        ------
        TypeError
            If ``frames`` is not an integer.
        ValueError
            If ``frames`` is out of range.
        """
        frames = _integer(frames, "frames", 0, 10**9)
        for _ in range(frames):
            self.tick()
        return not self._halted

    def close(self) -> None:
        """Pauses (the shared clock's timer stops) and closes every lane and control."""
        if self.comm is None:
            return  # closed already
        self.player.stop()
        for lane in self.lanes:
            lane._closed = True
        self.play.value = False
        for lane in self.lanes:
            lane.close()
        _close_tree(self)

    def reset(self) -> None:
        """Every system back to t = 0."""
        self.play.value = False
        for lane in self.lanes:
            lane.reset()
        self._halted.clear()
        self.player.clock = 0.0


def compare(*systems: System, labels: Sequence[str] | None = None, dt: float | Sequence[float | None] | None = None,
            integrator: str | Sequence[str | None] | None = None, damping: str = "zeta", fps: float = 30.0,
            azimuth: float | None = None, elevation: float | None = None, width: int = 560,
            height: int = 460) -> Comparison:
    """Two or more systems side by side on one clock, with one Play, Step, Reset and speed:
    the way to see numerical stability.  Each system gets the live controls of
    :func:`interact` (its own sliders); playing, every system steps with its own ``dt`` to
    the same simulated time, in real time (or slow motion).  When one blows up, it pauses
    with its message, rolled back to before that frame, while the others play on.

    Parameters
    ----------
    *systems : System
        Two or more distinct systems (``system.copy()`` makes a second one of a scene).
    labels : sequence of str, optional
        A title above each; default "A", "B", ...
    dt, integrator : value or sequence of values, optional
        As in :func:`interact`; one value for all, or one per system (None: the default).
        There is no ``steps_per_frame``: the shared clock moves ``1 / fps`` simulated seconds
        a frame at speed 1 (real time), and each system takes the steps of its own ``dt``.
    damping : {"zeta", "c"}, default "zeta"
        As in :func:`interact`, for every system.
    fps : float, default 30.0
        Frames per second while playing, in (0, 60].
    azimuth, elevation : float, optional
        Initial view angles (degrees), as in :func:`interact`.
    width, height : int, default 560 and 460
        Canvas size of each system in CSS pixels (320 to 2000).

    Returns
    -------
    Comparison
        A widget; ``.lanes[i]`` are the systems' :class:`LiveControls`, and ``.tick()``,
        ``.run(frames)``, ``.reset()`` drive all of them from Python.

    Raises
    ------
    TypeError
        If the systems are passed as one list, an item is not a System, or an option has
        the wrong type (as in :func:`interact`).
    ValueError
        If fewer than two or not distinct systems are given, a per-system sequence does not
        hold one value per system, or an option is out of range (as in :func:`interact`).

    Examples
    --------
    Two integrators at one step, a tenth of symplectic Euler's critical step: symplectic
    Euler stays bounded, while explicit Euler (whose own critical step is far shorter) gains
    energy every step, until it blows up after about 2 s:

    >>> import msprings
    >>> from msprings import scenes
    >>> cloth = scenes.cloth(20)
    >>> dt = 0.1 * cloth.critical_dt()  # s, a tenth of symplectic Euler's critical step
    >>> view = msprings.compare(cloth, cloth.copy(), dt=dt, integrator=["symplectic_euler", "explicit_euler"],
    ...                         labels=["symplectic Euler", "explicit Euler"])
    >>> view.run(150)  # 5 s on the shared clock; in a notebook, show `view` and press Play
    False
    >>> [round(system.t, 1) for system in view.systems]  # explicit Euler blew up, rolled back, stopped
    [5.0, 2.1]

    One integrator at two steps, either side of its critical step, works the same way:
    ``dt=[0.5 * limit, 1.5 * limit]`` with ``limit = cloth.critical_dt()``.
    """
    if len(systems) == 1 and isinstance(systems[0], (list, tuple)):
        raise TypeError("systems must be passed as separate arguments: compare(a, b), or compare(*systems) "
                        f"for a {type(systems[0]).__name__} of them")
    if len(systems) < 2:
        raise ValueError(f"compare needs at least two systems, got {len(systems)}")
    for index, system in enumerate(systems):
        if not isinstance(system, System):
            raise TypeError(f"systems[{index}] must be an msprings.System, not {type(system).__name__}")
    if len({id(system) for system in systems}) != len(systems):
        raise ValueError("compare needs distinct systems: pass system.copy() for a second copy of one")
    count = len(systems)

    def each(value: Any, name: str) -> list[Any]:
        if isinstance(value, np.ndarray):  # an array of values, one per system, or a single one
            value = value.tolist()
        if isinstance(value, (list, tuple)):
            if len(value) != count:
                raise ValueError(f"{name} must be one value or {count} values (one per system), got {len(value)}")
            return list(value)
        return [value] * count

    if labels is None:
        labels = [chr(ord("A") + index) if index < 26 else str(index + 1) for index in range(count)]
    elif not isinstance(labels, str):
        try:
            labels = list(labels)
        except TypeError:
            raise TypeError(f"labels must be a sequence of strings, one per system, not "
                            f"{type(labels).__name__}") from None
    labels = each(labels, "labels")
    if not all(isinstance(label, str) for label in labels):
        raise TypeError("labels must be strings")
    options = [_checked(system, dt=step, integrator=name, steps_per_frame=None, damping=damping, fps=fps,
                        azimuth=azimuth, elevation=elevation, width=width, height=height, name=f"systems[{index}]")
               for index, (system, step, name) in enumerate(
                   zip(systems, each(dt, "dt"), each(integrator, "integrator")))]
    return Comparison(systems, options, labels, options[0]["fps"])
