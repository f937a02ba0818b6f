"""Animations of a recorded run: :func:`animate` (a FuncAnimation that moves the artists
of one :mod:`~msprings.plot._draw` drawing from frame to frame), :func:`save_animation` (GIF or
MP4) and :func:`to_html` (a player for Jupyter).

Part of :mod:`msprings.plot`, which re-exports its public names.
"""
from __future__ import annotations

import base64
import io
import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation as mpl_animation
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image

from ._draw import ColorBy, _check_choice, _check_view, _Drawing, _frame_scene, _new_axes, _plan, _scene_scale
from ..trajectory import Trajectory

__all__ = ["SceneAnimation", "animate", "save_animation", "to_html"]

_ANIMATION_SIZE = (6.0, 4.8)  # inches: 600 x 480 pixels at matplotlib's default 100 dpi
_GIF_COLORS = 256


class SceneAnimation(mpl_animation.FuncAnimation):
    """A :class:`~matplotlib.animation.FuncAnimation` of a trajectory.

    Every frame moves the same artists (new vertices, segments, marker positions and
    colours); nothing is cleared or redrawn from scratch.  :func:`save_animation` and
    :func:`to_html` render the axes, ticks and colour bar once and only the moving
    artists per frame.

    Attributes: ``fps`` (frames per second, used by :func:`save_animation`),
    ``interval`` (ms between frames on screen), ``frame_count``, ``axes`` (the 3-D Axes
    it draws in; ``axes.get_figure()`` is the figure) and ``norm`` (the colour scale
    shared by every frame; None without colour).

    Made by :func:`animate`, not by hand.

    Parameters
    ----------
    drawing : _Drawing
        The picture of the first frame, whose artists the frames move.
    update : callable
        ``update(frame)`` moves the artists to record ``frame`` and returns them.
    frames : sequence of int
        The record index of each frame.
    interval : float
        Delay between frames on screen (ms).
    fps : float
        Frame rate for saving (frames per second).
    """

    def __init__(self, drawing: _Drawing, update: Callable[[int], list[Any]], frames: Sequence[int],
                 interval: float, fps: float) -> None:
        super().__init__(drawing.ax.get_figure(), update, frames=frames, interval=interval, blit=False,
                         cache_frame_data=False)
        self.axes = drawing.ax
        self.fps = fps
        self.interval = interval
        self.frame_count = len(frames)
        self.norm = drawing.norm
        self._drawing = drawing
        self._show = update

    def show_frame(self, index: int) -> None:
        """Moves the picture to frame ``index`` (e.g. to save a still of it with
        ``anim.axes.get_figure().savefig``).

        Parameters
        ----------
        index : int
            Frame number, 0 to ``frame_count - 1`` (negative counts from the end).

        Raises
        ------
        IndexError
            If ``index`` is out of range.
        """
        if not -self.frame_count <= index < self.frame_count:
            raise IndexError(f"frame {index} is outside 0..{self.frame_count - 1}")
        self._show(index % self.frame_count)

    def render(self, frames: Sequence[int] | None = None, dpi: float | None = None) -> Iterator[np.ndarray]:
        """The pictures (height, width, 4) of ``frames`` (default all) as RGBA bytes, at
        ``dpi`` (default the figure's).  The still parts of the figure are drawn once; each
        frame restores them and draws the moving artists on top.

        Parameters
        ----------
        frames : sequence of int, optional
            Frame numbers; default all.
        dpi : float, optional
            Resolution (dots per inch); default the figure's.

        Yields
        ------
        numpy.ndarray of uint8, shape (height, width, 4)
            Each frame's picture, RGBA.
        """
        figure = self.axes.get_figure()
        order = range(self.frame_count) if frames is None else [int(index) for index in frames]
        moving = self._drawing.artists()
        home_canvas, home_dpi = figure.canvas, figure.dpi
        canvas = FigureCanvasAgg(figure)
        try:
            if dpi is not None:
                figure.set_dpi(dpi)
            for artist in moving:
                artist.set_animated(True)
            canvas.draw()
            still = canvas.copy_from_bbox(figure.bbox)
            renderer = canvas.get_renderer()
            for index in order:
                self.show_frame(index)
                canvas.restore_region(still)
                for artist in moving:
                    if hasattr(artist, "do_3d_projection"):
                        artist.do_3d_projection()
                    artist.draw(renderer)
                yield np.array(canvas.buffer_rgba())
        finally:
            for artist in moving:
                artist.set_animated(False)
            figure.set_dpi(home_dpi)
            figure.set_canvas(home_canvas)


