"""SQLite broker settings, read from the DSN and keyword options.

``sqlite:///relative/path.db`` names a file relative to the working directory,
``sqlite:////absolute/path.db`` an absolute one (SQLAlchemy's spelling). Query parameters:
``retention`` (seconds finished jobs are kept), ``busy_timeout`` (seconds a statement
waits for the writer lock) and ``synchronous`` (``full`` or ``normal``, ADR 0149).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

from pqueue.brokers import refuse_unknown_options, split_dsn
from pqueue.errors import ConfigError

DEFAULT_RETENTION = 24 * 3600.0
"""Seconds completed and cancelled jobs are kept before ``prune`` deletes them."""
SYNCHRONOUS = ("full", "normal")
OPTIONS = ("retention", "busy_timeout", "synchronous")


@dataclass(frozen=True, slots=True)
class SqliteConfig:
    """Everything a :class:`~pqueue.brokers.sqlite.SqliteBroker` is configured with."""

    path: str
    retention: float = DEFAULT_RETENTION
    busy_timeout: float = 10.0
    synchronous: str = "full"

    @property
    def dsn(self) -> str:
        """The DSN naming this file (for messages and hints)."""
        return f"sqlite:///{self.path}"

    @classmethod
    def from_url(cls, dsn: str, options: Mapping[str, object] | None = None) -> SqliteConfig:
        """Parse ``sqlite:///path.db?retention=...``; ``options`` override the DSN's parameters."""
        parts = split_dsn(dsn)
        if parts.scheme != "sqlite":
            raise ConfigError(f"not a SQLite DSN: {dsn!r} (use sqlite:///relative.db or sqlite:////abs.db)")
        if parts.netloc:
            raise ConfigError(
                f"SQLite DSN {dsn!r} names a host ({parts.netloc!r}); a file is "
                "sqlite:///relative/path.db or sqlite:////absolute/path.db"
            )
        path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
        if not path or path.endswith("/"):
            raise ConfigError(f"SQLite DSN {dsn!r} names no file: use sqlite:///pqueue.db")
        if path == ":memory:" or path.startswith("file:"):
            raise ConfigError(
                f"SQLite DSN {dsn!r} names no file that workers could share: for an in-process "
                "store use memory://, for SQLite a path such as sqlite:///pqueue.db"
            )
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        refuse_unknown_options("sqlite", query, OPTIONS, source="DSN parameter")
        refuse_unknown_options("sqlite", options or {}, OPTIONS, source="keyword option")
        given: dict[str, object] = {**query, **(options or {})}
        synchronous = str(given.get("synchronous", "full")).lower()
        if synchronous not in SYNCHRONOUS:
            raise ConfigError(f"sqlite broker: synchronous must be full or normal, got {synchronous!r}")
        return cls(
            path=path,
            retention=_seconds("retention", given.get("retention", DEFAULT_RETENTION)),
            busy_timeout=_busy_timeout(given.get("busy_timeout", 10.0)),
            synchronous=synchronous,
        )


def _seconds(name: str, value: object) -> float:
    try:
        number = float(str(value))
    except ValueError:
        raise ConfigError(f"sqlite broker: {name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise ConfigError(f"sqlite broker: {name} must be a finite number of seconds >= 0, got {value!r}")
    return number


MAX_BUSY_TIMEOUT = (2**31 - 1) / 1000
"""SQLite keeps its busy timeout in an int of milliseconds: a larger value reads back as 0."""


def _busy_timeout(value: object) -> float:
    seconds = _seconds("busy_timeout", value)
    if seconds > MAX_BUSY_TIMEOUT:
        raise ConfigError(
            f"sqlite broker: busy_timeout must be at most {MAX_BUSY_TIMEOUT:g} seconds, got {value!r}"
        )
    return seconds
