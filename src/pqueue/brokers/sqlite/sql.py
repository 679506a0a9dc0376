"""The SQLite broker's named queries (``queries.sql``) and migrations (``migrations/NNNN_name.sql``).

Files are read once per process. A SQLite database is one file, so there is no schema
name to render: the only placeholder is ``{job_columns}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from types import MappingProxyType

from pqueue.brokers.job_columns import JOB_COLUMNS
from pqueue.brokers.named_sql import parse_named

_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql\Z")

JOB_COLUMNS_EXPRESSION = ", ".join((*JOB_COLUMNS, "limit_key", "priority", "unset"))
"""The job columns, then its limit group, priority and the options left to its handler
(migration 0003)."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema migration file."""

    version: int
    name: str
    text: str


@cache
def queries() -> MappingProxyType[str, str]:
    """Every named statement, ready to run (``queries()["claim_due"]``)."""
    text = files(__package__).joinpath("queries.sql").read_text(encoding="utf-8")
    blocks = parse_named(text)
    return MappingProxyType(
        {k: v.replace("{job_columns}", JOB_COLUMNS_EXPRESSION) for k, v in blocks.items()}
    )


@cache
def migrations() -> tuple[Migration, ...]:
    """Every migration shipped with this version, oldest first."""
    found = []
    for entry in files(__package__).joinpath("migrations").iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError("pqueue sqlite migrations must be numbered 0001, 0002, ... without gaps")
    return tuple(found)


def latest_version() -> int:
    """The schema version this pqueue writes and expects."""
    return migrations()[-1].version
