"""Coverage-guided fuzz targets (atheris) for the readers of files from outside.

    python tests/fuzz_targets.py {load_obj|load_model|load_trajectory} [libFuzzer options] [corpus folders]

Each input is written to a file and read; the documented ValueError is the only exception
allowed, anything else (or a crash) is a finding.  tests/test_fuzz.py runs each target for a
few seconds where atheris is installed.
"""
from __future__ import annotations

import os
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports():
    import msprings
    from msprings import io as model_io
    from msprings import mesh

READERS = {"load_obj": mesh.load_obj, "load_model": model_io.load, "load_trajectory": msprings.Trajectory.load}


def main() -> None:
    reader = READERS[sys.argv[1]]
    handle, path = tempfile.mkstemp(suffix=".obj" if sys.argv[1] == "load_obj" else ".npz")
    os.close(handle)
    warnings.simplefilter("ignore")  # a mesh's non-manifold edges warn; only exceptions matter here

    def one_input(data: bytes) -> None:
        with open(path, "wb") as stream:
            stream.write(data)
        try:
            reader(path)
        except ValueError:
            pass

    try:
        atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
        atheris.Fuzz()
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
