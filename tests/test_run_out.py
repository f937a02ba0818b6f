"""``System.run(..., out=trajectory)``: recording into an earlier run's arrays, as NumPy's out=."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402


def moving_cloth(n: int = 9, seed: int = 4) -> msprings.System:
    """cloth-n with random starting velocities, drag and a sphere moving up into it."""
    velocities = np.random.default_rng(seed).normal(0.0, 0.2, (n * n, 3))
    system = scenes.cloth(n, velocities=velocities, drag=0.01)
    system.add_sphere((2.5, -0.5, 2.5), 0.4, velocity=(0.0, 1.0, 0.0))
    return system


ARRAYS = ("times", "steps", "positions", "velocities", "energy", "ledger", "collider_centers", "springs", "faces",
          "pinned", "rest")


def assert_same_records(got: msprings.Trajectory, expected: msprings.Trajectory) -> None:
    for name in ARRAYS:
        a, b = getattr(got, name), getattr(expected, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert got.colliders == expected.colliders and got.dt == expected.dt


@pytest.mark.parametrize("integrator", ["symplectic_euler", "rk4", "implicit_euler"])
def test_a_run_into_out_records_what_a_new_run_records_in_the_same_memory(integrator: str) -> None:
    system = moving_cloth()
    system.integrator = integrator
    first = system.run(1e-3, 12, record_every=3, velocities=True)
    arrays = {name: getattr(first, name) for name in ("times", "steps", "positions", "velocities", "energy",
                                                       "ledger")}
    old_positions = np.array(first.positions)
    twin = system.copy()
    returned = system.run(1e-3, 12, record_every=3, velocities=True, out=first)
    expected = twin.run(1e-3, 12, record_every=3, velocities=True)
    assert returned is first
    for name, array in arrays.items():
        assert getattr(first, name) is array, name  # written in place, not replaced
    assert not np.array_equal(first.positions, old_positions)  # the cloth moved on
    assert_same_records(first, expected)
    np.testing.assert_array_equal(system.x, twin.x)
    np.testing.assert_array_equal(system.f, twin.f)


def test_out_takes_this_runs_description_and_drops_velocities_not_asked_for() -> None:
    """A trajectory of another system with as many nodes takes this run's springs, pins and
    records; one recorded with velocities, recorded into without, drops them."""
    grid = scenes.cloth(4).run(1e-3, 4, velocities=True)  # 16 nodes
    chain = scenes.chain(16)
    expected = chain.copy().run(1e-3, 4)
    recorded = chain.run(1e-3, 4, out=grid)
    assert recorded is grid and grid.velocities is None
    assert_same_records(grid, expected)


def test_a_bad_out_raises_before_any_step_and_changes_nothing() -> None:
    system = moving_cloth()
    out = system.copy().run(1e-3, 10, record_every=5)
    saved = np.array(out.positions)
    x, steps = np.array(system.x), system.steps
    cases = [
        (dict(out=np.zeros((3, 81, 3))), TypeError, "out must be a Trajectory"),
        (dict(out=out, record_every=2), ValueError, r"out must hold 6 records of 81 nodes"),
        (dict(out=out, velocities=True), ValueError, "out has no velocities"),
    ]
    for kwargs, error, message in cases:
        every = kwargs.pop("record_every", 5)
        with pytest.raises(error, match=message):
            system.run(1e-3, 10, record_every=every, **kwargs)
    out.positions.setflags(write=False)
    with pytest.raises(ValueError, match="out must hold 3 records of 81 nodes"):
        system.run(1e-3, 10, record_every=5, out=out)
    np.testing.assert_array_equal(system.x, x)
    assert system.steps == steps
    np.testing.assert_array_equal(out.positions, saved)


def test_a_run_into_out_that_diverges_keeps_the_records_made() -> None:
    system = scenes.chain(8)
    out = system.copy().run(1e-3, 400)
    stale = np.array(out.positions[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        with pytest.raises(msprings.DivergenceError) as caught:
            system.run(5.0, 400, out=out)
    made = caught.value.step  # the first step not made: records 0 .. made - 1 are this run's
    assert 1 < made < 400
    np.testing.assert_array_equal(out.positions[made - 1], system.x)
    np.testing.assert_array_equal(out.positions[-1], stale)
