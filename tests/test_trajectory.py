"""Recorded runs that last: Trajectory.save / Trajectory.load, named columns, DataFrames."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import msprings
from msprings import scenes
from msprings.trajectory import ENERGY_FIELDS, LEDGER_FIELDS


def recorded() -> msprings.Trajectory:
    system = scenes.tablecloth(8, size=3.0, height=0.05, table_height=1.0)
    system.add_sphere((0.3, 0.9, 0.0), 0.3, velocity=(0.1, 0.0, 0.0))  # pokes through the table
    return system.run(2e-3, 150, record_every=10, velocities=True)


def test_a_trajectory_compares_by_identity_and_prints_a_summary() -> None:
    trajectory = recorded()
    assert trajectory == trajectory and trajectory != recorded()
    text = repr(trajectory)
    assert text.startswith("<msprings.Trajectory: 16 records") and "64 nodes" in text and len(text) < 200


def assert_same(loaded: msprings.Trajectory, original: msprings.Trajectory) -> None:
    for name in ("times", "steps", "positions", "velocities", "energy", "ledger", "springs", "faces", "pinned",
                 "rest", "uv", "collider_centers"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(original, name), err_msg=name)
    assert loaded.dt == original.dt
    assert [c["kind"] for c in loaded.colliders] == [c["kind"] for c in original.colliders]
    assert loaded.colliders == original.colliders


def test_save_and_load_give_back_every_array(tmp_path: Path) -> None:
    trajectory = recorded()
    path = trajectory.save(tmp_path / "run.npz")
    assert path == tmp_path / "run.npz"
    assert_same(msprings.Trajectory.load(path), trajectory)


def test_a_run_without_velocities_or_texture_round_trips(tmp_path: Path) -> None:
    trajectory = scenes.chain(5).run(1e-3, 20, record_every=5)
    assert trajectory.velocities is None and trajectory.uv is None
    loaded = msprings.Trajectory.load(trajectory.save(tmp_path / "chain.npz"))
    assert loaded.velocities is None and loaded.uv is None
    np.testing.assert_array_equal(loaded.positions, trajectory.positions)
    # a loaded run draws like the original: its frames carry the colliders and topology
    frame = loaded.frame(len(loaded) - 1)
    np.testing.assert_array_equal(frame["positions"], trajectory.positions[-1])


def test_columns_are_named_and_consistent() -> None:
    trajectory = recorded()
    assert trajectory.energy.shape == (len(trajectory), len(ENERGY_FIELDS))
    assert trajectory.ledger.shape == (len(trajectory), len(LEDGER_FIELDS))
    for index, name in enumerate(ENERGY_FIELDS):
        np.testing.assert_array_equal(trajectory.column(name), trajectory.energy[:, index])
    for index, name in enumerate(LEDGER_FIELDS):
        np.testing.assert_array_equal(trajectory.column(name), trajectory.ledger[:, index])
    np.testing.assert_array_equal(trajectory.wind, trajectory.column("wind"))
    assert isinstance(trajectory.colliders, list)  # the colliders' descriptions, not the ledger column
    assert trajectory.column("colliders")[-1] != 0.0
    with pytest.raises(ValueError, match="name must be one of"):
        trajectory.column("heat")


def test_to_dataframe_has_one_row_per_record() -> None:
    pandas = pytest.importorskip("pandas")
    trajectory = recorded()
    frame = trajectory.to_dataframe()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == ["time", "steps", *ENERGY_FIELDS, *LEDGER_FIELDS]
    assert len(frame) == len(trajectory)
    np.testing.assert_array_equal(frame["time"].to_numpy(), trajectory.times)
    np.testing.assert_array_equal(frame["contact"].to_numpy(), trajectory.column("contact"))


def test_damaged_or_foreign_files_raise_value_error(tmp_path: Path) -> None:
    trajectory = recorded()
    path = trajectory.save(tmp_path / "run.npz")
    with np.load(path) as archive:
        entries = {name: archive[name] for name in archive.files}

    def rewritten(**changes: object) -> Path:
        data = dict(entries)
        for key, value in changes.items():
            if value is None:
                data.pop(key)
            else:
                data[key] = value
        target = tmp_path / "damaged.npz"
        np.savez(target, **data)
        return target

    with pytest.raises(ValueError, match="'ledger' is missing"):
        msprings.Trajectory.load(rewritten(ledger=None))
    with pytest.raises(ValueError, match="positions has shape"):
        msprings.Trajectory.load(rewritten(positions=entries["positions"][:-1]))
    with pytest.raises(ValueError, match="NaN or infinity"):
        bad = entries["energy"].copy()
        bad[0, 0] = np.nan
        msprings.Trajectory.load(rewritten(energy=bad))
    with pytest.raises(ValueError, match="springs refer to nodes outside"):
        msprings.Trajectory.load(rewritten(springs=entries["springs"] + 1000))
    with pytest.raises(ValueError, match="not an msprings trajectory"):
        msprings.Trajectory.load(rewritten(format=np.array("something else")))
    with pytest.raises(ValueError, match="format version 7"):
        msprings.Trajectory.load(rewritten(format_version=np.array(7)))
    (tmp_path / "noise.npz").write_bytes(b"PK\x03\x04 not really a zip file")
    with pytest.raises(ValueError, match=r"not an msprings trajectory \(not an .npz archive"):
        msprings.Trajectory.load(tmp_path / "noise.npz")
    with pytest.raises(FileNotFoundError):
        msprings.Trajectory.load(tmp_path / "missing.npz")
