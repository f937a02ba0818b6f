"""Where the msprings under test comes from: the source tree or an installed wheel.

Tests that start Python in a subprocess (the command line, notebook kernels, a Voila
server) put this folder first on its PYTHONPATH, so the subprocess imports the same
package as the tests: the source tree's in a checkout, site-packages' when the suite
tests an installed wheel (where the source tree's package has no compiled core).
"""
from __future__ import annotations

import os
from pathlib import Path

import msprings

PACKAGE_PARENT = Path(msprings.__file__).resolve().parent.parent


def python_path() -> str:
    """PYTHONPATH for a subprocess: PACKAGE_PARENT, then whatever PYTHONPATH already holds."""
    return os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))
