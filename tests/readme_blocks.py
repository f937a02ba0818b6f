"""The python blocks of README.md and of the documentation's pages, and a script that runs
them as a reader would.

``python readme_blocks.py PAGE REPORT.json [FIGURES]`` runs every python block of PAGE (a
Markdown file: blocks fenced with ```python; a reStructuredText file: ``.. code-block:: python``
directives), in order, in one namespace, in the current working directory.  Each top-level
expression's value (what a notebook cell would display) is kept, and its type is written to
the JSON report with the block's line in the page, the time each block took (s) and how many
figures it left open.  Every matplotlib figure a block leaves open is saved as a PNG to the
folder FIGURES (if given) and closed.  A block that fails stops the run with its traceback,
whose lines are the page's.
"""
from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
# reStructuredText: a python code directive, its options, a blank line, then the indented body.
_DIRECTIVE = re.compile(r"^\.\. (?:code-block|code|sourcecode):: python[ \t]*\n((?:[ \t]+:.*\n)*)[ \t]*\n"
                        r"((?:(?:[ \t]+.*)?\n)+)", re.MULTILINE)
_SHOWN = "_readme_shown"


@dataclass(frozen=True)
class Block:
    """A python block of a page: its first line's number (1-based) and its code."""

    line: int
    code: str


def python_blocks(text: str, suffix: str = ".md") -> list[Block]:
    """The python blocks of a page's ``text``, in order: fenced with ```python in Markdown
    (``suffix`` ".md"; other fences, such as bash or text, are not code to run), or
    ``.. code-block:: python`` directives in reStructuredText (".rst"; dedented)."""
    if suffix == ".rst":
        blocks = []
        for match in _DIRECTIVE.finditer(text):
            body = textwrap.dedent(match.group(2)).rstrip("\n") + "\n"
            blocks.append(Block(text.count("\n", 0, match.start(2)) + 1, body))
        return blocks
    return [Block(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in _FENCE.finditer(text)]


def _compiled(block: Block, filename: str, index: int) -> object:
    """The block compiled with the page's line numbers; each top-level expression statement
    becomes ``_readme_shown.append((index, line, value))``."""
    tree = ast.parse("\n" * (block.line - 1) + block.code, filename=filename)
    body: list[ast.stmt] = []
    for statement in tree.body:
        if isinstance(statement, ast.Expr) and not (
                isinstance(statement.value, ast.Call) and isinstance(statement.value.func, ast.Name)
                and statement.value.func.id == "print"):
            record = ast.Tuple([ast.Constant(index), ast.Constant(statement.lineno), statement.value], ast.Load())
            call = ast.Call(ast.Attribute(ast.Name(_SHOWN, ast.Load()), "append", ast.Load()), [record], [])
            statement = ast.copy_location(ast.Expr(call), statement)
        body.append(statement)
    tree.body = body
    return compile(ast.fix_missing_locations(tree), filename, "exec")


def _type_name(value: object) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def main(readme: Path, report: Path, figures: Path | None) -> None:
    """Runs the blocks of the page ``readme`` and writes ``report`` (see the module's docstring)."""
    import matplotlib.pyplot as plt

    blocks = python_blocks(readme.read_text(encoding="utf-8"), readme.suffix)
    namespace: dict[str, object] = {"__name__": "__main__", _SHOWN: []}
    shown: list[tuple[int, int, object]] = namespace[_SHOWN]  # type: ignore[assignment]
    runs = []
    for index, block in enumerate(blocks):
        start = time.perf_counter()
        exec(_compiled(block, str(readme), index), namespace)
        seconds = time.perf_counter() - start
        numbers = plt.get_fignums()
        if figures is not None:
            figures.mkdir(parents=True, exist_ok=True)
            for number in numbers:
                plt.figure(number).savefig(figures / f"line{block.line:04d}-figure{number}.png", dpi=80)
        plt.close("all")
        runs.append({"line": block.line, "seconds": seconds, "figures": len(numbers)})
    values = [{"block": index, "line": line, "type": _type_name(value)} for index, line, value in shown]
    report.write_text(json.dumps({"blocks": runs, "values": values}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
