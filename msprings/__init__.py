"""msprings: mass-spring simulation with a C core and zero-copy NumPy state.

Build a network with :class:`System` (positions, springs, masses, stiffness, damping, pins),
step it with :meth:`System.step`, and read or write its state through NumPy arrays that are
the C memory itself.  Units are SI; y is up.
"""
try:
    from ._core import INTEGRATORS, DivergenceError
except ImportError as error:  # pragma: no cover - depends on how the package was installed
    raise ImportError(
        "the msprings C core (msprings._core) is not built: install with `pip install -e .` "
        "(or `pip install .` and run from outside the source tree)"
    ) from error
from ._system import Energy, SolverWarning, StabilityWarning, System, damping_for_ratio

__version__ = "0.1.0"

__all__ = [
    "INTEGRATORS",
    "DivergenceError",
    "Energy",
    "SolverWarning",
    "StabilityWarning",
    "System",
    "__version__",
    "damping_for_ratio",
]
