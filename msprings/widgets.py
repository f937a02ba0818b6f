"""Live controls for a mass-spring system in a notebook (ipywidgets and anywidget): the
module :mod:`msprings.plot.widgets` under a shorter name.

``import msprings.widgets`` gives that module itself, not a copy of its names:
``msprings.widgets is msprings.plot.widgets``, so whatever is set on one is seen by its
functions.  :func:`msprings.interact` calls its :func:`interact`.
"""
import sys

from .plot import widgets
from .plot.widgets import *  # noqa: F403  (its public names, for readers and type checkers)
from .plot.widgets import __all__

sys.modules[__name__] = widgets
