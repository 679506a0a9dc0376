"""Find the ``pqueue <command> [<subcommand>]`` lines the docs name, and the ones the CLI has.

A doc names a command where ``pqueue`` starts a shell command inside a code span or a
non-Python fence: at the start of a line or span, after ``|``, ``;``, ``&``, ``(`` or
``$(``, after ``python -m`` or environment assignments. Python fences are skipped (there
``pqueue`` is the package), and so are ``#`` comments. In a code span, ``list|show`` names
two subcommands.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from tests.docs.fences import blocks

_COMMENT = re.compile(r"(?:^|(?<=[ \t]))#.*$", re.M)
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_PREFIX = r"(?:[\w.]+=\S*|exec|nice|env|timeout[ \t]+\S+|\S*python[\d.]*[ \t]+-m|uv[ \t]+run)"
_CALL = re.compile(
    rf"(?:^|[|;&(]|\$\()[ \t]*(?:\$[ \t]+)?(?:{_PREFIX}[ \t]+)*pqueue[ \t]+(?P<args>[^\n]*)",
    re.M,
)
_WORD = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass(frozen=True)
class Named:
    """One command path a page names, and where."""

    where: str
    words: tuple[str, ...]


def cli_tree(parser: argparse.ArgumentParser) -> dict[str, object]:
    """The parser's sub-commands as nested dicts (a command without sub-commands maps to {})."""
    tree: dict[str, object] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                tree[name] = cli_tree(sub)
    return tree


def missing(words: tuple[str, ...], tree: dict[str, object]) -> str | None:
    """The first word of ``words`` the CLI does not have, or None when every one exists."""
    node = tree
    for word in words:
        if not node:  # a command without sub-commands: the rest are its arguments
            return None
        if word not in node:
            return word
        child = node[word]
        assert isinstance(child, dict)
        node = child
    return None


def named_commands(page: Path, root: Path) -> list[Named]:
    """Every command path ``page`` names in its code spans and non-Python fences."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Named] = []
    for block in blocks(page):
        end = block.line + block.code.count("\n")
        lines[block.line - 1 : end + 1] = [""] * (end + 2 - block.line)
        if block.info.split()[:1] in (["python"], ["py"], ["python3"]):
            continue
        code = _COMMENT.sub("", block.code)
        for call in _CALL.finditer(code):
            line = block.line + 1 + code.count("\n", 0, call.start("args"))
            found.extend(_paths(f"{page.relative_to(root)}:{line}", call["args"], alternatives=False))
    text = "\n".join(lines)
    for span in _SPAN.finditer(text):
        line = text.count("\n", 0, span.start()) + 1
        for call in _CALL.finditer(" ".join(span[2].split())):
            found.extend(_paths(f"{page.relative_to(root)}:{line}", call["args"], alternatives=True))
    return found


def _paths(where: str, args: str, *, alternatives: bool) -> list[Named]:
    """The command paths in the words after ``pqueue``: one, or one per ``a|b`` alternative."""
    words: list[list[str]] = [[]]
    command = re.split(r"[;&)]" if alternatives else r"[;&)|]", args, maxsplit=1)[0]
    for token in command.split()[:2]:
        options = token.split("|") if alternatives else [token]
        if not all(_WORD.fullmatch(option) for option in options):
            break
        words = [[*path, option] for path in words for option in options]
    return [Named(where, tuple(path)) for path in words if path]
