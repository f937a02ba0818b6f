"""Damaged model and trajectory files: every one is refused with a ValueError that names the
file and the entry, and a member that claims a size the rest of the file disagrees with is
refused from its header, before any data is inflated."""

from __future__ import annotations

import json
import math
import re
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msprings
from msprings import io as model_io

from test_hardening import DT, members, moving_system, npy, snapshot, write_zip  # noqa: E402


def saved_model(tmp_path: Path) -> Path:
    s = moving_system()
    s.add_sphere((0.0, 3.0, 0.0), 0.5)
    s.add_box((2.0, 0.0, 0.0), (2.5, 0.5, 0.5))
    s.strain_limit = 0.2
    return model_io.save(s, tmp_path / "model.npz")


def saved_trajectory(tmp_path: Path) -> Path:
    s = moving_system()
    s.add_sphere((0.0, 3.0, 0.0), 0.5)
    return s.run(DT, 10, velocities=True).save(tmp_path / "run.npz")


def replaced(path: Path, target: Path, **entries: np.ndarray | bytes) -> Path:
    contents = members(path)
    for key, value in entries.items():
        contents[f"{key}.npy"] = value if isinstance(value, bytes) else npy(value)
    return write_zip(target, contents)


def refusal(load: Any, path: Path) -> str:
    """The message of the ValueError (and nothing else) that loading ``path`` raises."""
    with pytest.raises(Exception) as caught:
        load(path)
    assert type(caught.value) is ValueError, f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert message.startswith(str(path)), message
    return message


def names(message: str, entry: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(entry)}(?![\w])", message) is not None


# ---- non-finite values in every real entry ------------------------------------------------

# Entries where NaN means "none" and the file loads: optional options, and no energy recorded.
NAN_MEANS_NONE = {"option_strain_limit", "watched_energy"}


def real_entries(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files if archive[key].dtype.kind == "f"}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_value_in_any_real_model_entry_names_file_and_entry(tmp_path: Path, bad: float) -> None:
    saved = saved_model(tmp_path)
    entries = real_entries(saved)
    assert {"collider_center", "collider_size", "ledger", "t", "mass", "option_gravity"} <= set(entries)
    for key, value in entries.items():
        if value.size == 0:  # uv of a system without texture coordinates
            continue
        damaged = value.copy()
        damaged.reshape(-1)[-1] = bad  # the last collider, node, spring or component
        path = replaced(saved, tmp_path / f"{key}.npz", **{key: damaged})
        if math.isnan(bad) and key in NAN_MEANS_NONE:
            model_io.load(path)
            continue
        message = refusal(model_io.load, path)
        assert names(message, key) or names(message, key.removeprefix("option_")), message


def test_nan_collider_center_names_the_entry(tmp_path: Path) -> None:
    saved = saved_model(tmp_path)
    centers = real_entries(saved)["collider_center"]
    centers[0, 1] = np.nan
    message = refusal(model_io.load, replaced(saved, tmp_path / "nan_center.npz", collider_center=centers))
    assert names(message, "collider_center") and "NaN" in message, message


@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
def test_non_finite_value_in_any_real_trajectory_entry_names_file_and_entry(tmp_path: Path, bad: float) -> None:
    saved = saved_trajectory(tmp_path)
    entries = real_entries(saved)
    assert {"positions", "velocities", "collider_centers", "dt", "rest"} <= set(entries)
    for key, value in entries.items():
        if value.size == 0:
            continue
        damaged = value.copy()
        damaged.reshape(-1)[-1] = bad
        message = refusal(msprings.Trajectory.load, replaced(saved, tmp_path / f"{key}.npz", **{key: damaged}))
        assert names(message, key), message


# ---- the colliders' JSON in a trajectory --------------------------------------------------

def colliders_json(saved: Path) -> list[dict[str, Any]]:
    with np.load(saved) as archive:
        return json.loads(str(archive["colliders"]))


