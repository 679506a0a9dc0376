"""Enqueue on the application's own SQLite transaction: the job commits or rolls back with it.

``conn`` is a :class:`sqlite3.Connection` inside an open transaction on the pqueue
database file, or a SQLAlchemy ``Connection``/``Session`` on it (its DBAPI connection is
used). Workers see the jobs only once the application commits; the wake-up poller sees
that commit like any other. Nothing here opens or commits anything.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from pqueue.brokers.sqlite import store
from pqueue.clock import Clock
from pqueue.errors import InvalidRequest
from pqueue.job import EnqueueResult, JobSpec


def dbapi(conn: Any, call: str = "enqueue_in") -> sqlite3.Connection:
    """The sqlite3 connection under ``conn`` (itself, or a SQLAlchemy Connection/Session's)."""
    if isinstance(conn, sqlite3.Connection):
        return conn
    connection = getattr(conn, "connection", None)  # SQLAlchemy Session.connection() / Connection
    if callable(connection):
        connection = connection()
    raw = getattr(connection, "driver_connection", None) or getattr(connection, "dbapi_connection", None)
    if raw is None and connection is not None:
        raw = getattr(getattr(connection, "connection", None), "driver_connection", None)
    if isinstance(raw, sqlite3.Connection):
        return raw
    raise InvalidRequest(
        f"{call} needs a sqlite3.Connection or a SQLAlchemy Connection/Session on sqlite, got {type(conn)!r}"
    )


def enqueue_in(conn: Any, specs: Sequence[JobSpec], *, clock: Clock | None = None) -> list[EnqueueResult]:
    """Store ``specs`` on ``conn``'s transaction (one is begun if none is open yet)."""
    raw = dbapi(conn)
    if not raw.in_transaction:
        raw.execute("BEGIN")
    now = clock.now() if clock is not None else time.time()
    return store.enqueue(raw, specs, now)
