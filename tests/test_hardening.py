"""Every input from outside gets its documented error, and nothing else.

Each case asserts the exception type, the argument's (or file entry's) name in the message,
and that the system is bitwise unchanged afterwards: integers of any size, real numbers beyond
a double, names that C cannot hold, collider vectors of any finite size, values written through
views, divergence, huge step counts, the self-collision hash at extreme coordinates, hostile
model and trajectory files, OBJ files without faces, and fork() while a thread steps.  The
command line's errors are tested in test_cli.py, random operation sequences in test_fuzz.py.
"""

from __future__ import annotations

import io as bytes_io
import math
import os
import re
import threading
import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from numpy.lib import format as npy_format

import msprings
from msprings import io as model_io
from msprings import mesh, scenes

DT = 1e-3
VIEWS = ("x", "v", "f", "external", "mass", "pinned", "springs", "rest", "k", "c")
OPTIONS = ("integrator", "threads", "newton_max_iter", "cg_max_iter", "newton_tol", "cg_tol", "drag",
           "energy_loss", "strain_limit", "self_collision")


def moving_system() -> msprings.System:
    """A damped square of four nodes, one pinned, with a plane under it, after 20 steps."""
    positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    s = msprings.System(positions, [[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]], k=30.0, c=0.1, pinned=[2])
    s.add_plane((0.0, -2.0, 0.0), (0.0, 1.0, 0.0))
    s.external[1] = (0.3, 0.0, 0.1)
    s.step(DT, 20)
    return s


def snapshot(s: msprings.System) -> dict[str, Any]:
    """Every observable piece of a system as exact bytes or plain values."""
    state: dict[str, Any] = {name: getattr(s, name).tobytes() for name in VIEWS}
    state.update({name: repr(getattr(s, name)) for name in OPTIONS})
    state["clock"] = (float(s.t).hex(), s.steps)
    state["ledger"] = tuple(float(value).hex() for value in s.ledger())
    state["gravity"] = np.asarray(s.gravity).tobytes()
    state["colliders"] = [s._get_collider(collider_id) for collider_id in s._collider_ids()]
    return state


def assert_refused(action: Callable[[], Any], s: msprings.System, error: type[BaseException],
                   name: str) -> None:
    """``action`` raises exactly ``error`` naming ``name``, and ``s`` is unchanged."""
    before = snapshot(s)
    with pytest.raises(Exception) as caught:
        action()
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    assert re.search(name, str(caught.value)), str(caught.value)
    after = snapshot(s)
    for key, value in before.items():
        assert after[key] == value, f"{key} changed"


# ---- integers --------------------------------------------------------------------------

HUGE = [2**63, 2**64 + 1, 2**2000, -(2**63) - 1, -(2**70)]
NOT_INTEGERS = [1.0, 2.5, "3", True, None, 3 + 0j, np.float64(2.0)]

INTEGER_INPUTS: dict[str, tuple[Callable[[msprings.System, Any], Any], str]] = {
    "set_num_threads": (lambda s, value: msprings.set_num_threads(value), r"\bn\b"),
    "threads": (lambda s, value: setattr(s, "threads", value), "threads"),
    "newton_max_iter": (lambda s, value: setattr(s, "newton_max_iter", value), "newton_max_iter"),
    "cg_max_iter": (lambda s, value: setattr(s, "cg_max_iter", value), "cg_max_iter"),
    "step n": (lambda s, value: s.step(DT, value), r"\bn\b"),
    "remove_collider": (lambda s, value: s.remove_collider(value), "collider id"),
}


@pytest.mark.parametrize("entry", sorted(INTEGER_INPUTS))
@pytest.mark.parametrize("value", HUGE, ids=lambda value: f"{'-' if value < 0 else ''}{abs(value).bit_length()}bits")
def test_integer_out_of_range_is_value_error(entry: str, value: int) -> None:
    """An integer of any size out of range is a ValueError naming the argument, never OverflowError."""
    action, name = INTEGER_INPUTS[entry]
    s = moving_system()
    threads_before = msprings.get_num_threads()
    if entry == "remove_collider" and -(2**63) <= value < 2**63:
        # within int64 it is merely an id that no collider has
        assert_refused(lambda: action(s, value), s, KeyError, str(value))
    else:
        assert_refused(lambda: action(s, value), s, ValueError, name)
    assert msprings.get_num_threads() == threads_before


