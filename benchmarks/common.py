"""Pieces every benchmark shares: the cloth-N scene's geometry, importing the in-tree build,
machine facts and number formats."""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
from pathlib import Path
from types import ModuleType
from typing import Sequence

import numpy as np

CLOTH_SPACING = 0.625  # m, BENCH.md's cloth-N node spacing


def import_msprings() -> ModuleType:
    """Imports msprings, preferring the in-tree build next to this folder when one exists."""
    root = Path(__file__).resolve().parent.parent
    if any((root / "msprings").glob("_core*")) and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import msprings

    return msprings


def cloth_geometry(n: int, spacing: float = CLOTH_SPACING) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BENCH.md's cloth-N: positions (n*n, 3) with node (i, j) = index i n + j at
    (j h, 0, i h); int32 springs in the order structural, shear, bend; the pinned mask
    (nodes (0, 0) and (0, n-1))."""
    if n < 3:
        raise ValueError(f"cloth size n must be >= 3, got {n}")
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    positions = np.zeros((n * n, 3))
    positions[:, 0] = (cols * spacing).ravel()
    positions[:, 2] = (rows * spacing).ravel()
    node = np.arange(n * n).reshape(n, n)  # node[i, j] is the index of node (i, j)
    pairs = (
        (node[:, :-1], node[:, 1:]),  # structural (i, j)-(i, j+1)
        (node[:-1, :], node[1:, :]),  # structural (i, j)-(i+1, j)
        (node[:-1, :-1], node[1:, 1:]),  # shear (i, j)-(i+1, j+1)
        (node[:-1, 1:], node[1:, :-1]),  # shear (i, j+1)-(i+1, j)
        (node[:, :-2], node[:, 2:]),  # bend (i, j)-(i, j+2)
        (node[:-2, :], node[2:, :]),  # bend (i, j)-(i+2, j)
    )
    springs = np.ascontiguousarray(
        np.concatenate([np.stack((a.ravel(), b.ravel()), axis=1) for a, b in pairs]), dtype=np.int32
    )
    expected = 2 * n * (n - 1) + 2 * (n - 1) ** 2 + 2 * n * (n - 2)
    if springs.shape[0] != expected:
        raise AssertionError(f"cloth-{n}: {springs.shape[0]} springs, expected {expected}")
    pinned = np.zeros(n * n, dtype=bool)
    pinned[[node[0, 0], node[0, n - 1]]] = True
    return positions, springs, pinned


def spring_lengths(positions: np.ndarray, springs: np.ndarray) -> np.ndarray:
    """(nspring,) length (m) of every spring at the given positions."""
    d = positions[springs[:, 1]] - positions[springs[:, 0]]
    return np.sqrt(np.einsum("ij,ij->i", d, d))


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo, or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, or 'unknown'."""
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def round_steps(n: float) -> int:
    """n rounded to two significant digits, at least 1."""
    n = max(1.0, n)
    scale = 10 ** max(0, int(math.floor(math.log10(n))) - 1)
    return max(1, int(round(n / scale)) * scale)


def format_rate(value: float) -> str:
    """A rate with three significant digits and thousands separators."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def format_vector(p: np.ndarray) -> str:
    """A position as '(x, y, z)' with 9 decimals (nm)."""
    return "(" + ", ".join(f"{value:.9f}" for value in p) + ")"


def format_seconds(value: float) -> str:
    """A duration in the unit that suits it."""
    if value >= 1.0:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} us"


def keep_freed_memory() -> str:
    """Stops glibc's malloc from handing freed memory back to the system, and says what was done.

    NumPy takes its temporaries from malloc.  With glibc's default, self-adjusting thresholds
    the top of the heap is trimmed and grown again from step to step depending on the order
    of allocations, so a step can pay hundreds of page faults that a slightly different step
    does not (here the NumPy step without contact did, and ran about twice as long as with
    it).  Fixed thresholds (32 MiB for mmap, 1 GiB for trimming) keep every temporary in
    reused heap memory, so NumPy peers are measured at their best.  msprings allocates
    nothing while stepping.  Call it once, before anything is timed."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "allocator defaults (not glibc)"
    import ctypes

    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_threshold = -1, -3  # mallopt parameters, <malloc.h>
    if libc.mallopt(m_trim_threshold, 1 << 30) and libc.mallopt(m_mmap_threshold, 32 << 20):
        return "glibc malloc with fixed thresholds (`mallopt`: M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 1 GiB)"
    return "glibc malloc defaults (`mallopt` refused fixed thresholds)"


def parse_quick_repeats(description: str, quick_help: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """The options of a benchmark that has only ``--quick`` and ``--repeats`` (timed runs per
    row: 5 by default, 2 with ``--quick``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per row (default 5, 2 with --quick)")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 5
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args