@pytest.mark.parametrize("label, text", [
    ("nested lists", "[" * 100_000 + "]" * 100_000),
    ("nested objects", '[{"kind": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}]"),
    ("not JSON", "[{'kind': 'sphere'}]"),
    ("not a list", '{"kind": "sphere"}'),
    ("NaN", '[{"kind": "sphere", "center": [NaN, 0, 0]}]'),
    ("Infinity", '[{"kind": "sphere", "center": [0, Infinity, 0]}]'),
    ("overflowing number", '[{"kind": "sphere", "center": [0, 0, 1e999]}]'),
    ("unknown kind", '[{"kind": "torus", "center": [0, 0, 0]}]'),
    ("center of two", '[{"kind": "sphere", "center": [0, 0]}]'),
    ("nested value", '[{"kind": "sphere", "center": [0, 0, 0], "size": [[0.5]]}]'),
    ("more colliders than centers", json.dumps([{"kind": "sphere", "center": [0, 0, 0]}] * 3)),
], ids=lambda value: value if len(value) < 40 else None)
def test_damaged_collider_descriptions_name_the_entry(tmp_path: Path, label: str, text: str) -> None:
    saved = saved_trajectory(tmp_path)
    path = replaced(saved, tmp_path / "colliders.npz", colliders=np.array(text))
    message = refusal(msprings.Trajectory.load, path)
    assert names(message, "colliders"), message


def test_colliders_json_longer_than_any_description_is_refused_before_parsing(tmp_path: Path) -> None:
    saved = saved_trajectory(tmp_path)
    padded = json.dumps(colliders_json(saved)) + " " * 1_000_000
    message = refusal(msprings.Trajectory.load, replaced(saved, tmp_path / "long.npz", colliders=np.array(padded)))
    assert names(message, "colliders") and "bytes" in message, message


def test_trajectory_colliders_load_as_recorded(tmp_path: Path) -> None:
    saved = saved_trajectory(tmp_path)
    loaded = msprings.Trajectory.load(saved)
    assert [c["kind"] for c in loaded.colliders] == ["plane", "sphere"]
    assert loaded.colliders[1]["center"] == (0.0, 3.0, 0.0)


# ---- sizes that the headers disagree on: refused before any data is inflated -------------

def assert_refused_small(load: Any, path: Path, entry: str) -> None:
    tracemalloc.start()
    try:
        message = refusal(load, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert names(message, entry), message
    assert peak < 10e6, f"{peak / 1e6:.0f} MB allocated before refusing"


@pytest.mark.parametrize("entry", ["x_initial", "v_initial", "mass", "pinned", "springs", "k", "collider_kind",
                                   "collider_center", "faces"])
def test_model_member_of_many_deflated_rows_costs_nothing(tmp_path: Path, entry: str) -> None:
    """The first entry read (x_initial) of 4 million zero rows, 96 MB deflated to about 100 kB,
    is refused from the headers: the node count the other entries agree on is 4."""
    saved = saved_model(tmp_path)
    with np.load(saved) as archive:
        like = archive[entry]
    bomb = np.zeros((4_000_000, *like.shape[1:]), dtype=like.dtype)
    path = replaced(saved, tmp_path / "bomb.npz", **{entry: bomb})
    assert path.stat().st_size < 2e6
    assert_refused_small(model_io.load, path, entry)


@pytest.mark.parametrize("entry, shape", [("positions", (11, 400_000, 3)), ("times", (4_000_000,)),
                                          ("velocities", (11, 400_000, 3)), ("energy", (4_000_000, 7)),
                                          ("rest", (4_000_000,)), ("uv", (4_000_000, 2)), ("faces", (2_000_000, 3))])
def test_trajectory_member_of_many_deflated_rows_costs_nothing(tmp_path: Path, entry: str,
                                                              shape: tuple[int, ...]) -> None:
    """Faces too: four nodes make at most 8 distinct triangles (with both orientations)."""
    saved = saved_trajectory(tmp_path)
    contents = {"has_uv": np.array(True)} if entry == "uv" else {}
    bomb = np.zeros(shape, dtype=np.int32 if entry == "faces" else np.float64)
    path = replaced(saved, tmp_path / "bomb.npz", **contents, **{entry: bomb})
    assert path.stat().st_size < 2e6
    assert_refused_small(msprings.Trajectory.load, path, entry)


def test_text_entry_longer_than_any_name_is_refused(tmp_path: Path) -> None:
    saved = saved_model(tmp_path)
    path = replaced(saved, tmp_path / "long_name.npz", option_integrator=np.array("rk4" + " " * 100_000))
    message = refusal(model_io.load, path)
    assert names(message, "option_integrator"), message


def test_files_that_agree_still_load_bitwise(tmp_path: Path) -> None:
    s = moving_system()
    s.add_sphere((0.0, 3.0, 0.0), 0.5)
    assert snapshot(model_io.load(model_io.save(s, tmp_path / "model.npz"))) == snapshot(s)
    trajectory = s.run(DT, 5, velocities=True)
    loaded = msprings.Trajectory.load(trajectory.save(tmp_path / "run.npz"))
    assert loaded.positions.tobytes() == trajectory.positions.tobytes()
    assert loaded.colliders == trajectory.colliders
