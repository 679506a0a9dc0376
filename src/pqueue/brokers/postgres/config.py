"""Postgres broker settings, read from the DSN and keyword options.

pqueue's own query parameters (``schema``, ``retention``, ``pool_min``, ``pool_max``,
``pool_timeout``, ``prepare``) are taken out of the DSN; libpq's connection parameters
(host, sslmode, connect_timeout, application_name, ...) go to libpq untouched; any other
is refused with a :class:`ConfigError` listing both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlunsplit

import psycopg

from pqueue.brokers import redact, refuse_unknown_options, split_dsn
from pqueue.brokers.postgres.sql import validate_schema
from pqueue.errors import ConfigError

DEFAULT_SCHEMA = "pqueue"
DEFAULT_RETENTION = 24 * 3600.0
"""Seconds completed and cancelled jobs are kept before ``prune`` deletes them."""

_SCHEMES = ("postgresql", "postgres")
_FLOATS = {"retention": DEFAULT_RETENTION, "pool_timeout": 10.0}
_INTS = {"pool_min": 1, "pool_max": 10}
OWN_OPTIONS = frozenset({"schema", "prepare", *_FLOATS, *_INTS})
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclass(frozen=True, slots=True)
class PostgresConfig:
    """Everything a :class:`~pqueue.brokers.postgres.PostgresBroker` is configured with."""

    conninfo: str
    schema: str = DEFAULT_SCHEMA
    retention: float = DEFAULT_RETENTION
    pool_min: int = 1
    pool_max: int = 10
    pool_timeout: float = 10.0
    prepare: bool = True
    """Use server-side prepared statements (turn off behind PgBouncer < 1.21 in transaction mode)."""

    @property
    def redacted(self) -> str:
        """The connection DSN without its password, for messages."""
        return redact(self.conninfo)

    @classmethod
    def from_url(cls, dsn: str, options: Mapping[str, object] | None = None) -> PostgresConfig:
        """Parse ``postgresql://...?schema=...&retention=...``; ``options`` override the DSN.

        ``options`` are keyword options, pqueue's own only. Raises :class:`ConfigError`
        for another scheme, an unknown DSN parameter or option (listing the known ones),
        or a value out of range.
        """
        parts = split_dsn(dsn)
        if parts.scheme not in _SCHEMES:
            raise ConfigError(f"not a Postgres DSN: {redact(dsn)!r} (use postgresql://...)")
        ours: dict[str, object] = {}
        libpq: list[tuple[str, str]] = []
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key in OWN_OPTIONS:
                ours[key] = value
            else:
                libpq.append((key, value))
        refuse_unknown_options(
            "postgres",
            (k for k, _ in libpq),
            (*sorted(OWN_OPTIONS), *libpq_parameters()),
            source="DSN parameter",
        )
        refuse_unknown_options(
            "postgres",
            options or {},
            sorted(OWN_OPTIONS),
            source="keyword option",
            hint=" (libpq's parameters, such as sslmode, go in the DSN)",
        )
        ours.update(options or {})
        # quote, not urlencode's default quote_plus: libpq decodes %XX only, so a "+" for a
        # space would reach the server ("-c+jit=off" in options is refused).
        conninfo = urlunsplit(parts._replace(query=urlencode(libpq, quote_via=quote)))
        return cls(
            conninfo=conninfo,
            schema=validate_schema(str(ours.get("schema", DEFAULT_SCHEMA))),
            prepare=_flag("prepare", ours.get("prepare", True)),
            **{k: _number(k, ours.get(k, default), float) for k, default in _FLOATS.items()},  # type: ignore[arg-type]
            **{k: _number(k, ours.get(k, default), int) for k, default in _INTS.items()},  # type: ignore[arg-type]
        ).checked()

    def checked(self) -> PostgresConfig:
        """Refuse settings that cannot work, naming the option."""
        if self.retention < 0:
            raise ConfigError("postgres broker: retention must be >= 0 seconds")
        if not 1 <= self.pool_min <= self.pool_max:
            raise ConfigError("postgres broker: need 1 <= pool_min <= pool_max")
        if self.pool_timeout <= 0:
            raise ConfigError("postgres broker: pool_timeout must be > 0 seconds")
        return self


@functools.cache
def libpq_parameters() -> tuple[str, ...]:
    """The connection parameters this libpq knows (``host``, ``sslmode``, ...), and ``ssl``.

    Asked of libpq itself, so a DSN is held to exactly the rule libpq would apply at
    connect time, but now, with a :class:`ConfigError` listing them. ``ssl=true`` is the
    alias libpq accepts in a URI's query for ``sslmode=require``.
    """
    return (*(option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()), "ssl")


def _flag(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text not in _TRUE | _FALSE:
        raise ConfigError(f"postgres broker: {name} must be true or false, got {value!r}")
    return text in _TRUE


def _number(name: str, value: object, kind: type[float] | type[int]) -> float | int:
    try:
        number = kind(str(value))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"postgres broker: {name} must be a number, got {value!r}") from exc
    if not math.isfinite(number):
        raise ConfigError(f"postgres broker: {name} must be a finite number, got {value!r}")
    return number
