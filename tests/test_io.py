"""Model files: ``msprings.io.save`` / ``msprings.io.load`` of a whole system.

A round trip must be exact: the same bits in every array, the same options and colliders,
the same clock, the same initial state for ``reset()``, and stepping the original and the
loaded system on together must give bitwise identical states.  Files from a newer format
version, and files that are not model files, are refused with ValueError.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msprings
from msprings import io as model_io
from msprings import mesh

ARRAYS = ("x", "v", "f", "external", "mass", "pinned", "springs", "faces", "rest", "k", "c")
OPTIONS = (
    "integrator", "drag", "energy_loss", "strain_limit", "self_collision", "threads", "newton_max_iter",
    "newton_tol", "cg_max_iter", "cg_tol", "air_density", "drag_coefficient", "lift_coefficient", "gust",
    "gust_frequency", "gust_wavenumber",
)
VECTOR_OPTIONS = ("gravity", "wind")
COLLIDER_FIELDS = {
    "plane": ("center", "normal", "velocity", "restitution", "friction", "thickness"),
    "sphere": ("center", "radius", "velocity", "restitution", "friction", "thickness"),
    "box": ("center", "half_extents", "velocity", "restitution", "friction", "thickness"),
    "cylinder": ("center", "axis", "radius", "height", "velocity", "restitution", "friction", "thickness"),
}


def collider_description(system: msprings.System) -> list[tuple[Any, ...]]:
    """Every collider's kind and parameters, in order (ids left out: they are handles)."""
    described = []
    for collider in system.colliders:
        values: list[Any] = [collider.kind]
        for field in COLLIDER_FIELDS[collider.kind]:
            value = getattr(collider, field)
            values.append(tuple(np.asarray(value).tolist()) if np.ndim(value) else value)
        described.append(tuple(values))
    return described


def assert_same_system(a: msprings.System, b: msprings.System) -> None:
    """Bitwise equal arrays, equal options, colliders, clock and initial state."""
    for name in ARRAYS:
        first, second = getattr(a, name), getattr(b, name)
        assert first.dtype == second.dtype and first.shape == second.shape, name
        assert first.tobytes() == second.tobytes(), name
    for name in OPTIONS:
        assert getattr(a, name) == getattr(b, name), name
    for name in VECTOR_OPTIONS:
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    assert (a.t, a.steps, a.dissipated) == (b.t, b.steps, b.dissipated)
    for first, second in zip(a._initial_state(), b._initial_state()):
        assert first.tobytes() == second.tobytes()
    if a.uv is None:
        assert b.uv is None
    else:
        assert a.uv.tobytes() == b.uv.tobytes()
    assert collider_description(a) == collider_description(b)


def rich_system() -> msprings.System:
    """A converted ball with every kind of parameter, option and collider set away from its
    default, part-way through a run."""
    sphere = mesh.icosphere(1, radius=0.3, center=(0.1, 0.6, -0.2))
    n = sphere.n_vertices
    rng = np.random.default_rng(11)
    system = mesh.from_mesh(
        sphere.vertices, sphere.faces, mass=rng.uniform(0.01, 0.02, n), k=40.0, c=0.05, bend_k=4.0, bend_c=0.01,
        stabilise="center", uv=sphere.uv, pinned=[0], velocities=rng.normal(scale=0.1, size=(n, 3)),
        integrator="velocity_verlet", gravity=(0.1, -9.7, 0.05), drag=0.02, energy_loss=1e-4,
    )
    system.k[:] *= rng.uniform(0.8, 1.2, system.n_springs)
    system.c[:] *= rng.uniform(0.8, 1.2, system.n_springs)
    system.rest[:] *= rng.uniform(0.98, 1.0, system.n_springs)
    system.v[0] = (0.0, 0.01, 0.0)
    system.external[3] = (0.0, 0.05, 0.01)
    system.strain_limit = 0.2
    system.self_collision = 0.005
    system.threads = 1
    system.newton_max_iter, system.newton_tol, system.cg_max_iter, system.cg_tol = 7, 1e-7, 300, 1e-5
    system.air_density, system.drag_coefficient, system.lift_coefficient = 1.1, 0.9, 0.3
    system.wind = (0.5, 0.0, -0.25)
    system.gust, system.gust_frequency, system.gust_wavenumber = 0.3, 4.0, 2.0
    system.add_plane((0.0, 0.0, 0.0), (0.1, 1.0, 0.2), restitution=0.2, friction=0.4, thickness=1e-3)
    removed = system.add_box((5.0, 5.0, 5.0), (6.0, 6.0, 6.0))
    system.add_sphere((0.3, 0.1, 0.0), 0.15, friction=0.3, velocity=(-0.1, 0.0, 0.0))
    system.add_box((-1.0, -0.5, -1.0), (-0.6, 0.2, -0.7), restitution=0.5)
    system.add_cylinder((0.0, 0.05, 0.6), 0.2, 0.3, axis=(0.3, 1.0, 0.1), thickness=2e-3)
    system.remove_collider(removed)
    system.step(1e-3, 150)
    return system


