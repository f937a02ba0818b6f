"""msprings: mass-spring simulation with a C core and zero-copy NumPy state.

Build a network with :class:`System` (positions, springs, masses, stiffness, damping, pins),
step it with :meth:`System.step`, and read or write its state through NumPy arrays that are
the C memory itself.  Units are SI; y is up.
"""
from ._core import INTEGRATORS, DivergenceError
from ._system import Energy, System

__version__ = "0.1.0"

__all__ = ["INTEGRATORS", "DivergenceError", "Energy", "System", "__version__"]