def animate(trajectory: Trajectory, *, fps: float = 30.0, color_by: ColorBy = "strain", interval: float | None = None,
            figsize: tuple[float, float] | None = None, every: int = 1, **draw_options: Any) -> SceneAnimation:
    """An animation of a recorded run, one frame per record (every ``every``-th record).

    The axis limits and the colour scale are fixed over the whole run (they cover every
    node and collider in every frame; a run whose values are all round-off gets the
    neutral colour), so the motion reads true.  Display it with :func:`to_html` in
    Jupyter, or save it with :func:`save_animation`.

    Parameters
    ----------
    trajectory : Trajectory
        The run (:meth:`msprings.System.run`).
    fps : float, default 30.0
        Frame rate used when saving (frames per second), > 0.
    color_by : {"strain", "tension", None}, default "strain"
        What the colour shows, as in :func:`draw`.
    interval : float, optional
        Delay between frames on screen (ms); default ``1000 / fps``.
    figsize : (float, float), optional
        Figure size (inches); default 6 x 4.8.
    every : int, default 1
        Use every ``every``-th record (>= 1).
    **draw_options
        Keywords of :func:`draw`: ``cmap``, ``show_nodes``, ``show_colliders``,
        ``surface``, ``springs``, ``title``, ``vmax``, ``elev``, ``azim``.

    Returns
    -------
    SceneAnimation
        The animation.

    Raises
    ------
    TypeError
        If ``trajectory`` is not a Trajectory, or a keyword is not one of :func:`draw`'s
        listed above.
    ValueError
        If ``every`` is not an integer >= 1, ``fps`` is not finite and > 0, or a drawing
        option is bad (as in :func:`draw`).
    KeyError
        If ``cmap`` names no matplotlib colormap.
    """
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"animate() takes a Trajectory (System.run), not {type(trajectory).__name__}")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    if not (isinstance(fps, (int, float)) and fps > 0 and math.isfinite(fps)):
        raise ValueError(f"fps must be > 0, got {fps!r}")
    options: dict[str, Any] = {"cmap": None, "show_nodes": "auto", "show_colliders": True, "surface": True,
                               "springs": "auto", "title": None, "vmax": None, "elev": None, "azim": None}
    unknown = set(draw_options) - set(options)
    if unknown:
        raise TypeError(f"animate() got unexpected keyword arguments {sorted(unknown)}")
    options.update(draw_options)
    _check_choice("show_nodes", options["show_nodes"])
    view = _check_view(options.pop("elev"), options.pop("azim"))
    records = list(range(0, len(trajectory), int(every)))
    scenes = [_frame_scene(trajectory.frame(r)) for r in records]
    plan = _plan(scenes[0], color_by, options.pop("surface"), options.pop("springs"))
    scale = _scene_scale(scenes, plan, color_by, options.pop("cmap"), options.pop("vmax"))
    positions = trajectory.positions[records]
    extent = np.stack([positions.min(axis=(0, 1)), positions.max(axis=(0, 1))])
    ax = _new_axes(figsize, _ANIMATION_SIZE)
    shifts = []
    for index, shape in enumerate(scenes[0].colliders):
        moves = np.array([scene.colliders[index].center - shape.center for scene in scenes])
        shifts.append(np.stack([moves.min(axis=0), moves.max(axis=0)]))
    drawing = _Drawing(ax, scenes[0], color_by=color_by, plan=plan, scale=scale, view=view, extent=extent,
                       shifts=shifts, own_figure=True, animated=True, **options)

    def update(frame: int) -> list[Any]:
        return drawing.update(scenes[frame])

    return SceneAnimation(drawing, update, list(range(len(scenes))),
                          1000.0 / fps if interval is None else float(interval), float(fps))