@pytest.mark.parametrize("entry", sorted(INTEGER_INPUTS))
@pytest.mark.parametrize("value", NOT_INTEGERS, ids=repr)
def test_non_integer_is_type_error(entry: str, value: Any) -> None:
    action, name = INTEGER_INPUTS[entry]
    s = moving_system()
    assert_refused(lambda: action(s, value), s, TypeError, name)


@pytest.mark.parametrize("entry, value", [("threads", -1), ("threads", 1025), ("newton_max_iter", 0),
                                          ("newton_max_iter", 2**31), ("cg_max_iter", 0), ("cg_max_iter", 2**31),
                                          ("step n", 0), ("step n", -5)])
def test_integer_out_of_range_names_value_and_bounds(entry: str, value: int) -> None:
    action, name = INTEGER_INPUTS[entry]
    s = moving_system()
    assert_refused(lambda: action(s, value), s, ValueError, rf"{name} = {value} is out of range: it must be between")


def test_integers_in_range_are_taken() -> None:
    """The parser takes what it should: numpy integers and the range's ends."""
    s = moving_system()
    s.newton_max_iter = np.int64(2**31 - 1)
    s.cg_max_iter = np.uint8(1)
    s.threads = 1024
    assert (s.newton_max_iter, s.cg_max_iter, s.threads) == (2**31 - 1, 1, 1024)
    steps = s.steps
    s.step(DT, np.int16(3))
    assert s.steps == steps + 3


BEYOND_A_DOUBLE: dict[str, tuple[Callable[[msprings.System], Any], str]] = {
    "step dt": (lambda s: s.step(2**1100), r"\bdt\b"),
    "drag": (lambda s: setattr(s, "drag", 2**2000), "drag"),
    "gravity": (lambda s: setattr(s, "gravity", (0.0, -(2**1100), 0.0)), "gravity"),
    "wind": (lambda s: setattr(s, "wind", [2**1100, 0, 0]), "wind"),
    "sphere radius": (lambda s: s.add_sphere((0.0, 0.0, 0.0), 2**2000), "radius"),
    "cylinder height": (lambda s: s.add_cylinder((0.0, 0.0, 0.0), 1.0, -(2**1100)), "height"),
    "plane point": (lambda s: s.add_plane((0, 2**1100, 0)), "point"),
    "collider radius": (lambda s: setattr(s.colliders[-1], "radius", 2**1100), "radius"),
    "wind_at t": (lambda s: s.wind_at([0.0, 0.0, 0.0], 2**1100), r"\bt\b"),
    "damping_for_ratio": (lambda s: s.damping_for_ratio([2**1100] * s.n_springs), "zeta"),
    "run steps": (lambda s: s.run(DT, 2**70), "steps"),
}


@pytest.mark.parametrize("entry", sorted(BEYOND_A_DOUBLE))
def test_real_beyond_a_double_is_value_error(entry: str) -> None:
    """A Python integer too large for a double is out of range (ValueError naming the argument),
    not the wrong type and never OverflowError."""
    action, name = BEYOND_A_DOUBLE[entry]
    s = moving_system()
    s.add_sphere((9.0, 9.0, 9.0), 1.0)
    assert_refused(lambda: action(s), s, ValueError, name)


@pytest.mark.parametrize("argument", ["positions", "mass", "springs", "pinned"])
def test_constructor_numbers_beyond_numpy_types(argument: str) -> None:
    arguments: dict[str, Any] = {"positions": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "springs": [[0, 1]]}
    bad = {"positions": [[0.0, 0.0, 2**1100], [1.0, 0.0, 0.0]], "mass": [1.0, -(2**2000)],
           "springs": [[0, 2**64]], "pinned": [2**70]}[argument]
    arguments[argument] = bad
    with pytest.raises(ValueError, match=argument):
        msprings.System(arguments.pop("positions"), arguments.pop("springs"), **arguments)


