"""Coverage-guided fuzz targets (atheris) for what comes from outside: files and out= arrays.

    python tests/fuzz_targets.py TARGET [libFuzzer options] [corpus folders]

Targets:

- ``load_obj``, ``load_model``, ``load_trajectory``: each input is written to a file and read;
- ``model_members``, ``trajectory_members``: each input damages one to three members of a
  valid model file or trajectory (non-finite values, other lengths or dtypes, headers that
  lie about their data, inflating zeros, raw bytes, JSON in a trajectory's colliders) and the
  result is read.  The documented ValueError is the only exception allowed, it must start
  with the file's name, and no read may allocate near the sizes the headers claim;
- ``run_out``: a run records into an earlier run's arrays laid out by the input (misaligned,
  strided, reversed, byte-swapped, read-only, of another shape): it records what a new run
  records, or raises ValueError or TypeError with the system unchanged.

Anything else (or a crash) is a finding.  tests/test_fuzz.py runs each target for a few
seconds where atheris is installed.
"""
from __future__ import annotations

import io
import os
import sys
import tempfile
import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import atheris

with atheris.instrument_imports():
    import numpy as np
    from numpy.lib import format as npy_format

    import msprings
    from msprings import io as model_io
    from msprings import mesh

READERS: dict[str, Callable[[Any], Any]] = {
    "load_obj": mesh.load_obj, "load_model": model_io.load, "load_trajectory": msprings.Trajectory.load,
}
DESCRS = ("<f8", "<i8", "|b1", "<U16", "<c16", "<f4", ">f8", "<u8", "|u1", "<U1000000")
REALS = (float("nan"), float("inf"), float("-inf"), -1.0, 0.0, 1e308, 5e-324)
# what a damaged member may cost to refuse (bytes)
PEAK_LIMIT = 30_000_000


def _system() -> msprings.System:
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.2]],
                        [[0, 1], [1, 2], [2, 3], [3, 0]], pinned=[0], faces=[[0, 1, 2]],
                        uv=[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], c=0.1)
    s.add_plane((0.0, -1.0, 0.0))
    s.add_sphere((0.0, 2.0, 0.0), 0.3, velocity=(0.0, -1.0, 0.0))
    return s


def _members(kind: str, folder: Path) -> dict[str, bytes]:
    s = _system()
    s.step(1e-3, 3)
    path = model_io.save(s, folder / "seed.npz") if kind == "model" else s.run(1e-3, 4, velocities=True).save(
        folder / "seed.npz")
    with zipfile.ZipFile(path) as archive:
        return {info.filename[:-4]: archive.read(info) for info in archive.infolist()}


def _npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    npy_format.write_array(stream, array, allow_pickle=False)
    return stream.getvalue()


def _damaged(fdp: Any, seed: dict[str, bytes], kind: str) -> dict[str, bytes]:
    members = dict(seed)
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        key = sorted(members)[fdp.ConsumeIntInRange(0, len(members) - 1)]
        original = np.load(io.BytesIO(seed[key]))
        how = fdp.ConsumeIntInRange(0, 7)
        if how == 0 and original.dtype.kind == "f" and original.size:
            damaged = np.array(original)
            damaged.reshape(-1)[fdp.ConsumeIntInRange(0, original.size - 1)] = fdp.PickValueInList(list(REALS))
            members[key] = _npy(damaged)
        elif how == 1:
            rows = fdp.ConsumeIntInRange(0, 12)
            members[key] = _npy(np.resize(original, (rows, *original.shape[1:])))
        elif how == 2:
            shape = tuple(fdp.ConsumeIntInRange(0, 2**62) for _ in range(fdp.ConsumeIntInRange(0, 3)))
            stream = io.BytesIO()
            npy_format.write_array_header_1_0(stream, {"descr": fdp.PickValueInList(list(DESCRS)),
                                                        "fortran_order": fdp.ConsumeBool(), "shape": shape})
            members[key] = stream.getvalue() + fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 256))
        elif how == 3:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    members[key] = _npy(original.astype(np.dtype(fdp.PickValueInList(list(DESCRS[:-1])))))
                except (ValueError, TypeError, OverflowError):
                    pass
        elif how == 4:
            members.pop(key)
        elif how == 5:
            rows = fdp.ConsumeIntInRange(2**16, 3 * 2**20)
            dtype = original.dtype if original.dtype.kind in "fiub" else np.float64
            members[key] = _npy(np.zeros((rows, *original.shape[1:]), dtype=dtype))
        elif how == 6 and kind == "trajectory":
            depth = fdp.ConsumeIntInRange(0, 200_000)
            text = "[" * depth + fdp.ConsumeUnicodeNoSurrogates(64) + "]" * depth
            members["colliders"] = _npy(np.array(text))
        else:
            members[key] = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 512))
    return members


