"""The type information shipped for users' editors and type checkers: the py.typed marker and
the stubs of the C extension (msprings/_core.pyi) cover every attribute of the real types,
and mypy reads a typed user script with them."""
import ast
import importlib.util
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import msprings
from msprings import _core

PACKAGE = Path(msprings.__file__).parent
STUB = PACKAGE / "_core.pyi"


def _stub_names() -> tuple[set[str], dict[str, set[str]]]:
    """Module-level names and, per class, the names the stub declares."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    module: set[str] = set()
    classes: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            module.add(node.name)
            members = classes.setdefault(node.name, set())
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            module.add(node.target.id)
    return module, classes


def _own_names(cls: type) -> set[str]:
    """What the extension type itself defines (not what it inherits from tuple, Exception or
    object), dunder methods apart."""
    inherited: set[str] = set()
    for base in cls.__mro__[1:]:
        if base.__module__ != cls.__module__:
            inherited.update(dir(base))
    return {name for name in dir(cls) if not (name.startswith("__") and name.endswith("__"))} - inherited


def test_marker_and_stub_are_in_the_package():
    assert (PACKAGE / "py.typed").is_file()
    assert STUB.is_file()


def test_stub_declares_every_name_of_the_extension():
    module, classes = _stub_names()
    real = {name for name in dir(_core) if not (name.startswith("__") and name.endswith("__"))}
    assert real - module == set(), "names of msprings._core missing from _core.pyi"
    assert module - real == set(), "names in _core.pyi that msprings._core does not have"
    for name, obj in vars(_core).items():
        if isinstance(obj, type):
            missing = _own_names(obj) - classes[name]
            assert missing == set(), f"{name} attributes missing from _core.pyi: {sorted(missing)}"
            extra = {n for n in classes[name] if not n.startswith("__")} - set(dir(obj))
            assert extra == set(), f"{name} attributes in _core.pyi that the type lacks: {sorted(extra)}"


def test_stub_signatures_match_the_extension():
    """Methods with a text signature in the binding take the parameters the stub names."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    stub_parameters = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    stub_parameters[f"{node.name}.{item.name}"] = [a.arg for a in item.args.args[1:]]
    checked = 0
    for class_name in ("System", "Ensemble"):
        cls = getattr(_core, class_name)
        for name in dir(cls):
            member = getattr(cls, name)
            if name.startswith("_") or not callable(member):
                continue
            try:
                signature = inspect.signature(member)
            except (TypeError, ValueError):
                continue
            assert [p for p in signature.parameters if p != "self"] == stub_parameters[f"{class_name}.{name}"], name
            checked += 1
    assert checked >= 8


def test_stub_types_agree_with_the_values():
    """Spot checks of the declared types against real values: the views' dtypes and the
    options' Python types."""
    from msprings import scenes

    system = scenes.cloth(4)
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    system_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "System")
    dtypes = {"_Float": "float64", "_Int32": "int32", "_Bool": "bool", "_Int64": "int64"}
    scalars = {"float": float, "int": int, "str": str}
    seen = 0
    for item in system_class.body:
        if isinstance(item, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
            annotation = ast.unparse(item.returns)
            value = getattr(system, item.name)
            if annotation in dtypes:
                assert value.dtype == dtypes[annotation], item.name
                seen += 1
            elif annotation in scalars:
                assert type(value) is scalars[annotation], item.name
                seen += 1
        elif isinstance(item, ast.AnnAssign):
            annotation = ast.unparse(item.annotation)
            assert type(getattr(system, item.target.id)) is scalars[annotation], item.target.id
            seen += 1
    assert seen >= 30


USER_SCRIPT = '''
import numpy as np
from numpy.typing import NDArray

import msprings
from msprings import scenes


def settle(system: msprings.System, dt: float) -> NDArray[np.float64]:
    system.integrator = "implicit_euler"
    system.gravity = (0.0, -1.62, 0.0)
    system.strain_limit = None
    system.step(dt, 10)
    stretch: NDArray[np.float64] = system.strain()
    return stretch


chain = scenes.chain(5)
strain = settle(chain, 1e-2)
time: float = chain.t
count: int = chain.n_nodes
positions: NDArray[np.float64] = chain.x
springs: NDArray[np.int32] = chain.springs
pins: NDArray[np.bool_] = chain.pinned
ensemble = msprings.Ensemble.replicate(chain, 3)
members: int = ensemble.n_members
'''

BROKEN_SCRIPT = '''
from msprings import scenes

chain = scenes.chain(5)
label: str = chain.t
chain.step("0.01")
chain.n_nodes = 3
'''


def _mypy_environment() -> dict[str, str]:
    """mypy finds an installed msprings in site-packages by itself; a source checkout
    (installed in editable mode through an import hook, which mypy does not run) is found
    through MYPYPATH."""
    environment = dict(os.environ)
    if PACKAGE.parent.name not in ("site-packages", "dist-packages"):
        environment["MYPYPATH"] = str(PACKAGE.parent)
    return environment


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_reads_a_typed_user_script_and_finds_the_errors_of_a_wrong_one(tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(textwrap.dedent(USER_SCRIPT), encoding="utf-8")
    bad.write_text(textwrap.dedent(BROKEN_SCRIPT), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
         str(good), str(bad)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env=_mypy_environment(),
    )
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    assert "good.py" not in report, report
    assert 'bad.py:5: error: Incompatible types in assignment (expression has type "float", variable has type "str")' \
        in report, report
    assert 'bad.py:6: error: Argument 1 to "step" of "System" has incompatible type "str"' in report, report
    assert "bad.py:7: error:" in report and "n_nodes" in report, report