# ---- names -----------------------------------------------------------------------------

BAD_NAMES = [("embedded NUL", "rk4\x00junk", "NUL"), ("lone surrogate", "rk4\ud800", "surrogate")]


@pytest.mark.parametrize("label, text, reason", BAD_NAMES, ids=[case[0] for case in BAD_NAMES])
def test_integrator_name_that_c_cannot_hold(label: str, text: str, reason: str) -> None:
    s = moving_system()
    assert_refused(lambda: setattr(s, "integrator", text), s, ValueError, f"integrator.*{reason}")


@pytest.mark.parametrize("label, text, reason", BAD_NAMES, ids=[case[0] for case in BAD_NAMES])
def test_integrator_name_at_construction(label: str, text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=f"integrator.*{reason}"):
        msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[0, 1]], integrator=text)


@pytest.mark.parametrize("label, text, reason",
                         [("embedded NUL", "plane\x00", "NUL"), ("lone surrogate", "plane\udfff", "surrogate")],
                         ids=["embedded NUL", "lone surrogate"])
def test_collider_kind_that_c_cannot_hold(label: str, text: str, reason: str) -> None:
    s = moving_system()
    arguments = ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0, 0.0, 0.0)
    assert_refused(lambda: s._add_collider(text, *arguments), s, ValueError, f"collider kind.*{reason}")
    collider_id = s._collider_ids()[0]
    assert_refused(lambda: s._set_collider(collider_id, text, *arguments), s, ValueError, "collider kind")


# ---- collider vectors ------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e200, 1e300, 1.7e308, 1e-10])
def test_huge_or_tiny_plane_normal_is_normalised(scale: float) -> None:
    """A finite normal of any size is scaled before it is squared: the stored normal is the
    unit vector and the system steps."""
    s = moving_system()
    plane = s.add_plane((0.0, -1.0, 0.0), (scale, scale, 0.0))
    np.testing.assert_allclose(plane.normal, [math.sqrt(0.5), math.sqrt(0.5), 0.0], rtol=1e-15)
    cylinder = s.add_cylinder((5.0, 0.0, 0.0), 0.5, 1.0, axis=(0.0, -scale, scale))
    np.testing.assert_allclose(cylinder.axis, [0.0, -math.sqrt(0.5), math.sqrt(0.5)], rtol=1e-15)
    s.step(DT, 5)
    assert np.isfinite(s.x).all()


def test_vanishing_normal_is_refused() -> None:
    s = moving_system()
    assert_refused(lambda: s.add_plane((0.0, 0.0, 0.0), (1e-300, 0.0, 0.0)), s, ValueError, "normal")
    assert_refused(lambda: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, axis=(0.0, 0.0, 0.0)), s, ValueError,
                   "axis")


# ---- values written through views ------------------------------------------------------

VIEW_WRITES: list[tuple[str, Callable[[msprings.System], None], str]] = [
    ("negative c, k = 0", lambda s: (s.k.__setitem__(0, 0.0), s.c.__setitem__(0, -1.0)), r"\bc\[0\]"),
    ("negative k", lambda s: s.k.__setitem__(1, -5.0), r"\bk\[1\]"),
    ("nan mass", lambda s: s.mass.__setitem__(0, np.nan), r"mass\[0\]"),
    ("zero mass on a free node", lambda s: s.mass.__setitem__(3, 0.0), r"mass\[3\]"),
    ("nan rest", lambda s: s.rest.__setitem__(2, np.nan), r"rest\[2\]"),
    ("inf x", lambda s: s.x.__setitem__((1, 0), np.inf), r"\bx\b"),
    ("nan v", lambda s: s.v.__setitem__((0, 2), np.nan), r"\bv\b"),
]


