"""Live notebook controls: ``msprings.interact(system)`` plays a system with sliders,
energy bars, a running energy ledger and a view you can turn and grab.

Design
------
All physics stays in Python and C.  A tick runs ``system.step(dt, steps_per_frame)`` in the
kernel and publishes one frame: positions and spring strains as float32 bytes, the energy
ledger and a bounded history of it.  The browser only draws and reports the mouse.

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

The lab bench (arrows, ruler, stopwatch, reference lines, period readout, trace, mass swap,
gravity presets) is computed in :mod:`msprings.plot._lab` and drawn by its own functions in
the same ES module.

The view's own timer drives playing rather than an ``ipywidgets.Play``: it asks the kernel
for the next tick only after the previous frame has arrived, so a slow step slows the
animation down instead of piling up ticks in the kernel's queue, and the frame rate stays
bounded by ``fps``.

This module is also reachable as :mod:`msprings.widgets`, the same module object.
"""
from __future__ import annotations

import html
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import numpy as np
import traitlets

from .. import _core
from .._system import Ledger, StabilityWarning, System
from ._lab import SHOW, Lab, LabViewTraits

__all__ = ["DISSIPATION_PARTS", "ENERGY_BARS", "HISTORY_LIMIT", "WORK_PARTS", "LiveControls", "SystemView", "interact"]

ENERGY_BARS = ("kinetic", "spring", "gravity", "dissipated", "work")
"""The energy fields (J) shown as bars and in the ledger plot, in that order."""

DISSIPATION_PARTS = Ledger._fields[:Ledger._fields.index("wind")]
"""The fields of :meth:`System.ledger` that make up ``dissipated`` (they come first)."""

WORK_PARTS = Ledger._fields[len(DISSIPATION_PARTS):]
"""The fields of :meth:`System.ledger` that make up ``work``."""

HISTORY_LIMIT = 20_000
"""Samples of the ledger kept in Python (the oldest are dropped beyond it)."""

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
    and ``history`` float32 (H, 6): time (s) and the :data:`ENERGY_BARS` (J).  The view
    sends ``{"type": "tick"}`` while ``playing``, and ``{"type": "drag", "node": i,
    "position": [x, y, z]}`` / ``{"type": "release", "node": i}`` when a node is grabbed.
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
    azimuth = traitlets.Float(0.0).tag(sync=True)
    elevation = traitlets.Float(0.0).tag(sync=True)
    width = traitlets.Int(640).tag(sync=True)
    height = traitlets.Int(480).tag(sync=True)


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
    ``message`` and ``view`` (:class:`SystemView`).  The lab bench (``lab``, a
    :class:`~msprings.plot._lab.Lab`) adds ``show`` (a dict of tick boxes by name:
    :data:`~msprings.plot._lab.SHOW`), ``node`` (the measured node), ``mass`` (its mass,
    kg), ``masses`` (masses to swap, one of them the hidden ``"mystery"``), ``planet``
    (gravity presets), ``stopwatch_button``, ``stopwatch_reset`` and ``readout`` (period and
    amplitude).
    """

    def __init__(self, system: System, *, dt: float | None, integrator: str | None, steps_per_frame: int | None,
                 damping: str, fps: float, azimuth: float | None, elevation: float | None,
                 width: int, height: int, node: int | None = None, mystery_mass: float | None = None,
                 mystery_gravity: float | None = None, show: Mapping[str, bool] | None = None) -> None:
        self.system = system
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

        self.play = ipywidgets.ToggleButton(description="Play", icon="play", tooltip="Play or pause",
                                            layout={"width": "96px"})
        self.step_button = ipywidgets.Button(description="Step", icon="step-forward",
                                             tooltip="One frame: steps_per_frame steps of dt", layout={"width": "96px"})
        self.reset_button = ipywidgets.Button(description="Reset", icon="undo",
                                              tooltip="Back to the initial positions and velocities, t = 0",
                                              layout={"width": "96px"})
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

        self.play.observe(self._on_play, "value")
        self.view.observe(self._on_view_playing, "playing")
        self.step_button.on_click(lambda _button: self.tick())
        self.reset_button.on_click(lambda _button: self.reset())
        self.integrator.observe(self._on_integrator, "value")
        self.dt.observe(self._on_dt, "value")
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
        buttons = ipywidgets.HBox([self.play, self.step_button, self.reset_button])
        panel = ipywidgets.VBox([buttons, *sliders, *self.lab.panel(), self.breakdown, self.message],
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

    def _show_verdict(self) -> None:
        """The critical step of the chosen integrator under the dt slider, red once dt is above it."""
        name = self.system.integrator
        label = _LABELS.get(name, name)
        critical, dt = self._critical, self.dt.value
        above = dt > critical
        colour = _DANGER_COLOUR if above else _SAFE_COLOUR
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
            shown = ", ".join(f"{name} {_joules(getattr(ledger, name))}" for name in parts
                              if getattr(ledger, name) != 0.0)
            rows.append(f'<tr><td style="color:{colour};padding-right:10px"><b>{title}</b> {_joules(total)} J</td>'
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
        """One frame: ``steps_per_frame`` steps of ``dt``, then a new picture.  Returns False
        (and pauses with a message) when the step diverged; the system is then as it was
        before the frame's steps, as :meth:`System.step` leaves it."""
        system = self.system
        for node, (position, _was_pinned) in self._held.items():
            system.x[node] = position
            system.v[node] = 0.0
        try:
            with warnings.catch_warnings():
                # The controls show the stability verdict beside the dt slider.
                warnings.simplefilter("ignore", StabilityWarning)
                system.step(self.dt.value, self.steps_per_frame.value)
        except _core.DivergenceError as error:
            self.play.value = False
            label = _LABELS.get(system.integrator, system.integrator)
            critical = system.critical_dt()
            reason = (f"dt = {self.dt.value:.3g} s is above its critical step {critical:.3g} s"
                      if self.dt.value > critical else "the state became non-finite")
            self._set_message(
                f"{label} blew up", f"at t = {error.time:.4g} s (step {error.step}): {reason}. The system is as "
                f"it was before this frame (t = {system.t:.4g} s): lower dt or change the integrator and play "
                f"on, or press Reset. {self.lab.blow_up_note()}".strip())
            self._publish()
            return False
        except ValueError as error:
            self.play.value = False
            self._set_message("Cannot step:", str(error))
            return False
        if not self.lab.after_step():
            self.play.value = False
            self._publish()
            label = _LABELS.get(system.integrator, system.integrator)
            critical = system.critical_dt()
            reason = (f"dt = {self.dt.value:.3g} s is above its critical step {critical:.3g} s"
                      if self.dt.value > critical else "a spring stretched to over a hundred times its rest length")
            self._set_message(
                f"{label} blew up", f"by t = {system.t:.4g} s: {reason}. {self.lab.blow_up_note()} Lower dt or "
                "change the integrator, then press Reset.")
            return False
        self._publish()
        return True

    def reveal(self) -> dict[str, float]:
        """The hidden values of the lab bench, shown under its controls too: ``{"mass": kg
        of the mystery mass, "gravity": m/s² of the mystery planet}``."""
        return self.lab.reveal()

    def run(self, frames: int) -> bool:
        """``frames`` ticks, as if playing; stops early (False) at a divergence."""
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

    def drag(self, node: int, position: Sequence[float]) -> None:
        """Hold ``node`` at ``position`` (m) with zero velocity until :meth:`release`, as the
        mouse does; while held it is pinned, so the rest of the network pulls on the hand."""
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
        self._publish()

    def release(self, node: int) -> None:
        """Let go of a node held by :meth:`drag`: it is free again (unless it was pinned)."""
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
        if kind == "tick":
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
        if not hasattr(self, "view"):
            return
        system = self.system
        energy = system.energy()
        values = tuple(float(getattr(energy, name)) for name in ENERGY_BARS)
        # JSON has no inf or NaN: a blown-up value goes to the view as null ("overflow").
        shown = {name: value if math.isfinite(value) else None for name, value in zip(ENERGY_BARS, values)}
        sample = (float(system.t), *values)
        if not self._history or self._history[-1][0] != sample[0]:
            self._history.append(sample)
            del self._history[:-HISTORY_LIMIT]
        with np.errstate(invalid="ignore", over="ignore"):
            strain = np.nan_to_num(system.strain(), nan=0.0, posinf=1e30, neginf=-1e30)
        # float32 holds up to 3.4e38; a blown-up ledger is drawn at the edge of that range.
        recent = np.clip(np.asarray(self._history[-_CHART_SAMPLES:]), -1e30, 1e30).astype("<f4")
        critical = self._critical
        self.breakdown.value = self._breakdown_table()
        with self.view.hold_sync():
            if full:
                self.view.pinned = np.ascontiguousarray(system.pinned, dtype=np.uint8).tobytes()
            self.view.positions = np.ascontiguousarray(np.clip(system.x, -1e30, 1e30), dtype="<f4").tobytes()
            self.view.strain = np.clip(strain, -1e30, 1e30).astype("<f4").tobytes()
            self.view.history = recent.tobytes()
            self.view.energy = shown
            self.view.status = {
                "time": float(system.t), "steps": int(system.steps), "dt": float(self.dt.value),
                "critical": critical if math.isfinite(critical) else None,
                "integrator": _LABELS.get(system.integrator, system.integrator),
            }
            if hasattr(self, "lab"):
                self.lab.publish()
            self.view.frame += 1


