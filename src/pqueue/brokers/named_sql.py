"""Named SQL blocks: the one parser of the ``-- name: x`` files every SQL backend ships.

Postgres and SQLite keep their statements in ``queries.sql`` files of named blocks; this
splits such a file into {name: statement}, each tagged ``-- pqueue:<name>`` so it is
recognisable in a server's activity view and logs.
"""

from __future__ import annotations

import re

_NAME_LINE = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


def parse_named(text: str) -> dict[str, str]:
    """Split a file of ``-- name: x`` blocks into {name: statement}.

    The description comment is dropped and replaced by a ``-- pqueue:<name>`` tag, so the
    statement is recognisable in ``pg_stat_activity`` and the server log.
    """
    parts = _NAME_LINE.split(text)
    blocks: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in blocks:
            raise ValueError(f"named SQL: {name!r} is defined twice")
        lines = body.strip().splitlines()
        while lines and lines[0].startswith("--"):
            lines.pop(0)
        statement = "\n".join(lines).strip().rstrip(";").strip()
        if not statement:
            raise ValueError(f"named SQL: {name!r} has no statement")
        blocks[name] = f"-- pqueue:{name}\n{statement}"
    return blocks
