"""The energy and ledger a recording keeps: those of each recorded state, as System.energy()
and System.ledger() give them there.

A recording takes a record's kinetic, spring and gravitational energy from the step call that
leaves it (summed there by the step's blocks, in another order than energy() sums them), so
they agree to rounding, not bit for bit; the ledger and the states agree bit for bit.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import msprings
from msprings.trajectory import ENERGY_FIELDS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

RELATIVE = 1e-12
LARGE_STEP = ("implicit_euler", "xpbd", "projective")


def shuffled_cloth(n: int, seed: int, **options: object) -> msprings.System:
    """cloth-n with its nodes numbered at random, so that a step ranks them in an order of its own."""
    place = np.random.default_rng(seed).permutation(n * n)
    positions = scenes.cloth_positions(n, 0.625)[np.argsort(place)]
    pinned = place[scenes.cloth_corner_pins(n)].tolist()
    return msprings.System(positions, place[scenes.cloth_springs(n)], k=2500.0, c=1.0, pinned=pinned, **options)


def moving_cloth(n: int, **options: object) -> msprings.System:
    """cloth-n with dampers, drag and random starting velocities (every energy non-zero at once)."""
    velocities = np.random.default_rng(5).normal(0.0, 0.2, (n * n, 3))
    return scenes.cloth(n, velocities=velocities, drag=0.01, **options)


SCENES: dict[str, Callable[..., msprings.System]] = {
    "cloth": lambda **options: moving_cloth(12, **options),
    "shuffled cloth": lambda **options: shuffled_cloth(72, 3, **options),
}
INTEGRATORS = ("symplectic_euler", "explicit_euler", "velocity_verlet", "rk4", "implicit_euler", "xpbd", "projective")


def expected_records(system: msprings.System, dt: float, trajectory: msprings.Trajectory) -> tuple[np.ndarray, ...]:
    """Positions, velocities, energy and ledger of a copy stepped to each record's step count as
    one call per record."""
    positions, velocities = [np.array(system.x)], [np.array(system.v)]
    energy, ledger = [system.energy()], [system.ledger()]
    for r in range(1, len(trajectory)):
        system.step(dt, int(trajectory.steps[r] - trajectory.steps[r - 1]))
        positions.append(np.array(system.x))
        velocities.append(np.array(system.v))
        energy.append(system.energy())
        ledger.append(system.ledger())
    return np.array(positions), np.array(velocities), np.array(energy), np.array(ledger)


def assert_energy_close(recorded: np.ndarray, expected: np.ndarray) -> None:
    """Equal to RELATIVE of the records' largest energies (a sum near 0 has no relative precision)."""
    assert recorded.shape == expected.shape
    scale = np.abs(expected[:, :3]).sum(axis=1).max()
    assert scale > 0.0
    np.testing.assert_allclose(recorded, expected, rtol=0.0, atol=RELATIVE * scale)


@pytest.mark.parametrize("scene", sorted(SCENES))
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_recorded_energy_is_the_energy_of_each_recorded_state(scene: str, integrator: str) -> None:
    system = SCENES[scene](integrator=integrator)
    dt = 1.0 / 60.0 if integrator in LARGE_STEP else 1e-3
    reference = system.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        trajectory = system.run(dt, 23, record_every=4, velocities=True)
        positions, velocities, energy, ledger = expected_records(reference, dt, trajectory)
    assert len(trajectory) == 7
    np.testing.assert_array_equal(trajectory.positions, positions)
    np.testing.assert_array_equal(trajectory.velocities, velocities)
    np.testing.assert_array_equal(trajectory.ledger, ledger)
    assert_energy_close(trajectory.energy, energy)
    # the calls between records may leave f; the run ends with the force its last call found
    np.testing.assert_array_equal(system.f, reference.f)
    kinetic, spring = ENERGY_FIELDS.index("kinetic"), ENERGY_FIELDS.index("spring")
    assert (trajectory.energy[1:, kinetic] > 0.0).all() and (trajectory.energy[1:, spring] > 0.0).all()
    # the sums as energy() sums them: total = mechanical + dissipated - work, to the bit
    columns = {name: trajectory.column(name) for name in ENERGY_FIELDS}
    np.testing.assert_array_equal(columns["mechanical"], columns["kinetic"] + columns["spring"] + columns["gravity"])
    np.testing.assert_array_equal(columns["total"], columns["mechanical"] + columns["dissipated"] - columns["work"])


