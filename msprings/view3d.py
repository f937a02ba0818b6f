"""Interactive 3-D views of mass-spring systems in the browser, drawn with plotly: the
module :mod:`msprings.plot.view3d` under a shorter name.

``import msprings.view3d`` gives that module itself, not a copy of its names:
``msprings.view3d is msprings.plot.view3d``, so whatever is set on one is seen by its
functions.  Importing it loads neither plotly (loaded when a view is made) nor matplotlib.
"""
import sys

from .plot import view3d
from .plot.view3d import *  # noqa: F403  (its public names, for readers and type checkers)
from .plot.view3d import __all__

sys.modules[__name__] = view3d
