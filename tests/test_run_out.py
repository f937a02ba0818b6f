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
    out = system.copy().run(1e-3, 10, record_every=5, velocities=True)
    saved = {name: np.array(getattr(out, name)) for name in ("times", "steps", "positions", "velocities", "energy",
                                                             "ledger", "springs")}
    x, steps = np.array(system.x), system.steps
    cases = [
        (dict(out=np.zeros((3, 81, 3))), TypeError, "out must be a Trajectory"),
        (dict(out=out, record_every=2), ValueError, r"out must hold 6 records of 81 nodes.*has shape \(3, 81, 3\)"),
        (dict(out=out, dt=-1e-3), ValueError, r"dt = -0.001 must be a finite time step > 0"),
        (dict(out=out, dt=float("nan")), ValueError, "dt = nan must be a finite time step"),
        (dict(out=out, dt="1e-3"), TypeError, "dt must be a real number"),
        (dict(out=out, dt=True), TypeError, "dt must be a number of seconds, not bool"),
    ]
    for kwargs, error, message in cases:
        every, dt = kwargs.pop("record_every", 5), kwargs.pop("dt", 1e-3)
        with pytest.raises(error, match=message):
            system.run(dt, 10, record_every=every, **kwargs)
    velocities = out.velocities
    out.velocities = None
    with pytest.raises(ValueError, match="out has no velocities"):
        system.run(1e-3, 10, record_every=5, velocities=True, out=out)
    out.velocities = velocities
    out.positions.setflags(write=False)
    with pytest.raises(ValueError, match="its positions is read-only"):
        system.run(1e-3, 10, record_every=5, out=out)
    out.positions.setflags(write=True)
    positions = out.positions
    out.positions = np.asfortranarray(positions)
    with pytest.raises(ValueError, match="is not C-contiguous"):
        system.run(1e-3, 10, record_every=5, out=out)
    out.positions = positions
    for name, array in saved.items():
        np.testing.assert_array_equal(getattr(out, name), array, err_msg=name)
    np.testing.assert_array_equal(system.x, x)
    assert system.steps == steps


def test_out_arrays_that_share_memory_are_refused() -> None:
    """Two of out's arrays over the same memory, or one over the system's own state, would
    write records over records or over x and v: refused before any step."""
    system = moving_cloth()
    out = system.copy().run(1e-3, 2, record_every=1, velocities=True)
    times = out.times
    out.steps = out.times.view(np.int64)
    with pytest.raises(ValueError, match="must not share memory with one another"):
        system.run(1e-3, 2, out=out)
    out.steps = np.zeros(3, dtype=np.int64)
    velocities = out.velocities
    out.velocities = out.positions
    with pytest.raises(ValueError, match="must not share memory with one another"):
        system.run(1e-3, 2, velocities=True, out=out)
    out.velocities = velocities
    n = system.n_nodes
    state = np.lib.stride_tricks.as_strided(system.x, (3, n, 3), (24 * n, 24, 8))  # x, v and f: one block
    out.positions = state
    x = np.array(system.x)
    with pytest.raises(ValueError, match="must not share memory with the system's state"):
        system.run(1e-3, 2, out=out)
    np.testing.assert_array_equal(system.x, x)
    assert out.times is times and system.steps == 0
    row = np.array(system.x)
    with pytest.raises(ValueError, match="positions must not share memory with the system's state"):
        system._record_state(system.v)
    np.testing.assert_array_equal(system.x, row)


@pytest.mark.parametrize("every", [1, 5])
def test_a_run_into_out_that_diverges_keeps_the_records_made_and_marks_the_rest(every: int) -> None:
    system = scenes.chain(8)
    system.add_sphere((3.0, -50.0, 0.0), 1.0)  # far below: its centre is recorded
    out = system.copy().run(1e-3, 600, record_every=every)
    start = system.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        with pytest.raises(msprings.DivergenceError) as caught:
            system.run(5.0, 600, record_every=every, out=out)
    made = int((out.steps >= 0).sum())
    assert 1 < made < len(out)
    assert (out.steps[:made] == every * np.arange(made)).all() and (out.steps[made:] == -1).all()
    assert np.isnan(out.times[made:]).all() and np.isnan(out.positions[made:]).all()
    assert np.isnan(out.collider_centers[made:]).all() and np.isfinite(out.collider_centers[:made]).all()
    assert np.isnan(out.energy[made:]).all() and np.isnan(out.ledger[made:]).all()
    np.testing.assert_allclose(out.times[:made], 5.0 * out.steps[:made], rtol=1e-15)
    assert np.isfinite(out.positions[:made]).all() and np.isfinite(out.ledger[:made]).all()
    # the energy sums agree with their parts wherever the parts are known
    kinetic, spring, gravity = (out.column(name) for name in ("kinetic", "spring", "gravity"))
    np.testing.assert_array_equal(out.column("mechanical"), kinetic + spring + gravity)
    assert np.isfinite(out.energy[:made - 1]).all()
    # the last record made: its energy is that of the state the diverging call started from
    # (known, if perhaps beyond a double there)
    assert not np.isnan(out.energy[made - 1, :3]).any()
    replay = start.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        replay.step(5.0, int(out.steps[made - 1]))
    np.testing.assert_allclose(out.energy[made - 1, :3], replay.energy()[:3], rtol=1e-12)
    # the run is one call, undone as a whole: the system is as the run found it
    assert "of this run" in str(caught.value) and caught.value.call_step > out.steps[made - 1]
    assert (system.t, system.steps, system.ledger()) == (start.t, start.steps, start.ledger())
    np.testing.assert_array_equal(system.x, start.x)
    np.testing.assert_array_equal(system.v, start.v)
    np.testing.assert_array_equal(system._get_collider(system._collider_ids()[0])[1],
                                  start._get_collider(start._collider_ids()[0])[1])


