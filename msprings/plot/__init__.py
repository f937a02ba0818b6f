"""Pictures and animations of mass-spring systems with matplotlib.

- :func:`draw` shows a :class:`~msprings.System`, a recorded frame or the last frame of a
  :class:`~msprings.trajectory.Trajectory` in 3-D from a chosen viewpoint: surfaces lit by
  a light over the viewer's shoulder, springs where they help (not over a surface with
  thousands of them), strain or tension in colour on the springs or else on the faces, on a
  scale that shows no round-off, pinned nodes marked, colliders drawn as solids;
- :func:`animate` turns a trajectory into a :class:`matplotlib.animation.FuncAnimation`
  that moves the same artists from frame to frame on one colour scale
  (:func:`save_animation` writes it as GIF or MP4, :func:`to_html` embeds it in Jupyter);
- :func:`plot_energy` plots the energy ledger of a run, and where the energy went;
- :func:`plot_stability` and :func:`compare_integrators` show the integrators' stability,
  in theory (the damped oscillator of :mod:`msprings.stability`) and on a real system.

The simulation's y axis is up.  matplotlib's 3-D axes put their third axis up, so a point
(x, y, z) of the simulation is drawn at matplotlib's (x, z, y): gravity points down on the
screen.  The axes are labelled with the simulation's names.  Units are SI throughout.

This subpackage holds every picture of msprings.  The matplotlib pictures above are drawn
by :mod:`msprings.plot._draw`, animated by :mod:`msprings.plot._animation` and charted by
:mod:`msprings.plot._charts`, the only modules of msprings that import matplotlib
(``pip install msprings[plot]``); :mod:`msprings.plot.view3d` draws interactive 3-D views
with plotly (:func:`view` and :func:`save_view` here, also :mod:`msprings.view3d`), and
:mod:`msprings.plot.widgets` gives the live notebook controls of :func:`msprings.interact`
(also :mod:`msprings.widgets`) with their canvas script in ``static/``.

This module loads each name on first use, from the module that defines it: the
matplotlib names load matplotlib, ``view`` and ``save_view`` plotly when called, and importing
:mod:`msprings.plot.view3d` or :mod:`msprings.plot.widgets` loads neither matplotlib nor
the other's library, so each works with its own extra alone.  ``import msprings`` loads
none of them.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._animation import SceneAnimation, animate, save_animation, to_html
    from ._charts import compare_integrators, plot_energy, plot_stability
    from ._draw import STRAIN_LABEL, TENSION_LABEL, collider_polygons, draw
    from .view3d import save_view, view

__all__ = [
    "STRAIN_LABEL",
    "TENSION_LABEL",
    "SceneAnimation",
    "animate",
    "collider_polygons",
    "compare_integrators",
    "draw",
    "plot_energy",
    "plot_stability",
    "save_animation",
    "to_html",
]

# The module that defines each name given here.
_HOMES = {
    "STRAIN_LABEL": "_draw",
    "TENSION_LABEL": "_draw",
    "collider_polygons": "_draw",
    "draw": "_draw",
    "SceneAnimation": "_animation",
    "animate": "_animation",
    "save_animation": "_animation",
    "to_html": "_animation",
    "compare_integrators": "_charts",
    "plot_energy": "_charts",
    "plot_stability": "_charts",
    "view": "view3d",
    "save_view": "view3d",
}


def __getattr__(name: str) -> Any:
    """The names of ``__all__`` (loading matplotlib) and ``view`` and ``save_view`` (the
    interactive 3-D views of :mod:`msprings.plot.view3d`, which load plotly when called),
    each imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
