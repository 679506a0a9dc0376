"""Named SQL queries (``queries.sql``) and migrations (``migrations/NNNN_name.sql``).

Files are read once per process; :func:`queries_for` renders them for one schema and
caches the result, so a broker looks up ready-to-run text by name. Placeholders are
described at the top of ``queries.sql``; the schema name is validated before it is
quoted into any text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from types import MappingProxyType
from typing import LiteralString

from psycopg import sql

from pqueue.brokers.job_columns import JOB_COLUMNS
from pqueue.brokers.named_sql import parse_named
from pqueue.errors import ConfigError

SCHEMA_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,47}\Z")
"""Schema names pqueue accepts: lower-case identifiers short enough to name a channel."""

_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql\Z")

NOW_EXPRESSION = "coalesce(%(now)s::timestamptz, statement_timestamp())"
JOB_COLUMNS_EXPRESSION = ", ".join(
    f"t.{column}" for column in (*JOB_COLUMNS, "limit_key", "priority", "unset")
)
"""The job columns and, last, the job's limit group (migration 0006), priority (migration
0010) and the options left to its handler (migration 0012). The first two are not in the
hand-off's {job_json}, which migration 0002 fixed, and never needed there: limited and
prioritized jobs are not handed off; ``unset`` goes beside it (migration 0012's hand_off)."""
LEASE_EXPRESSION = (
    "status = 'active', attempt = t.attempt + 1, started_at = {now}, "
    "lease_token = nextval('{schema}.lease_token'), "
    "lease_expires_at = {now} + make_interval(secs => %(lease_for)s), worker_id = %(worker_id)s"
)
"""What leasing a job row aliased t sets (the claim's updates of unlimited and limited
jobs); its own {now} and {schema} are filled by :func:`render` after it."""
_TIMESTAMP_COLUMNS = frozenset({"run_at", "created_at", "started_at", "finished_at"})
JOB_JSON_EXPRESSION = "json_build_array({})".format(
    ", ".join(
        f"extract(epoch FROM j.{column})::float8" if column in _TIMESTAMP_COLUMNS else f"j.{column}"
        for column in JOB_COLUMNS
    )
)
"""The job row aliased j as a JSON array in JOB_COLUMNS order, times as epoch seconds
(the hand-off message; codec.json_row turns it back into a row)."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema migration file."""

    version: int
    name: str
    text: str


def validate_schema(name: str) -> str:
    """Return ``name`` if it is a usable schema name, else raise :class:`ConfigError`."""
    if not SCHEMA_NAME_RE.match(name):
        raise ConfigError(
            f"invalid Postgres schema name {name!r}: use 1-48 lower-case letters, digits or '_', "
            "not starting with a digit"
        )
    return name


def channel_for(schema: str) -> str:
    """The LISTEN/NOTIFY channel of a schema's jobs."""
    return f"{schema}.jobs"


def results_channel_for(schema: str) -> str:
    """The NOTIFY channel on which finished jobs that a ``result()`` waits for are named."""
    return f"{schema}.results"


@cache
def _raw_queries() -> MappingProxyType[str, str]:
    text = files(__package__).joinpath("queries.sql").read_text(encoding="utf-8")
    return MappingProxyType(parse_named(text))


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
        raise RuntimeError("pqueue postgres migrations must be numbered 0001, 0002, ... without gaps")
    return tuple(found)


def latest_version() -> int:
    """The schema version this pqueue writes and expects."""
    return migrations()[-1].version


def render(text: str, schema: str) -> LiteralString:
    """Fill the placeholders of a query or migration for ``schema``."""
    validate_schema(schema)
    channel = channel_for(schema)
    values = {
        "{lease}": LEASE_EXPRESSION,  # first: it holds placeholders of its own
        "{schema}": sql.Identifier(schema).as_string(),
        "{channel}": sql.Literal(channel).as_string(),
        "{results_channel}": sql.Literal(results_channel_for(schema)).as_string(),
        "{now}": NOW_EXPRESSION,
        "{job_columns}": JOB_COLUMNS_EXPRESSION,
        "{job_json}": JOB_JSON_EXPRESSION,
    }
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    # The text comes from files shipped in this package plus a validated identifier, so it
    # is as trusted as a literal (mypy treats LiteralString as str; pyright checks it).
    return text


class Queries:
    """The named queries rendered for one schema; look them up with ``queries["claim"]``."""

    def __init__(self, schema: str) -> None:
        self.schema = validate_schema(schema)
        self._text = {name: render(text, schema) for name, text in _raw_queries().items()}

    def __getitem__(self, name: str) -> LiteralString:
        try:
            return self._text[name]
        except KeyError:
            raise KeyError(f"no query named {name!r} in queries.sql") from None

    def names(self) -> frozenset[str]:
        return frozenset(self._text)


@cache
def queries_for(schema: str) -> Queries:
    """The queries of ``schema``, rendered once per process."""
    return Queries(schema)
