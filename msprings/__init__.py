"""msprings: mass-spring simulation with a C core and zero-copy NumPy state.

Build a network with :class:`System` (positions, springs, masses, stiffness, damping, pins),
step it with :meth:`System.step`, and read or write its state through NumPy arrays that are
the C memory itself.  :class:`Ensemble` steps many systems of one topology in one call.
Units are SI; y is up.
"""
from typing import TYPE_CHECKING

try:
    from ._core import INTEGRATORS, DivergenceError
except ImportError as error:  # pragma: no cover - depends on how the package was installed
    raise ImportError(
        "the msprings C core (msprings._core) is not built: install with `pip install -e .` "
        "(or `pip install .` and run from outside the source tree)"
    ) from error
from . import _core, io
from ._gradient import Gradient, PositionFit, Tangent
from ._system import Energy, Ledger, SolverWarning, StabilityWarning, System, damping_for_ratio
from .sweep import sweep  # the function (imports Dask, xarray and pandas only when called)
from .trajectory import Trajectory

if TYPE_CHECKING:
    from .ensemble import Ensemble
    from .plot.widgets import Comparison, LiveControls

__version__ = "0.1.0"


def set_num_threads(n: int) -> None:
    """Set how many worker threads the systems of this process use when their own
    ``threads`` is 0 (the default).

    Worker threads step large networks (at least 10,000 springs) with explicit or
    symplectic Euler; see :attr:`System.threads`, which overrides this setting for one
    system when it is not 0.  ``n = 0`` (the initial setting) means all online cores and
    ``n = 1`` a single thread; results are bitwise repeatable for a given thread count.
    Takes effect at the next :meth:`System.step` of every system.

    Parameters
    ----------
    n : int
        Worker threads, 0 (all online cores) to 1024.

    Raises
    ------
    TypeError
        ``n`` is not an integer.
    ValueError
        ``n`` is negative or above 1024; the setting is unchanged.
    """
    _core.set_num_threads(n)


def get_num_threads() -> int:
    """The number of worker threads that a system whose ``threads`` is 0 uses: the value
    given to :func:`set_num_threads`, or the number of online cores (at most 64).

    Returns
    -------
    int
        The number of worker threads.
    """
    return _core.get_num_threads()


def interact(system: System, **options: object) -> "LiveControls":
    """Live controls for ``system`` in a notebook (needs the ``widgets`` extra: ipywidgets,
    anywidget): play/pause/step/reset, sliders for dt (with the critical step marked), the
    integrator, k and damping per spring family, gravity and wind, energy bars, a running
    ledger plot, and a view that turns and lets you drag nodes.  It plays in real time (a
    ``speed`` control gives slow motion).  See :func:`msprings.widgets.interact` for the
    options, and :func:`msprings.compare` for two systems side by side on one clock.

    Parameters
    ----------
    system : System
        The system to play; the controls change it in place.
    **options
        The keywords of :func:`msprings.widgets.interact`.

    Returns
    -------
    LiveControls
        The widget; display it to see it.

    Raises
    ------
    ImportError
        If the ``widgets`` extra is not installed.
    TypeError, ValueError
        For bad options, as :func:`msprings.widgets.interact` lists.
    """
    from .plot.widgets import interact as live_controls

    return live_controls(system, **options)


def compare(*systems: System, **options: object) -> "Comparison":
    """Two or more systems side by side in a notebook on one clock, with one Play, Step,
    Reset and speed (needs the ``widgets`` extra), e.g. one scene at two time steps: the one
    that blows up stops with its message while the other plays on.  See
    :func:`msprings.widgets.compare` for the options and an example.

    Parameters
    ----------
    *systems : System
        Two or more distinct systems.
    **options
        The keywords of :func:`msprings.widgets.compare`.

    Returns
    -------
    Comparison
        The widget; display it to see it.

    Raises
    ------
    ImportError
        If the ``widgets`` extra is not installed.
    TypeError, ValueError
        For bad systems or options, as :func:`msprings.widgets.compare` lists.
    """
    from .plot.widgets import compare as side_by_side

    return side_by_side(*systems, **options)


def __getattr__(name: str) -> object:
    """:class:`Ensemble` (many systems of one topology stepped by one call), imported on first use."""
    if name == "Ensemble":
        from .ensemble import Ensemble

        return Ensemble
    raise AttributeError(f"module 'msprings' has no attribute {name!r}")


__all__ = [
    "INTEGRATORS",
    "DivergenceError",
    "Ensemble",
    "Energy",
    "Gradient",
    "Ledger",
    "PositionFit",
    "SolverWarning",
    "StabilityWarning",
    "System",
    "Tangent",
    "Trajectory",
    "__version__",
    "compare",
    "damping_for_ratio",
    "get_num_threads",
    "interact",
    "set_num_threads",
    "sweep",
]
