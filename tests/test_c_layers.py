"""The C core's files form layers with no circle (csrc/README.md).

Each folder of csrc/src is a layer: platform -> model -> kernels -> solvers (and analysis,
beside them) -> step, and the binding above them all.  A file may include headers and call
functions of its own folder or of the layers below, never above or beside (solvers and
analysis know nothing of each other); and no chain of calls between files comes back to
where it started.  The includes are read from the sources;
the calls from the symbols each compiled file defines and uses (when a C compiler and nm
are at hand).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "csrc" / "src"
LAYERS = {"platform": 0, "model": 1, "kernels": 2, "solvers": 3, "analysis": 3, "step": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(path: Path) -> int:
    return LAYERS[path.relative_to(SOURCE).parts[0]]


def may_use(user: Path, used: Path) -> bool:
    """A file may use its own folder and the layers below it."""
    return used.parent == user.parent or layer_of(used) < layer_of(user)


def sources() -> list[Path]:
    return sorted(SOURCE.glob("*/*.c"))


def test_every_file_is_in_a_layer():
    loose = sorted(p.name for p in SOURCE.iterdir() if p.is_file())
    assert loose == [], f"files outside the layer folders: {loose}"
    folders = sorted(p.name for p in SOURCE.iterdir() if p.is_dir())
    assert folders == sorted(LAYERS)


def test_includes_go_down_the_layers():
    wrong = []
    for path in sorted(SOURCE.glob("*/*.[ch]")):
        for name in INCLUDE.findall(path.read_text()):
            if name.startswith("msprings/"):
                continue  # the public header, below everything
            target = SOURCE / name
            assert target.exists(), f"{path.relative_to(SOURCE)} includes {name}, which is not csrc/src/{name}"
            if not may_use(path, target):
                wrong.append(f"{path.relative_to(SOURCE)} includes {name}")
    assert wrong == []


def test_binding_uses_only_the_public_header():
    for path in sorted((ROOT / "csrc" / "binding").glob("*.[ch]")):
        for name in INCLUDE.findall(path.read_text()):
            assert not (SOURCE / name).exists(), f"{path.name} includes the core's private {name}"


def _symbols(obj: Path, nm: str, defined: bool) -> set[str]:
    args = [nm, "--defined-only" if defined else "--undefined-only", str(obj)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if defined and len(fields) == 3 and fields[1] in "TDRB":
            names.add(fields[2])
        elif not defined and fields:
            names.add(fields[-1])
    return names


def test_calls_go_down_the_layers_with_no_circle(tmp_path):
    cc, nm = shutil.which("cc") or shutil.which("gcc"), shutil.which("nm")
    if cc is None or nm is None:
        pytest.skip("needs a C compiler and nm")
    objects = {}
    for path in sources():
        obj = tmp_path / (path.relative_to(SOURCE).as_posix().replace("/", "__") + ".o")
        subprocess.run([cc, "-std=c11", "-O0", "-I", str(ROOT / "csrc" / "include"), "-I", str(SOURCE), "-c",
                        str(path), "-o", str(obj)], check=True, capture_output=True)
        objects[path] = obj
    owner = {}
    for path, obj in objects.items():
        for name in _symbols(obj, nm, defined=True):
            owner[name] = path
    calls: dict[Path, set[Path]] = {path: set() for path in objects}
    for path, obj in objects.items():
        for name in _symbols(obj, nm, defined=False):
            if name in owner and owner[name] != path:
                calls[path].add(owner[name])
    upward = [f"{a.relative_to(SOURCE)} -> {b.relative_to(SOURCE)}"
              for a, targets in calls.items() for b in targets if not may_use(a, b)]
    assert upward == []
    # no circle: a depth-first search finds no edge back to a file on its own path
    state: dict[Path, int] = {}

    def visit(path: Path, trail: list[Path]) -> None:
        state[path] = 1
        for target in sorted(calls[path]):
            if state.get(target) == 1:
                circle = trail[trail.index(target):] + [target]
                raise AssertionError("circle: " + " -> ".join(str(p.relative_to(SOURCE)) for p in circle))
            if target not in state:
                visit(target, trail + [target])
        state[path] = 2

    for path in sorted(calls):
        if path not in state:
            visit(path, [path])
    # the check sees the files' calls at all: the driver reaches every solver
    assert {p.name for p in calls[SOURCE / "step" / "run.c"]} >= {"explicit.c", "implicit.c", "projective.c",
                                                                  "xpbd.c"}
