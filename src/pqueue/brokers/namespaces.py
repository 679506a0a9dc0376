"""Namespaces: one corner of a broker's server that can be made and removed whole, leaving
everything beside it alone -- a Redis key prefix, a Postgres schema, a SQLite file, a
memory store.

``pqueue chaos`` runs in one on a user's own deployment, and the test suite gives every
test one. :func:`namespace` picks the backend's own ``namespace`` module by DSN scheme, as
:func:`pqueue.connect` picks its broker (built-in backends only: a plug-in has none).
"""

from __future__ import annotations

import re
from typing import Protocol
from urllib.parse import unquote_plus

from pqueue.brokers import _BUILTIN, load_builtin, redact
from pqueue.errors import ConfigError

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,47}\Z")
"""A namespace name: a lower-case letter, then lower-case letters, digits and ``_``, 48 at
most -- a Postgres schema, a Redis prefix and a file name alike, none quoted."""
RESERVED = frozenset({"pqueue", "public", "default", "information_schema"})
"""Names that are a deployment's own data (pqueue's default prefix and schema, Postgres's
``public`` schema, the default memory store): dropping one would remove it."""


class Namespace(Protocol):
    """One namespace of one broker server."""

    @property
    def name(self) -> str: ...

    @property
    def dsn(self) -> str:
        """A DSN whose brokers reach this namespace only (other processes' too)."""
        ...

    async def create(self) -> None:
        """Make it ready for brokers (Postgres, SQLite: migrate it; Redis, memory: nothing)."""
        ...

    async def drop(self) -> None:
        """Remove everything in it, and nothing else. Brokers on it should be closed first."""
        ...


class _Backend(Protocol):
    def namespace(self, dsn: str, name: str) -> Namespace: ...


def valid_name(name: str) -> str:
    """Return ``name`` if it may name a namespace, else raise :class:`ConfigError`."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(
            f"invalid namespace name {name!r}: use 1-48 lower-case letters, digits or '_', "
            "starting with a letter"
        )
    if name in RESERVED or name.startswith("pg_"):
        raise ConfigError(f"namespace name {name!r} is reserved (a deployment's own data): choose another")
    return name


def namespace(dsn: str, name: str) -> Namespace:
    """The namespace ``name`` on the server of ``dsn``; nothing connects here.

    Raises :class:`ConfigError` for an invalid or reserved name, a DSN that is not
    ``scheme://...``, a scheme with no built-in backend, or a backend whose driver is
    missing.
    """
    valid_name(name)
    scheme = dsn.split("://", 1)[0].lower() if isinstance(dsn, str) and "://" in dsn else ""
    if scheme not in _BUILTIN:
        raise ConfigError(
            f"no namespaces for DSN {redact(str(dsn))!r}: built-in schemes only "
            f"({', '.join(sorted(_BUILTIN))})"
        )
    backend: _Backend = load_builtin(scheme, "namespace")
    return backend.namespace(dsn, name)


def with_parameter(dsn: str, key: str, value: str) -> str:
    """``dsn`` with its query parameter ``key`` set to ``value`` (any earlier ones removed),
    every other character kept as it was (no re-encoding of the rest of the query)."""
    base, _, query = dsn.partition("?")
    kept = [item for item in query.split("&") if item and unquote_plus(item.partition("=")[0]) != key]
    return f"{base}?{'&'.join([*kept, f'{key}={value}'])}"