def interact(system: System, *, dt: float | None = None, integrator: str | None = None,
             steps_per_frame: int | None = None, damping: str = "zeta", fps: float = 30.0,
             azimuth: float | None = None, elevation: float | None = None, width: int = 640,
             height: int = 480, node: int | None = None, mystery_mass: float | None = None,
             mystery_gravity: float | None = None, show: Mapping[str, bool] | None = None) -> LiveControls:
    """Live controls for ``system`` in a notebook: play/pause/step/reset, sliders and a view.

    Each frame runs ``system.step(dt, steps_per_frame)`` in the kernel and redraws.  The
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
        Steps per frame, 1 to 100000; default about real time at ``fps``.
    damping : {"zeta", "c"}
        Damping sliders set the damping ratio ζ (``c = damping_for_ratio(ζ)``, kept when k
        changes) or ``c`` (N s/m) itself.
    fps : float
        Most frames per second while playing, in (0, 60].
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
    """
    if not isinstance(system, System):
        raise TypeError(f"system must be an msprings.System, not {type(system).__name__}")
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
    for name, angle in (("azimuth", azimuth), ("elevation", elevation)):
        if angle is not None:
            if isinstance(angle, bool) or not isinstance(angle, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} must be a number of degrees, not {type(angle).__name__}")
            if not math.isfinite(angle):
                raise ValueError(f"{name} must be finite, got {angle!r}")
    width = _integer(width, "width", 320, 2000)
    height = _integer(height, "height", 320, 2000)
    if node is not None:
        node = _integer(node, "node", 0, system.n_nodes - 1)
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
    return LiveControls(system, dt=dt, integrator=integrator, steps_per_frame=steps_per_frame, damping=damping,
                        fps=fps, azimuth=azimuth, elevation=elevation, width=width, height=height, node=node,
                        mystery_mass=mystery_mass, mystery_gravity=mystery_gravity, show=show)
