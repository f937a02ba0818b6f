"""Every public name documents its parameters, result and errors in numpydoc sections.

The API reference of the manual is generated from these docstrings with numpydoc, so a
parameter that is only described in prose does not appear in the rendered table.  This test
walks ``__all__`` of the public modules and parses each docstring with numpydoc's
``docscrape``:

- a callable with parameters has a ``Parameters`` section naming exactly its signature's
  parameters (``self``/``cls`` excluded; ``*args`` and ``**kwargs`` may be listed as
  ``*args``/``**kwargs`` or left out); a dataclass, whose generated constructor only
  stores its fields, may document them in an ``Attributes`` section instead;
- a callable that does not return ``None`` has a ``Returns`` (or ``Yields``) section;
- a callable whose own source contains ``raise`` has a ``Raises`` section.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
import typing

import pytest

docscrape = pytest.importorskip("numpydoc.docscrape")

# Modules whose public names are held to the numpydoc layout.
MODULES = [
    "msprings",
    "msprings.colliders",
    "msprings.ensemble",
    "msprings.io",
    "msprings.mesh",
    "msprings.plot",
    "msprings.plot.view3d",
    "msprings.plot.widgets",
    "msprings.scenes",
    "msprings.trajectory",
    "msprings.stability",
    "msprings.sweep",
]


def _targets():
    """Yield ``(qualified name, function)`` for every public callable and public method."""
    seen = set()
    for modname in MODULES:
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            qual = f"{modname}.{name}"
            if inspect.isclass(obj):
                if obj.__module__.split(".")[0] != "msprings":
                    continue
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    func = member
                    if isinstance(member, (staticmethod, classmethod)):
                        func = member.__func__
                    if not inspect.isfunction(func):
                        continue
                    if attr == "__init__":
                        # numpydoc documents constructor parameters on the class.
                        yield qual, func, obj
                    elif id(func) not in seen:
                        seen.add(id(func))
                        yield f"{qual}.{attr}", func, func
            elif inspect.isfunction(obj) and id(obj) not in seen:
                seen.add(id(obj))
                yield qual, obj, obj


TARGETS = list(_targets())


def _expected_parameters(func) -> tuple[list[str], set[str]]:
    """Names the Parameters section must hold, and the names it may hold on top."""
    required, optional = [], set()
    params = list(inspect.signature(func).parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            optional.update({f"*{p.name}", p.name})
        elif p.kind is p.VAR_KEYWORD:
            optional.update({f"**{p.name}", p.name})
        else:
            required.append(p.name)
    return required, optional


def _documented_names(section) -> list[str]:
    names = []
    for entry in section:
        for part in entry.name.split(","):
            part = part.strip()
            if part:
                names.append(part)
    return names


def _own_source(func) -> ast.AST | None:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None
    return ast.parse(source).body[0]


def _raises(func) -> bool:
    """Whether the function body (nested functions excluded) holds a ``raise``."""
    tree = _own_source(func)
    if tree is None:
        return False
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _returns_none(func) -> bool:
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable annotations: fall back to the raw annotation
        hints = {"return": inspect.signature(func).return_annotation}
    ret = hints.get("return", inspect.Signature.empty)
    if ret is None or ret is type(None) or ret == "None":
        return True
    if ret is typing.NoReturn:
        return True
    if ret is inspect.Signature.empty:
        tree = _own_source(func)
        if tree is None:
            return True
        for node in ast.walk(tree):
            if isinstance(node, ast.Return) and node.value is not None:
                return False
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                return False
        return True
    return False


def test_targets_found():
    """The walk finds the public API (guards against an empty parametrisation)."""
    assert len(TARGETS) >= 100


@pytest.mark.parametrize(("qual", "func", "holder"), TARGETS, ids=[t[0] for t in TARGETS])
def test_numpydoc_sections(qual, func, holder):
    doc = inspect.getdoc(holder)
    assert doc, f"{qual} has no docstring"
    parsed = docscrape.NumpyDocString(doc)
    required, optional = _expected_parameters(func)
    if required:
        section = parsed["Parameters"]
        if not section and func.__name__ == "__init__" and dataclasses.is_dataclass(holder):
            section = parsed["Attributes"]
        documented = _documented_names(section)
        assert set(required) <= set(documented), (
            f"{qual}: Parameters section lacks {sorted(set(required) - set(documented))}"
        )
        extra = set(documented) - set(required) - optional
        assert not extra, f"{qual}: Parameters section names {sorted(extra)} not in the signature"
        for entry in section:
            assert entry.type or entry.name.startswith("*"), (
                f"{qual}: parameter {entry.name} has no type"
            )
    if func.__name__ != "__init__" and not _returns_none(func):
        assert parsed["Returns"] or parsed["Yields"], f"{qual}: no Returns section"
    if _raises(func):
        assert parsed["Raises"], f"{qual}: source raises but there is no Raises section"