def test_round_trip_is_exact_and_steps_identically(tmp_path: Path) -> None:
    original = rich_system()
    path = model_io.save(original, tmp_path / "ball.npz")
    assert path == tmp_path / "ball.npz"
    loaded = model_io.load(path)
    assert isinstance(loaded, msprings.System)
    assert_same_system(original, loaded)
    assert [c.kind for c in loaded.colliders] == ["plane", "sphere", "box", "cylinder"]
    for _ in range(3):
        original.step(1e-3, 50)
        loaded.step(1e-3, 50)
        assert_same_system(original, loaded)
    original.reset()
    loaded.reset()
    assert_same_system(original, loaded)


@pytest.mark.parametrize("integrator", msprings.INTEGRATORS)
def test_round_trip_mid_run_for_every_integrator(tmp_path: Path, integrator: str) -> None:
    positions = np.stack([np.arange(8) * 0.1, np.zeros(8), np.zeros(8)], axis=1)
    springs = np.stack([np.arange(7), np.arange(1, 8)], axis=1)
    original = msprings.System(positions, springs, mass=0.05, k=30.0, c=0.5, pinned=[0], integrator=integrator)
    original.step(1e-3, 40)
    loaded = model_io.load(model_io.save(original, tmp_path / f"{integrator}.npz"))
    original.step(1e-3, 60)
    loaded.step(1e-3, 60)
    assert_same_system(original, loaded)
    assert loaded.t > 0 and loaded.steps == 100


def test_defaults_round_trip(tmp_path: Path) -> None:
    # No springs, no faces, no uv, strain limiting off, no colliders.
    original = msprings.System([[0.0, 1.0, 0.0]], np.zeros((0, 2), dtype=np.int64))
    loaded = model_io.load(model_io.save(original, tmp_path / "point"))
    assert (tmp_path / "point").exists()
    assert loaded.strain_limit is None and loaded.uv is None and loaded.colliders == ()
    assert loaded.n_springs == 0 and loaded.n_faces == 0
    assert_same_system(original, loaded)


def rewrite(path: Path, target: Path, **changes: Any) -> Path:
    """Copies a model file with some entries replaced (or removed when the value is None)."""
    with np.load(path, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    for name, value in changes.items():
        if value is None:
            del entries[name]
        else:
            entries[name] = value
    with open(target, "wb") as stream:
        np.savez(stream, **entries)
    return target


def test_newer_format_version_is_refused(tmp_path: Path) -> None:
    saved = model_io.save(rich_system(), tmp_path / "ball.npz")
    newer = rewrite(saved, tmp_path / "newer.npz", format_version=np.array(model_io.FORMAT_VERSION + 1))
    with pytest.raises(ValueError, match=f"format version {model_io.FORMAT_VERSION + 1}.*upgrade msprings"):
        model_io.load(newer)
    with np.load(saved, allow_pickle=False) as archive:
        assert str(archive["format"]) == model_io.FORMAT_NAME == "msprings.model"
        assert int(archive["format_version"]) == model_io.FORMAT_VERSION == 3


def test_files_that_are_not_models_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.npz"
    text.write_text("not a model\n")
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    single = tmp_path / "array.npy"
    np.save(single, np.arange(3))
    other = tmp_path / "other.npz"
    np.savez(other, x=np.zeros(3))
    wrong_name = tmp_path / "wrong.npz"
    np.savez(wrong_name, format=np.array("something.else"), format_version=np.array(1))
    broken_zip = tmp_path / "broken.npz"
    with zipfile.ZipFile(broken_zip, "w") as archive:
        archive.writestr("format.npy", b"garbage")
    for path in (text, empty, single, other, wrong_name, broken_zip):
        with pytest.raises(ValueError, match="not an msprings model file|damaged"):
            model_io.load(path)
    with pytest.raises(FileNotFoundError):
        model_io.load(tmp_path / "missing.npz")
    with pytest.raises(TypeError, match="System"):
        model_io.save(np.zeros(3), tmp_path / "array.npz")  # type: ignore[arg-type]


def test_damaged_model_file_names_the_missing_entry(tmp_path: Path) -> None:
    saved = model_io.save(rich_system(), tmp_path / "ball.npz")
    for entry in ("k", "option_wind", "collider_center", "ledger", "watched_energy"):
        damaged = rewrite(saved, tmp_path / f"no_{entry}.npz", **{entry: None})
        with pytest.raises(ValueError, match=f"damaged.*'{entry}'"):
            model_io.load(damaged)
    wrong_shape = rewrite(saved, tmp_path / "short_x.npz", x=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="damaged.*x has shape"):
        model_io.load(wrong_shape)