@pytest.mark.parametrize("integrator", ["explicit_euler", "symplectic_euler", "rk4"])
@pytest.mark.parametrize("label, write, name", VIEW_WRITES, ids=[case[0] for case in VIEW_WRITES])
def test_bad_value_through_view_is_the_c_checks_value_error(integrator: str, label: str,
                                                            write: Callable[[msprings.System], None],
                                                            name: str) -> None:
    """The stability pre-check runs on a new dt; it must not trip over the bad value first."""
    s = moving_system()
    s.integrator = integrator
    write(s)
    assert_refused(lambda: s.step(2 * DT), s, ValueError, name)


# ---- divergence ------------------------------------------------------------------------


def diverging_system(integrator: str, at_once: bool) -> msprings.System:
    """A stepped system that diverges at its next step (``at_once``) or a few steps later."""
    far = 1e300 if at_once else 1.0
    s = msprings.System([[0.0, 0.0, 0.0], [far, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0, 1], [1, 2]], rest=0.5,
                        k=[1e10 if at_once else 1e60, 1.0], integrator=integrator, pinned=[0])
    s.add_plane((0.0, -5.0, 0.0))
    s.external[2] = (0.0, 0.1, 0.0)
    return s


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
@pytest.mark.parametrize("integrator", ["explicit_euler", "symplectic_euler", "velocity_verlet", "rk4"])
@pytest.mark.parametrize("at_once", [True, False], ids=["first step", "later step"])
def test_divergence_leaves_the_whole_system_unchanged(integrator: str, at_once: bool) -> None:
    """A diverging call, whether its first step or a later one diverges, leaves the whole system
    bitwise as it found it: f (saved with the state), x, v, the clock, the ledger, the colliders."""
    s = diverging_system(integrator, at_once)
    before = snapshot(s)
    with pytest.raises(msprings.DivergenceError) as caught:
        s.step(DT, 40)
    assert (caught.value.call_step == 1) == at_once
    after = snapshot(s)
    for key, value in before.items():
        assert after[key] == value, f"{key} changed"


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_huge_step_count_is_interrupted_not_overflowed() -> None:
    """n close to 2**63 with many nodes must not overflow the binding's work estimate: the
    run diverges within its first chunk and the error reports its step."""
    s = msprings.System(np.arange(3000.0).reshape(1000, 3), [[i, i + 1] for i in range(999)], k=1e300)
    with pytest.raises(msprings.DivergenceError) as caught:
        s.step(1.0, 2**63 - 1)
    assert 1 <= caught.value.step < 1000
    assert caught.value.call_step == caught.value.step and s.steps == 0


# ---- self-collision at extreme coordinates ---------------------------------------------


def test_self_collision_hash_far_from_the_origin() -> None:
    """A tiny distance with huge coordinates puts nodes in cells beyond int64: they share the
    outermost cell and nothing is undefined (UBSan runs of the C tests cover the cast)."""
    s = msprings.System([[1e300, 0.0, 0.0], [-1e300, 1e300, 0.0], [0.0, 0.0, 0.0]], [], gravity=(0, 0, 0))
    s.self_collision = 1e-300
    s.step(DT, 3)
    np.testing.assert_array_equal(s.x, [[1e300, 0.0, 0.0], [-1e300, 1e300, 0.0], [0.0, 0.0, 0.0]])


# ---- model and trajectory files from outside -------------------------------------------


UNPICKLED: list[str] = []


class Tripwire:
    """Records being unpickled: loading must never get that far."""

    def __setstate__(self, state: Any) -> None:
        UNPICKLED.append("unpickled")


def npy(array: np.ndarray) -> bytes:
    stream = bytes_io.BytesIO()
    npy_format.write_array(stream, array, allow_pickle=True)
    return stream.getvalue()