def _member_target(kind: str, path: str) -> Callable[[bytes], None]:
    with tempfile.TemporaryDirectory() as folder:
        seed = _members(kind, Path(folder))
    load = model_io.load if kind == "model" else msprings.Trajectory.load

    def one_input(data: bytes) -> None:
        members = _damaged(atheris.FuzzedDataProvider(data), seed, kind)
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for key, member in members.items():
                archive.writestr(f"{key}.npy", member)
        tracemalloc.start()
        try:
            load(path)
        except ValueError as error:
            if not str(error).startswith(path):
                raise AssertionError(f"the error does not name the file: {error}") from None
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        if peak > PEAK_LIMIT:
            raise AssertionError(f"{peak / 1e6:.0f} MB allocated reading a {os.path.getsize(path)} byte file")

    return one_input


def _laid_out(fdp: Any, array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` in memory laid out as the input says."""
    shape = array.shape if fdp.ConsumeProbability() < 0.8 else (array.shape[0], array.shape[1] + 1, 3)
    itemsize = 8
    padding = fdp.ConsumeIntInRange(0, 2)  # extra values between rows
    offset = fdp.ConsumeIntInRange(0, 15)  # bytes
    strides = (shape[1] * (3 + padding) * itemsize, (3 + padding) * itemsize, itemsize)
    buffer = bytearray(offset + shape[0] * strides[0] + 64)
    dtype = np.dtype(np.float64).newbyteorder() if fdp.ConsumeProbability() < 0.1 else np.dtype(np.float64)
    view = np.ndarray(shape, dtype=dtype, buffer=buffer, offset=offset, strides=strides)
    if fdp.ConsumeProbability() < 0.1:
        view = view[::-1]
    if shape == array.shape:
        view[...] = array
    if fdp.ConsumeProbability() < 0.1:
        view.setflags(write=False)
    return view


def _run_out_target() -> Callable[[bytes], None]:
    def one_input(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        every, velocities = fdp.ConsumeIntInRange(1, 3), fdp.ConsumeBool()
        system = _system()
        out = system.copy().run(1e-3, 5, record_every=every, velocities=True)
        expected = system.copy().run(1e-3, 5, record_every=every, velocities=velocities)
        out.positions, out.velocities = _laid_out(fdp, out.positions), _laid_out(fdp, out.velocities)
        x = system.x.tobytes()
        try:
            recorded = system.run(1e-3, 5, record_every=every, velocities=velocities, out=out)
        except (ValueError, TypeError):
            if system.x.tobytes() != x or system.steps != 0:
                raise AssertionError("a refused out changed the system") from None
            return
        for array in (recorded.positions, recorded.velocities if velocities else None):
            if array is not None and not (array.flags.aligned and array.flags.c_contiguous and array.dtype.isnative):
                raise AssertionError(f"a run recorded into an array with flags {array.flags} and dtype {array.dtype}")
        if recorded.positions.tobytes() != expected.positions.tobytes():
            raise AssertionError("the records differ from a new run's")

    return one_input


def main() -> None:
    target = sys.argv[1]
    handle, path = tempfile.mkstemp(suffix=".obj" if target == "load_obj" else ".npz")
    os.close(handle)
    warnings.simplefilter("ignore")  # a mesh's non-manifold edges warn; only exceptions matter here

    if target in READERS:
        reader = READERS[target]

        def one_input(data: bytes) -> None:
            with open(path, "wb") as stream:
                stream.write(data)
            try:
                reader(path)
            except ValueError:
                pass
    elif target in ("model_members", "trajectory_members"):
        one_input = _member_target(target.split("_")[0], path)
    elif target == "run_out":
        one_input = _run_out_target()
    else:
        raise SystemExit(f"unknown target {target!r}")

    try:
        atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
        atheris.Fuzz()
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