def misaligned_like(array: np.ndarray) -> np.ndarray:
    """A writable, C-contiguous float64 copy of ``array`` whose data starts one byte past an
    aligned address (a view into a byte buffer)."""
    buffer = bytearray(array.nbytes + 8)
    start = 1 if np.frombuffer(buffer, dtype=np.uint8).ctypes.data % 8 == 0 else 2
    view = np.frombuffer(buffer, dtype=np.float64, count=array.size, offset=start).reshape(array.shape)
    view[...] = array
    return view


def test_misaligned_strided_or_byte_swapped_out_arrays_are_refused_before_any_step() -> None:
    """Records are stored as doubles through out's positions and velocities: an array that is
    misaligned, strided or byte-swapped cannot take them and is refused, naming the field,
    with out and the system unchanged."""
    system = moving_cloth()
    out = system.copy().run(1e-3, 10, record_every=5, velocities=True)
    positions, velocities = out.positions, out.velocities
    saved = {name: np.array(getattr(out, name)) for name in ARRAYS if getattr(out, name) is not None}
    x, steps = np.array(system.x), system.steps
    wider = np.zeros((*positions.shape[:2], 4))
    cases = [
        ("positions", misaligned_like(positions), r"its positions is not aligned"),
        ("velocities", misaligned_like(velocities), r"out's velocities is not aligned"),
        ("positions", positions.astype(">f8"), r"its positions has dtype >f8, not float64"),
        ("velocities", velocities.astype(">f8"), r"out's velocities has dtype >f8, not float64"),
        ("positions", wider[:, :, :3], r"its positions is not C-contiguous"),
        ("velocities", np.lib.stride_tricks.as_strided(wider, positions.shape, (wider.strides[0], 32, 8)),
         r"out's velocities is not C-contiguous"),
    ]
    for field, array, message in cases:
        assert array.dtype.kind == "f" and array.shape == positions.shape and array.flags.writeable
        before = array.tobytes()
        setattr(out, field, array)
        with pytest.raises(ValueError, match=message):
            system.run(1e-3, 10, record_every=5, velocities=True, out=out)
        assert array.tobytes() == before, field
        out.positions, out.velocities = positions, velocities
    for name, array in saved.items():
        np.testing.assert_array_equal(getattr(out, name), array, err_msg=name)
    np.testing.assert_array_equal(system.x, x)
    assert system.steps == steps
    recorded = system.copy().run(1e-3, 10, record_every=5, velocities=True)
    assert system.run(1e-3, 10, record_every=5, velocities=True, out=out) is out
    assert_same_records(out, recorded)


def test_the_binding_refuses_misaligned_and_byte_swapped_rows() -> None:
    """The call that stores a record refuses, by itself, rows it cannot store doubles into."""
    system = moving_cloth(3)
    x = np.array(system.x)
    row = misaligned_like(np.zeros_like(x))
    with pytest.raises(ValueError, match="positions must be a writable, aligned, C-contiguous array"):
        system._record_state(row)
    with pytest.raises(ValueError, match="velocities must be a writable, aligned, C-contiguous array"):
        system._record_state(np.zeros_like(x), row)
    with pytest.raises(TypeError, match="positions must be a float64 array in the machine's byte order"):
        system._record_state(np.zeros(x.shape, dtype=">f8"))
    assert not row.any()
    stored = np.zeros_like(x)
    system._record_state(stored)
    np.testing.assert_array_equal(stored, x)


def test_a_run_that_failed_saves_and_loads_back(tmp_path: Path) -> None:
    """The records a failed run did not make (step count -1, NaN) are part of the trajectory:
    it saves and loads back bit for bit, while NaN in a record made is still refused."""
    system = scenes.chain(8)
    system.add_sphere((3.0, -50.0, 0.0), 1.0)
    out = system.copy().run(1e-3, 600, record_every=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)
        with pytest.raises(msprings.DivergenceError):
            system.run(5.0, 600, record_every=5, out=out)
    made = int((out.steps >= 0).sum())
    assert 1 < made < len(out) and np.isfinite(out.energy[:made]).all()
    loaded = msprings.Trajectory.load(out.save(tmp_path / "failed.npz"))
    assert_same_records(loaded, out)
    out.positions[made - 1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="positions.*NaN or infinity in a record made"):
        msprings.Trajectory.load(out.save(tmp_path / "damaged.npz"))