def npy_claiming(shape: tuple[int, ...], data: bytes, descr: str = "<f8") -> bytes:
    """An .npy member whose header claims ``shape`` whatever data follows."""
    stream = bytes_io.BytesIO()
    npy_format.write_array_header_1_0(stream, {"descr": descr, "fortran_order": False, "shape": shape})
    return stream.getvalue() + data


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def write_zip(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in entries.items():
            archive.writestr(member, data)
    return path


def saved_model(tmp_path: Path) -> Path:
    s = moving_system()
    s.add_sphere((0.0, 3.0, 0.0), 0.5)
    return model_io.save(s, tmp_path / "model.npz")


def with_member(tmp_path: Path, label: str, **replaced: bytes | None) -> Path:
    entries = members(saved_model(tmp_path))
    for key, data in replaced.items():
        if data is None:
            del entries[f"{key}.npy"]
        else:
            entries[f"{key}.npy"] = data
    return write_zip(tmp_path / f"{label}.npz", entries)


def assert_load_refused(load: Callable[[Path], Any], path: Path, member: str) -> None:
    """Only a ValueError naming ``member``, without allocating anything near a claimed size."""
    tracemalloc.start()
    try:
        with pytest.raises(Exception) as caught:
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert type(caught.value) is ValueError, f"{type(caught.value).__name__}: {caught.value}"
    assert re.search(rf"\b{member}\b", str(caught.value)), str(caught.value)
    assert peak < 20e6, f"{peak / 1e6:.0f} MB allocated before refusing"


# (what, the member replaced, the name the error must contain, the member's new bytes)
HOSTILE_MEMBERS: list[tuple[str, str, str, Callable[[], bytes | None]]] = [
    ("huge shape, few bytes", "x", "x", lambda: npy_claiming((10**9, 3), bytes(96))),
    ("huge shape in f", "f", "f", lambda: npy_claiming((2**40, 3), bytes(96))),
    ("shape whose size overflows int64", "mass", "mass", lambda: npy_claiming((2**62, 2**62), bytes(8))),
    ("deflated zeros of the wrong shape", "external", "external", lambda: npy(np.zeros((4_000_000, 3)))),
    ("str dtype claiming gigabytes", "option_integrator", "option_integrator", lambda: npy_claiming((), b"rk4", descr="<U1000000000")),
    ("pickled object array", "mass", "mass", lambda: npy(np.array([Tripwire(), 1.0, 1.0, 1.0], dtype=object))),
    ("complex positions", "x", "x", lambda: npy(np.zeros((4, 3), dtype=complex))),
    ("strings for masses", "mass", "mass", lambda: npy(np.array(["1", "1", "1", "1"]))),
    ("NaN in x", "x", "x", lambda: npy(np.full((4, 3), np.nan))),
    ("inf in v", "v", "v", lambda: npy(np.full((4, 3), np.inf))),
    ("collider array longer than the kinds", "collider_center", "collider_center", lambda: npy(np.zeros((5, 3)))),
    ("empty collider kinds", "collider_kind", "collider_center", lambda: npy(np.array([], dtype="<U16"))),
    ("header garbage", "k", "k", lambda: b"\x93NUMPY\x01\x00\x10\x00{'descr': <f8}  \n"),
    ("not an npy", "k", "k", lambda: b"garbage"),
    ("1-D spring array", "springs", "springs", lambda: npy(np.array([0, 1, 1, 2], dtype=np.int32))),
    ("spring to a missing node", "springs", "springs", lambda: npy(np.array([[0, 1], [1, 2], [2, 3], [3, 9], [0, 2]]))),
    ("unknown integrator", "option_integrator", "integrator", lambda: npy(np.array("leapfrog"))),
    ("integrator with NUL", "option_integrator", "integrator", lambda: npy(np.array("rk4\x00junk"))),
    ("negative thread count", "option_threads", "threads", lambda: npy(np.array(-3))),
    ("step count beyond int64", "steps", "steps", lambda: npy(np.array(2**64 - 1, dtype=np.uint64))),
    ("zero plane normal", "collider_axis", "normal", lambda: npy(np.zeros((2, 3)))),
    ("missing entry", "ledger", "ledger", lambda: None),  # type: ignore[arg-type,return-value]
]


@pytest.mark.parametrize("label, member, named, data", HOSTILE_MEMBERS, ids=[case[0] for case in HOSTILE_MEMBERS])
def test_hostile_model_member(tmp_path: Path, label: str, member: str, named: str,
                              data: Callable[[], bytes | None]) -> None:
    path = with_member(tmp_path, "hostile", **{member: data()})
    assert_load_refused(model_io.load, path, named)
    assert not UNPICKLED


def test_member_claiming_impossible_compression(tmp_path: Path) -> None:
    """A zip directory that claims 2 GB from a few hundred compressed bytes is refused before
    anything is inflated."""
    path = saved_model(tmp_path)
    raw = bytearray(path.read_bytes())
    entry = raw.index(b"PK\x01\x02" + raw[raw.index(b"PK\x01\x02") + 4:raw.index(b"PK\x01\x02") + 4])
    while raw[entry + 46:entry + 46 + 5] != b"x.npy":
        entry = raw.index(b"PK\x01\x02", entry + 4)
    raw[entry + 24:entry + 28] = (2**31 - 1).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    assert_load_refused(model_io.load, path, "x")


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 0.999])
def test_truncated_model_file(tmp_path: Path, fraction: float) -> None:
    path = saved_model(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ValueError, match="model file"):
        model_io.load(path)


