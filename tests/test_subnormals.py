"""Subnormal numbers inside the core, and the caller's arithmetic around it.

The core flushes subnormal results (below 2.2e-308 in magnitude) to zero while it steps or
evaluates forces, on x86-64 and AArch64, and puts the caller's floating-point mode back when it
returns: NumPy and Python keep computing with subnormals."""
from __future__ import annotations

import platform

import numpy as np
import pytest

import msprings
import msprings.scenes

TINY = 1e-310  # a subnormal double
FLUSHING = platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64")


def caller_keeps_subnormals() -> bool:
    """True if NumPy and Python arithmetic on this thread still produce and read subnormals."""
    array = np.array([TINY]) * 1.0
    scalar = float(np.float64(TINY) * 0.5)
    python = TINY * 3.0
    return bool(array[0] == TINY) and scalar > 0.0 and python > TINY


def chain(n: int = 400, threads: int = 1) -> msprings.System:
    """A straight chain of n 1 kg nodes, 1 m apart, k = 100 N/m, c = 0.5 N s/m, node 0 kicked
    sideways at 1 m/s, no gravity: the kick spreads along the chain, shrinking at every spring."""
    x = np.zeros((n, 3))
    x[:, 0] = np.arange(n)
    springs = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    s = msprings.System(x, springs, k=100.0, c=0.5, gravity=(0.0, 0.0, 0.0))
    s.threads = threads
    s.v[0] = (0.0, 1.0, 0.0)
    return s


def test_python_arithmetic_keeps_subnormals_after_steps_and_forces() -> None:
    assert caller_keeps_subnormals()
    s = chain()
    s.step(0.01, 20)
    assert caller_keeps_subnormals()
    s.update_forces()
    assert caller_keeps_subnormals()
    big = msprings.scenes.cloth(110)  # enough springs for several workers
    big.threads = 2
    big.step(1e-3, 3)
    assert caller_keeps_subnormals()


def test_python_arithmetic_keeps_subnormals_after_a_diverging_step() -> None:
    s = chain(10)
    x0 = np.array(s.x)
    with pytest.warns(msprings.StabilityWarning), pytest.raises(msprings.DivergenceError):
        s.step(100.0, 50)  # far beyond the critical step: grows without bound
    assert caller_keeps_subnormals()
    assert np.isfinite(np.asarray(s.x)).all() and np.isfinite(np.asarray(s.v)).all()
    assert s.steps == 0
    assert np.array_equal(np.asarray(s.x), x0)  # the call is undone


@pytest.mark.skipif(not FLUSHING, reason="the core flushes subnormals on x86-64 and AArch64 only")
def test_the_front_of_a_disturbance_has_no_subnormal_speeds() -> None:
    """Without the flush, the kick's front leaves nodes whose speeds are subnormal for many
    steps (the slow path on x86).  With it every speed is zero or a normal number."""
    s = chain()
    smallest_normal = np.finfo(np.float64).tiny
    seen_zero = False
    for _ in range(300):
        s.step(0.01)
        v = np.abs(np.asarray(s.v))
        assert not ((v > 0.0) & (v < smallest_normal)).any()
        seen_zero |= bool((v[:, 1] == 0.0).any())
    assert seen_zero  # the front has not yet reached the far end


def test_flushed_chain_agrees_with_the_reference_with_subnormals() -> None:
    """Symplectic Euler in NumPy, which keeps subnormals (and meets them at the kick's front),
    and the core agree to round-off: the flushed values are below 1e-307."""
    s = chain(80)
    x = np.array(s.x)
    v = np.array(s.v)
    springs = np.asarray(s.springs)
    rest, k, c, h = np.asarray(s.rest), 100.0, 0.5, 0.01
    subnormal = 0
    for _ in range(300):
        d = x[springs[:, 1]] - x[springs[:, 0]]
        length = np.linalg.norm(d, axis=1)
        n = d / length[:, None]
        closing = np.einsum("ij,ij->i", v[springs[:, 1]] - v[springs[:, 0]], n)
        force = (k * (length - rest) + c * closing)[:, None] * n
        f = np.zeros_like(x)
        np.add.at(f, springs[:, 0], force)
        np.add.at(f, springs[:, 1], -force)
        v = v + h * f
        x = x + h * v
        speed = np.abs(v)
        subnormal += int(((speed > 0.0) & (speed < np.finfo(np.float64).tiny)).sum())
    assert subnormal > 0  # the reference met subnormal speeds
    s.step(h, 300)
    np.testing.assert_allclose(np.asarray(s.x), x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(s.v), v, rtol=0, atol=1e-12)
