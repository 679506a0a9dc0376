"""Find the pqueue names the docs mention where no test runs them, and whether each exists.

The docs tests run fences; a name in prose or in a fence that is only an illustration is
never executed. docs/spark.md told readers to call ``pqueue.spark.spark_session()``, which
does not exist (``pqueue.spark.session.spark_session()`` does), and no test noticed (issue 34).
So the names in those places are looked up here:

- in code spans of prose, a dotted ``pqueue.…`` name written as a call (``pqueue.x.f()``);
  other dotted words there are often not Python (a table ``pqueue.jobs``, a meta key
  ``pqueue.tick``);
- in python fences that do not run: every ``import pqueue…`` and ``from pqueue… import``,
  and every ``pqueue.…(`` call.

A name is looked up in the source, without importing it (importing ``pqueue.django.worker``
sets Django up; ``pqueue.spark``'s names may need PySpark): the longest module path that is
a file or package under ``src/``, then the next name must be defined at that module's top
level (a def, class, assignment or import) or listed in its ``__all__``. Deeper attributes
(a method of a class) are not checked.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tests.docs.fences import blocks

_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_CALL = re.compile(r"(?<![\w.])(pqueue(?:\.[A-Za-z_]\w*)+)\s*\(")


@dataclass(frozen=True)
class Named:
    """One dotted name a page mentions, and where."""

    where: str
    name: str


def mentioned(page: Path, root: Path) -> list[Named]:
    """The ``pqueue.…`` names ``page`` mentions in prose code spans as calls, and in its
    python fences that do not run as imports and calls."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Named] = []
    label = str(page.relative_to(root))
    for block in blocks(page):
        end = block.line + block.code.count("\n")
        lines[block.line - 1 : end + 1] = [""] * (end + 2 - block.line)
        if block.language == "python" and not block.runs:
            found.extend(Named(f"{label}:{block.line}", name) for name in _fence_names(block.code))
    text = "\n".join(lines)
    for span in _SPAN.finditer(text):
        line = text.count("\n", 0, span.start()) + 1
        found.extend(Named(f"{label}:{line}", call[1]) for call in _CALL.finditer(span[2]))
    return found


def _fence_names(code: str) -> list[str]:
    names = [call[1] for call in _CALL.finditer(code)]
    try:
        tree = ast.parse(code)
    except SyntaxError:  # an excerpt; its calls are still looked up
        return names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names if alias.name.split(".")[0] == "pqueue"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pqueue":
            names += [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def exists(name: str, src: Path) -> bool:
    """Whether the dotted ``name`` is a module under ``src`` or a top-level name of one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module_file(src, tuple(parts[:cut]))
        if module is not None:
            return cut == len(parts) or parts[cut] in _top_level(module)
    return False


def _module_file(src: Path, parts: tuple[str, ...]) -> Path | None:
    path = src.joinpath(*parts)
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _top_level(module: Path) -> frozenset[str]:
    """The names ``module`` defines, imports or exports at its top level."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        for inner in _unguarded(node):
            names |= _defines(inner)
    return frozenset(names)


def _unguarded(node: ast.stmt) -> list[ast.stmt]:
    """``node``, or the statements of an ``if``/``try`` at top level (``if TYPE_CHECKING:``)."""
    if isinstance(node, ast.If):
        return [n for child in (*node.body, *node.orelse) for n in _unguarded(child)]
    if isinstance(node, ast.Try):
        return [n for child in (*node.body, *node.orelse, *node.finalbody) for n in _unguarded(child)]
    return [node]


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if not isinstance(node, ast.Assign | ast.AnnAssign):
        return set()
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = {t.id for t in targets if isinstance(t, ast.Name)}
    if "__all__" in names and isinstance(node.value, ast.List | ast.Tuple):  # lazily made names
        names |= {e.value for e in node.value.elts if isinstance(e, ast.Constant) and type(e.value) is str}
    return names