def test_a_step_call_split_into_chunks_keeps_the_energy_it_started_from() -> None:
    """cloth-256 steps about 110 steps per chunk between checks for Ctrl-C: a record 150 steps
    on comes from a call of two chunks, whose energy is that of the state the first started from."""
    system = scenes.cloth(256, velocities=np.random.default_rng(2).normal(0.0, 0.1, (256 * 256, 3)))
    reference = system.copy()
    trajectory = system.run(1e-3, 300, record_every=150)
    positions, _, energy, ledger = expected_records(reference, 1e-3, trajectory)
    np.testing.assert_array_equal(trajectory.positions, positions)
    np.testing.assert_array_equal(trajectory.ledger, ledger)
    assert_energy_close(trajectory.energy, energy)


def test_a_watched_state_is_recorded_with_the_callers_change_booked() -> None:
    """A change written through a view between steps is the ledger's user part: at the first
    record (pending) and after (booked), with a view alive during the run (watched throughout)."""
    system = moving_cloth(10)
    system.step(1e-3, 5)
    x = system.x
    x[:, 1] -= 0.01  # everything 1 cm lower: the gravitational energy falls
    reference = system.copy()
    trajectory = system.run(1e-3, 12, record_every=3)
    positions, _, energy, ledger = expected_records(reference, 1e-3, trajectory)
    user = list(msprings.Ledger._fields).index("user")
    assert trajectory.ledger[0, user] < 0.0
    np.testing.assert_array_equal(trajectory.positions, positions)
    np.testing.assert_array_equal(trajectory.ledger, ledger)
    assert_energy_close(trajectory.energy, energy)


def test_recording_leaves_later_steps_as_they_were() -> None:
    """After a run, plain step calls keep no energy: the state steps on bit for bit as a copy does."""
    system = moving_cloth(8)
    system.run(1e-3, 6, record_every=2)
    copy = system.copy()
    system.step(1e-3, 4)
    copy.step(1e-3, 4)
    np.testing.assert_array_equal(system.x, copy.x)
    np.testing.assert_array_equal(system.f, copy.f)
    assert system._start_energy() is None


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_a_diverging_run_leaves_finite_forces_and_later_steps_write_them(scene: str) -> None:
    """A run that diverges raises with the system as the run found it (f too, though the run's
    calls did not write it); the step calls after it write f again."""
    system = SCENES[scene]()
    system.step(1e-3)
    before = np.array(system.f)
    start = system.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        with pytest.raises(msprings.DivergenceError) as caught:
            system.run(0.5, 400, record_every=1)
    assert caught.value.call_step > 1  # some records were made before it diverged
    assert system.steps == start.steps and system.t == start.t
    np.testing.assert_array_equal(system.x, start.x)
    np.testing.assert_array_equal(system.v, start.v)
    np.testing.assert_array_equal(system.f, before)
    assert system.ledger() == start.ledger()
    system.step(1e-4)
    start.step(1e-4)
    np.testing.assert_array_equal(system.f, start.f)
    np.testing.assert_array_equal(system.x, start.x)
    assert not np.array_equal(system.f, before)


def test_recorded_rows_must_fit_the_system() -> None:
    system = scenes.cloth(4)
    with pytest.raises(TypeError, match="positions must be a float64 array"):
        system._record_state(np.zeros((16, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="velocities must be a writable, aligned, C-contiguous array of 48 values"):
        system._record_state(np.zeros((16, 3)), np.zeros((15, 3)))
    with pytest.raises(ValueError, match="positions must be a writable, aligned, C-contiguous"):
        system._record_state(np.zeros((16, 6))[:, ::2])
    row = np.zeros((16, 3))
    system._record_state(row)
    np.testing.assert_array_equal(row, system.x)