def _palette_frames(anim: SceneAnimation, dpi: float | None) -> Image.Image:
    """A palette of _GIF_COLORS colours for every frame: made from the first, middle and
    last frames side by side (one palette keeps colours steady and the file small)."""
    picks = sorted({0, anim.frame_count // 2, anim.frame_count - 1})
    # Every other pixel of each picture is plenty to find the colours.
    strip = np.concatenate([rgba[::2, ::2, :3] for rgba in anim.render(picks, dpi)], axis=1)
    return Image.fromarray(np.ascontiguousarray(strip)).quantize(_GIF_COLORS, method=Image.Quantize.MEDIANCUT,
                                                                 dither=Image.Dither.NONE)


def _quantized_frames(anim: SceneAnimation, dpi: float | None) -> Iterator[Image.Image]:
    palette = _palette_frames(anim, dpi)
    for rgba in anim.render(dpi=dpi):
        yield Image.fromarray(rgba, "RGBA").convert("RGB").quantize(palette=palette, dither=Image.Dither.NONE)


def save_animation(anim: mpl_animation.Animation, path: str | Path, *, fps: float | None = None,
                   dpi: float | None = None) -> Path:
    """Writes an animation to ``path``: ``.gif`` with Pillow, ``.mp4`` with ffmpeg.

    ``fps`` (frames per second) defaults to the animation's own (:func:`animate`), else 30;
    ``dpi`` to the figure's.  An animation from :func:`animate` is rendered with its still
    parts drawn once, and a GIF of it keeps one palette of 256 colours for every frame
    (Pillow's optimiser then stores only what changes).

    Parameters
    ----------
    anim : matplotlib.animation.Animation
        The animation (from :func:`animate`, or any matplotlib animation).
    path : str or pathlib.Path
        The file to write, ``.gif`` or ``.mp4``.
    fps : float, optional
        Frame rate (frames per second); default the animation's own, else 30.
    dpi : float, optional
        Resolution (dots per inch); default the figure's.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    RuntimeError
        If an ``.mp4`` is asked for and ffmpeg is not installed.
    ValueError
        If the suffix is neither ``.gif`` nor ``.mp4``.
    """
    target = Path(path)
    rate = float(fps if fps is not None else getattr(anim, "fps", 30.0))
    suffix = target.suffix.lower()
    writer: mpl_animation.AbstractMovieWriter
    if suffix == ".gif":
        if isinstance(anim, SceneAnimation):
            first, *rest = _quantized_frames(anim, dpi)
            first.save(target, format="GIF", save_all=True, append_images=rest, duration=1000.0 / rate, loop=0,
                       optimize=True)
            return target
        writer = mpl_animation.PillowWriter(fps=rate)
    elif suffix == ".mp4":
        if not mpl_animation.FFMpegWriter.isAvailable():
            raise RuntimeError(
                "saving an .mp4 needs the ffmpeg program, which matplotlib cannot find: install ffmpeg "
                "(e.g. `apt install ffmpeg`, `conda install ffmpeg`) or save a .gif instead"
            )
        writer = mpl_animation.FFMpegWriter(fps=rate)
    else:
        raise ValueError(f"cannot save an animation as {target.suffix or 'a file without suffix'!r}: use .gif or .mp4")
    anim.save(str(target), writer=writer, dpi=dpi)
    return target


_PLAYER = """<div id="{uid}" style="display:inline-block;font-family:sans-serif;font-size:13px">
<img alt="animation" style="display:block" src="data:image/png;base64,{first}">
<div style="display:flex;align-items:center;gap:6px;margin-top:4px">
<button type="button" style="width:4.5em">pause</button>
<input type="range" min="0" max="{last}" value="0" style="flex:1">
<span style="min-width:9em;text-align:right">frame 1 of {count}</span>
</div>
</div>
<script>
(function () {{
  var root = document.getElementById("{uid}");
  var frames = [{frames}];
  var image = root.querySelector("img"), button = root.querySelector("button");
  var slider = root.querySelector("input"), label = root.querySelector("span");
  var current = 0, timer = null;
  function show(index) {{
    current = (index + frames.length) % frames.length;
    image.src = "data:image/png;base64," + frames[current];
    slider.value = current;
    label.textContent = "frame " + (current + 1) + " of " + frames.length;
  }}
  function play() {{
    timer = setInterval(function () {{ show(current + 1); }}, {interval});
    button.textContent = "pause";
  }}
  function pause() {{ clearInterval(timer); timer = null; button.textContent = "play"; }}
  button.onclick = function () {{ if (timer === null) {{ play(); }} else {{ pause(); }} }};
  slider.oninput = function () {{ pause(); show(parseInt(slider.value, 10)); }};
  play();
}})();
</script>"""


def to_html(anim: mpl_animation.Animation) -> str:
    """The animation as a self-contained HTML/JavaScript player (frames embedded as PNG
    images; play/pause and a frame slider) for ``IPython.display.HTML`` in Jupyter: no
    ffmpeg needed.  The figure of an animation from :func:`animate` is closed afterwards,
    so Jupyter does not show it again as a still picture below the player.

    Parameters
    ----------
    anim : matplotlib.animation.Animation
        The animation (from :func:`animate`, or any matplotlib animation).

    Returns
    -------
    str
        The HTML.
    """
    if not isinstance(anim, SceneAnimation):
        return anim.to_jshtml(fps=getattr(anim, "fps", None), default_mode="loop")
    encoded = []
    try:
        for frame in _quantized_frames(anim, None):
            buffer = io.BytesIO()
            frame.save(buffer, format="PNG")
            encoded.append(base64.b64encode(buffer.getvalue()).decode("ascii"))
    finally:
        plt.close(anim.axes.get_figure())
    return _PLAYER.format(uid=f"msprings-animation-{uuid.uuid4().hex}", first=encoded[0], last=len(encoded) - 1,
                          count=len(encoded), frames=",".join(f'"{frame}"' for frame in encoded),
                          interval=max(1, round(anim.interval)))
