"""Enqueue on the caller's own transaction: the job exists only if that transaction commits.

This is what a Postgres queue is for: the app writes its rows and its jobs in one
transaction, with no dual write to get wrong. The ``enqueue`` query runs on the caller's
connection and is neither committed nor rolled back here; its NOTIFY is delivered by
Postgres at commit, so idle workers wake exactly when the jobs become visible.

Accepted connections: psycopg ``AsyncConnection`` / ``Connection``, and SQLAlchemy
``AsyncConnection`` / ``AsyncSession`` / ``Connection`` / ``Session`` on the psycopg
driver (``postgresql+psycopg://``). SQLAlchemy ones go through ``exec_driver_sql`` so the
statement joins the transaction SQLAlchemy manages (and shows in its logs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from pqueue.brokers.postgres.codec import EnqueueBatch
from pqueue.brokers.postgres.config import DEFAULT_SCHEMA
from pqueue.brokers.postgres.connection import translated
from pqueue.brokers.postgres.sql import queries_for
from pqueue.clock import Clock, to_datetime
from pqueue.job import EnqueueResult, JobSpec


def _prepare(
    specs: Sequence[JobSpec], schema: str, clock: Clock | None
) -> tuple[EnqueueBatch, str, dict[str, Any]]:
    batch = EnqueueBatch.of(specs)
    params = dict(batch.columns, now=None if clock is None else to_datetime(clock.now()))
    return batch, queries_for(schema)["enqueue"], params


async def enqueue_in(
    conn: Any, specs: Sequence[JobSpec], *, schema: str = DEFAULT_SCHEMA, clock: Clock | None = None
) -> list[EnqueueResult]:
    """Enqueue ``specs`` on ``conn``'s open transaction (async connections and sessions)."""
    if not specs:
        return []
    batch, query, params = _prepare(specs, schema, clock)
    with translated(schema):
        if isinstance(conn, psycopg.AsyncConnection):
            cursor = await conn.execute(query, params)
            rows = await cursor.fetchall()
        elif (sa_conn := await _sqlalchemy_async(conn)) is not None:
            rows = (await sa_conn.exec_driver_sql(query, params)).fetchall()
        else:
            raise TypeError(_unsupported(conn, "await enqueue_in", "enqueue_in_sync"))
    return batch.results(rows)


def enqueue_in_sync(
    conn: Any, specs: Sequence[JobSpec], *, schema: str = DEFAULT_SCHEMA, clock: Clock | None = None
) -> list[EnqueueResult]:
    """Enqueue ``specs`` on ``conn``'s open transaction (sync connections and sessions)."""
    if not specs:
        return []
    batch, query, params = _prepare(specs, schema, clock)
    with translated(schema):
        if isinstance(conn, psycopg.Connection):
            rows = conn.execute(query, params).fetchall()
        elif (sa_conn := _sqlalchemy_sync(conn)) is not None:
            rows = sa_conn.exec_driver_sql(query, params).fetchall()
        else:
            raise TypeError(_unsupported(conn, "enqueue_in_sync", "await enqueue_in"))
    return batch.results(rows)


def _qualname(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _sqlalchemy_sync(conn: Any) -> Any | None:
    """The SQLAlchemy ``Connection`` to run on (a Session's own), or None if not SQLAlchemy."""
    try:
        from sqlalchemy.engine import Connection
        from sqlalchemy.orm import Session
    except ImportError:  # pragma: no cover - sqlalchemy ships with the postgres extra
        return None
    if isinstance(conn, Session):
        return conn.connection()
    return conn if isinstance(conn, Connection) else None


async def _sqlalchemy_async(conn: Any) -> Any | None:
    """The SQLAlchemy ``AsyncConnection`` to run on, or None if not SQLAlchemy."""
    try:
        from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
    except ImportError:  # pragma: no cover
        return None
    if isinstance(conn, AsyncSession):
        return await conn.connection()
    return conn if isinstance(conn, AsyncConnection) else None


def _unsupported(conn: Any, call: str, other: str) -> str:
    return (
        f"{call} needs a psycopg or SQLAlchemy connection/session with an open transaction, "
        f"got {_qualname(conn)} (for the other kind use {other})"
    )
