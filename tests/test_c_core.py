"""Builds and runs the plain C tests of the core (csrc/tests) through csrc/Makefile.

The optimised build, the AddressSanitizer/UndefinedBehaviorSanitizer build, the same with
signed overflow undefined and float-to-integer casts checked (-fno-wrapv,
float-cast-overflow), and an optimised build without the AVX2 vector code (what a processor
without AVX2 runs) must pass every test.  Build products go to pytest's temporary directory, so the source tree
stays clean.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parent.parent / "csrc"
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$")
REGISTERED = re.compile(r"^\s*TEST\((test_\w+)\),?\s*$", re.MULTILINE)


def _require_tool(name: str) -> str:
    """Return the full path of an executable, skipping the test with a clear reason if it is missing
    (an installed wheel is tested on machines without a compiler)."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"'{name}' was not found on PATH: the C core tests build csrc/ with make and a C compiler "
                    "(set CC to choose another compiler)")
    return path


def _run_make(target: str, build_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run `make -C csrc <target>` with its build directory under build_dir and return the result."""
    make = _require_tool("make")
    compiler = os.environ.get("CC", "cc").split()
    _require_tool(compiler[0])
    return subprocess.run(
        [make, "--no-print-directory", "-C", str(CSRC), target, f"BUILD={build_dir}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _summary(stdout: str) -> tuple[int, int]:
    """Parse the closing 'N passed, M failed' line of the C test runner."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    assert lines, "the C test runner printed nothing"
    match = SUMMARY.match(lines[-1])
    assert match is not None, f"the output does not end with 'N passed, M failed': {lines[-1]!r}"
    return int(match.group(1)), int(match.group(2))


@pytest.mark.parametrize("target", ["test", "test-asan", "test-strict", "test-sse2", "test-plain"])
def test_c_core(target: str, tmp_path: Path) -> None:
    """Every C test passes, in the optimised build, under ASan + UBSan, on the SSE2 path and on plain
    doubles: the golden hash of test_threads.c holds on every vector path."""
    result = _run_make(target, tmp_path / "build")
    report = (
        f"make {target} exited {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    assert result.returncode == 0, report
    passed, failed = _summary(result.stdout)
    assert failed == 0, report
    # Every test registered in the tables of the test_<concept>.c files ran.
    sources = sorted((CSRC / "tests").glob("test_*.c"))
    assert sources, "no csrc/tests/test_*.c files were found"
    registered = [name for source in sources for name in REGISTERED.findall(source.read_text())]
    assert len(registered) == len(set(registered)) > 0
    assert passed == len(registered), report
    # The sanitizers report to stderr; a clean run reports nothing.
    assert "runtime error" not in result.stderr, report
    assert "AddressSanitizer" not in result.stderr, report
    assert "LeakSanitizer" not in result.stderr, report
    # The build went to the requested directory, not into the source tree.
    executable = {"test": "test_core", "test-asan": "test_core_asan", "test-strict": "test_core_strict",
                  "test-sse2": "test_core_sse2", "test-plain": "test_core_plain"}[target]
    assert (tmp_path / "build" / executable).is_file()
