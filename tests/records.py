"""Reading the record files that worker processes under test append to, while they run."""

from __future__ import annotations

from pathlib import Path


def record_lines(path: Path) -> list[list[str]]:
    """The whitespace-split fields of each complete line of ``path`` ([] before it exists).

    Writers append each line with one ``O_APPEND`` write, so lines of several processes
    never interleave. A reader can still see the first part of a line being written (a
    line that crosses a page boundary), so a last line without its newline is left for
    the next read.
    """
    if not path.exists():
        return []
    text = path.read_text()
    return [line.split() for line in text[: text.rfind("\n") + 1].splitlines()]
