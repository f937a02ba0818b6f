"""The benchmarks' shared NumPy step is the same physics as msprings: a closed loop.

The benchmark suites time msprings beside :class:`benchmarks.harness.NumpyStep` and only mean
something if both integrate the same forces the same way.  Here the NumPy step and msprings' symplectic
Euler run side by side for a few hundred steps on a small cloth with drag (springs, dampers, gravity
and drag all acting), and on a tablecloth falling onto its table (the contact rule with restitution
and friction); positions and velocities must agree to 1e-9 relative.  They add each node's spring
forces in different orders, so they differ by rounding only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import msprings
from msprings import scenes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import harness  # noqa: E402

RELATIVE = 1e-9


def _relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())


def test_cloth_with_drag_matches_msprings() -> None:
    net = harness.cloth(8)
    net = harness.Network(**{**net.__dict__, "drag": 0.4})
    system = harness.build_system(msprings, net)
    state = harness.State.of(net)
    step = harness.NumpyStep(net, 1e-3)
    system.step(1e-3, 300)
    step(state, 300)
    assert np.abs(state.x - net.positions).max() > 0.1  # the cloth has fallen: a real run
    assert _relative_difference(state.x, system.x) < RELATIVE
    assert _relative_difference(state.v, system.v) < RELATIVE
    # a changed force (no drag in the peer) shows far above the tolerance
    other = harness.State.of(net)
    harness.NumpyStep(harness.Network(**{**net.__dict__, "drag": 0.0}), 1e-3)(other, 300)
    assert _relative_difference(other.v, system.v) > 1e3 * RELATIVE


def test_tablecloth_contact_matches_msprings() -> None:
    system = harness.set_threads(scenes.tablecloth(10), 1)
    state = harness.State.of(system)
    step = harness.NumpyStep(harness.network_of(system, "tablecloth-10"), 2e-3, harness.contacts_of(system))
    touched = 0
    for _ in range(4):  # 0.8 s: the cloth lands on the table (a 1 m fall takes 0.45 s)
        system.step(2e-3, 100)
        step(state, 100)
        touched += sum(step.moved)
    assert touched > 0
    assert _relative_difference(state.x, system.x) < RELATIVE
    assert _relative_difference(state.v, system.v) < RELATIVE