def test_every_flipped_byte_is_a_value_error_or_a_valid_model(tmp_path: Path) -> None:
    """Corrupting any one byte of a model file gives a ValueError or (where the byte is not
    checked, e.g. inside a float) a system; never another exception."""
    path = saved_model(tmp_path)
    data = path.read_bytes()
    damaged = tmp_path / "flipped.npz"
    for position in range(0, len(data), max(1, len(data) // 400)):
        corrupted = bytearray(data)
        corrupted[position] ^= 0xFF
        damaged.write_bytes(bytes(corrupted))
        try:
            model_io.load(damaged)
        except ValueError:
            pass


def test_model_files_that_load_are_unchanged_by_the_checks(tmp_path: Path) -> None:
    """A file with a huge (finite) plane normal saved by this version loads exactly."""
    s = moving_system()
    s.add_plane((0.0, -3.0, 0.0), (1e200, 1e200, 0.0))
    loaded = model_io.load(model_io.save(s, tmp_path / "big_normal.npz"))
    assert snapshot(loaded) == snapshot(s)


def test_hostile_trajectory_member(tmp_path: Path) -> None:
    s = moving_system()
    path = s.run(DT, 10).save(tmp_path / "run.npz")
    entries = members(path)
    for member, data in (("positions", npy_claiming((10**8, 4, 3), bytes(96))),
                         ("times", npy(np.array([Tripwire()] * 11, dtype=object))),
                         ("energy", npy(np.zeros((11, 7), dtype=complex)))):
        hostile = write_zip(tmp_path / f"{member}.npz", {**entries, f"{member}.npy": data})
        assert_load_refused(msprings.Trajectory.load, hostile, member)
    assert not UNPICKLED


# ---- meshes, texture coordinates and empty index arrays --------------------------------


@pytest.mark.parametrize("text", ["", "\n\n# only a comment\n", "v 0 0 0\nv 1 0 0\nv 0 1 0\n", "\ufeff"],
                         ids=["0 bytes", "comments", "point cloud", "byte-order mark"])
def test_obj_without_faces_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.obj"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty\.obj has no faces"):
        mesh.load_obj(path)


def test_missing_obj_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        mesh.load_obj(tmp_path / "missing.obj")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_uv_must_be_finite(bad: float) -> None:
    uv = np.zeros((3, 2))
    uv[1, 0] = bad
    with pytest.raises(ValueError, match=r"uv\[1\]"):
        msprings.System(np.eye(3), [[0, 1]], uv=uv)
    with pytest.raises(ValueError, match=r"uv\[1\]"):
        mesh.Mesh(np.eye(3), [[0, 1, 2]], uv)


@pytest.mark.parametrize("shape", [(0, 3), (0, 1), (0, 2, 1), (2, 0)])
def test_empty_springs_of_the_wrong_width(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"springs must have shape \(rows, 2\)"):
        msprings.System(np.eye(3), np.zeros(shape, dtype=int))
    with pytest.raises(ValueError, match=r"faces must have shape \(rows, 3\)"):
        msprings.System(np.eye(3), [], faces=np.zeros((0, 2), dtype=int))


def test_empty_springs_and_faces_that_fit() -> None:
    for springs in ([], np.zeros((0, 2), dtype=np.int32), np.zeros((0, 2))):
        assert msprings.System(np.eye(3), springs, faces=[]).n_springs == 0


# ---- fork while another thread steps ---------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_while_another_thread_steps_leaves_the_child_a_usable_system() -> None:
    """The parent's stepping thread does not exist in a forked child: there the system is
    not busy, and it steps."""
    nodes = 2000
    s = msprings.System(np.c_[np.arange(nodes), np.zeros(nodes), np.zeros(nodes)],
                        [[i, i + 1] for i in range(nodes - 1)], k=50.0, c=0.5, pinned=[0])
    stepper = threading.Thread(target=s.step, args=(1e-4, 150_000))
    stepper.start()
    try:
        while True:  # wait until the step holds the system
            try:
                s.threads = 0
            except RuntimeError as error:
                assert "being stepped by another thread" in str(error)
                break
            assert stepper.is_alive(), "the step ended before the fork"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a threaded process
            pid = os.fork()
        if pid == 0:
            status = 1
            try:
                steps = s.steps
                s.step(1e-4, 3)
                status = 0 if s.steps == steps + 3 and np.isfinite(s.x).all() else 2
            except BaseException:
                status = 3
            finally:
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
        assert os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == 0, wait_status
    finally:
        stepper.join()
    assert s.steps == 150_000


# ---- found by the property-based tests (tests/test_fuzz.py) ----------------------------


def test_box_corners_near_the_largest_double() -> None:
    """Centre and half extents are taken from the halves: no overflow, no warning."""
    s = moving_system()
    box = s.add_box((-1.7e308, -1.7e308, -1.7e308), (1.7e308, 1.7e308, 1.7e308))
    assert s._get_collider(box.id)[1] == (0.0, 0.0, 0.0)
    assert s._get_collider(box.id)[3] == (1.7e308, 1.7e308, 1.7e308)
    assert_refused(lambda: s.add_box((np.inf, 0.0, 0.0), (np.inf, 1.0, 1.0)), s, ValueError, "finite")


def test_negative_zero_options_round_trip(tmp_path: Path) -> None:
    s = moving_system()
    s.drag = -0.0
    s.gust = -0.0
    loaded = model_io.load(model_io.save(s, tmp_path / "signed_zero.npz"))
    assert math.copysign(1.0, loaded.drag) == math.copysign(1.0, loaded.gust) == -1.0
    assert snapshot(loaded) == snapshot(s)


# ---- sizes of generated scenes and meshes ----------------------------------------------


@pytest.mark.parametrize("build, name, limit", [
    (lambda value: scenes.chain(value), "n", 2**31 - 1),
    (lambda value: scenes.cloth(value), "n", 46340),
    (lambda value: scenes.cloth(4, value), "columns", 46340),
    (lambda value: scenes.flag(rows=value), "rows", 46340),
    (lambda value: scenes.tablecloth(value), "n", 46340),
    (lambda value: scenes.jelly_cube(value), "n", 1290),
    (lambda value: mesh.icosphere(value), "subdivisions", 13),
    (lambda value: scenes.spring_sphere(value), "subdivisions", 13),
], ids=["chain", "cloth", "cloth columns", "flag", "tablecloth", "jelly_cube", "icosphere", "spring_sphere"])
@pytest.mark.parametrize("excess", [1, 2**40, 2**200])
def test_generated_sizes_have_an_upper_bound(build: Callable[[int], Any], name: str, limit: int, excess: int) -> None:
    """Sizes beyond the core's int32 node indices (or, for spheres, the subdivision that reaches
    them) are refused at once with a ValueError naming the argument, before anything is built."""
    with pytest.raises(ValueError, match=rf"{name} = .* is out of range.*{limit}"):
        build(limit + excess)


def test_huge_radius_and_spacing_are_value_errors() -> None:
    with pytest.raises(ValueError, match="radius"):
        mesh.icosphere(1, 2**2000)
    with pytest.raises(ValueError, match="spacing"):
        scenes.chain(3, 2**1100)
