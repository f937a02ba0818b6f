"""Checks shared by the gradient tests: random directions in the parameters and the
dot-product test between the backward (adjoint) and tangent passes of a run."""
from __future__ import annotations

import numpy as np

import msprings

PARAMETERS = ["k", "c", "rest", "mass", "x", "v", "external"]
"""Every kind of parameter a gradient is taken with respect to."""


def direction(s: msprings.System, name: str, seed: int) -> np.ndarray:
    """A random direction in parameter ``name`` of ``s`` (zero on pinned nodes for x and v)."""
    d = np.random.default_rng(seed).normal(size=getattr(s, name).shape)
    if name in ("x", "v"):
        d[s.pinned] = 0.0
    return d


def assert_adjoint_matches_tangent(s: msprings.System, run, weights: tuple[np.ndarray, np.ndarray]) -> None:
    """<adjoint(G), d> == <G, tangent(d)> to 1e-12 for a direction moving every parameter at
    once; G = weights is dL/d(recorded positions, velocities) of a linear loss."""
    gradient = run.backward(*weights)
    d = {name: direction(s, name, seed) for seed, name in enumerate(PARAMETERS)}
    adjoint = sum(float(np.sum(getattr(gradient, name) * d[name])) for name in PARAMETERS)
    t = run.tangent(velocities=True, **d)
    tangent = float(np.sum(weights[0] * t.positions) + np.sum(weights[1] * t.velocities))
    assert abs(adjoint - tangent) <= 1e-12 * abs(adjoint)
