"""Complete a job on the handler's own transaction (``Capability.TRANSACTIONAL_COMPLETION``).

``job.transaction()`` (pqueue.worker.completion) asks the broker for an open transaction,
lets the handler write on it, then runs the fenced ``ack_results`` statement in it and
commits: the handler's rows and the job's completion land together or not at all. The
ack matches the lease token (ADR 0131), so a worker whose lease was lost gets no row
back, raises, and its transaction (its writes included) rolls back. Once the ack ran, the
job row is locked until the commit: ``recover`` skips locked rows, so the job cannot be
taken back between the ack and the commit (ADR 0151).

The transaction is on the connection the handler passed (psycopg, or SQLAlchemy on the
psycopg driver, as ``enqueue_in`` takes) or on one of a small pool of the broker's own,
apart from the pool its claims and heartbeats use, so handlers holding transactions open
never starve those. Here only the mechanism: begin, ack, commit or roll back.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from pqueue.brokers.postgres.codec import lease_arrays
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import translated
from pqueue.brokers.postgres.sql import queries_for
from pqueue.brokers.postgres.transactional import _qualname, _sqlalchemy_async, _sqlalchemy_sync
from pqueue.clock import Clock, to_datetime
from pqueue.job import Lease


class _Ack:
    """What both kinds of transaction share: the statement and its parameters."""

    def __init__(self, connection: Any, config: PostgresConfig, clock: Clock | None) -> None:
        self.connection = connection
        self._query = queries_for(config.schema)["ack_results"]
        self._translated = translated(config.schema, config.redacted)
        self._clock = clock

    def _params(self, lease: Lease, result_json: str | None) -> dict[str, Any]:
        ids, tokens = lease_arrays([lease])
        now = None if self._clock is None else to_datetime(self._clock.now())
        return {"id": ids, "token": tokens, "result": [result_json], "now": now}


class AsyncAck(_Ack):
    """An open transaction of an async handler (:class:`pqueue.broker.AckTransaction`)."""

    async def ack(self, lease: Lease, result_json: str | None) -> bool:
        params = self._params(lease, result_json)
        with self._translated:
            if isinstance(self.connection, psycopg.AsyncConnection):
                cursor = await self.connection.execute(self._query, params)
                rows = await cursor.fetchall()
            else:
                sa_conn: Any = await _sqlalchemy_async(self.connection)
                rows = (await sa_conn.exec_driver_sql(self._query, params)).fetchall()
        return bool(rows)


class SyncAck(_Ack):
    """An open transaction of a sync handler (:class:`pqueue.broker.AckTransactionSync`)."""

    def ack(self, lease: Lease, result_json: str | None) -> bool:
        params = self._params(lease, result_json)
        with self._translated:
            if isinstance(self.connection, psycopg.Connection):
                rows = self.connection.execute(self._query, params).fetchall()
            else:
                sa_sync: Any = _sqlalchemy_sync(self.connection)
                rows = sa_sync.exec_driver_sql(self._query, params).fetchall()
        return bool(rows)


def _unsupported(conn: Any, call: str) -> TypeError:
    return TypeError(
        f"{call} needs a psycopg or SQLAlchemy (postgresql+psycopg) connection or session, "
        f"got {_qualname(conn)}"
    )


class HandlerTransactions:
    """The Postgres broker's side of transactional completion, and its handler pools."""

    def __init__(self, config: PostgresConfig, clock: Clock | None) -> None:
        self.config = config
        self.clock = clock
        self._pool: AsyncConnectionPool | None = None
        self._opening: asyncio.Lock | None = None
        self._sync_pool: ConnectionPool | None = None
        self._sync_lock = threading.Lock()

    def _kwargs(self) -> dict[str, Any]:
        # Plain psycopg settings (no pqueue loaders): the handler's statements see the
        # types it expects. Autocommit, so that each transaction is one `transaction()` block.
        return {"autocommit": True, "application_name": f"pqueue-handler/{self.config.schema}"}

    async def _async_pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if self._pool is None:
                    config = self.config
                    pool = AsyncConnectionPool(
                        config.conninfo,
                        kwargs=self._kwargs(),
                        min_size=0,
                        max_size=config.pool_max,
                        timeout=config.pool_timeout,
                        open=False,
                        name=f"pqueue-handler/{config.schema}",
                    )
                    with translated(config.schema, config.redacted):
                        await pool.open()
                    self._pool = pool
        return self._pool

    def _blocking_pool(self) -> ConnectionPool:
        with self._sync_lock:
            if self._sync_pool is None:
                config = self.config
                with translated(config.schema, config.redacted):
                    self._sync_pool = ConnectionPool(
                        config.conninfo,
                        kwargs=self._kwargs(),
                        min_size=0,
                        max_size=config.pool_max,
                        timeout=config.pool_timeout,
                        open=True,
                        name=f"pqueue-handler-sync/{config.schema}",
                    )
            return self._sync_pool

    @contextlib.asynccontextmanager
    async def transaction(self, conn: Any = None) -> AsyncIterator[AsyncAck]:
        """Begin on ``conn`` (or a pooled connection); commit on a clean exit, else roll back."""
        if conn is None:
            pool = await self._async_pool()
            with translated(self.config.schema, self.config.redacted):  # not the handler's errors
                own = await pool.getconn()
            try:
                async with own.transaction():
                    yield AsyncAck(own, self.config, self.clock)
            finally:
                await pool.putconn(own)
            return
        if isinstance(conn, psycopg.AsyncConnection):
            if conn.autocommit:
                async with conn.transaction():
                    yield AsyncAck(conn, self.config, self.clock)
                return
        elif await _sqlalchemy_async(conn) is None:
            raise _unsupported(conn, "job.transaction() in an async handler")
        try:
            yield AsyncAck(conn, self.config, self.clock)
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()

    @contextlib.contextmanager
    def transaction_sync(self, conn: Any = None) -> Iterator[SyncAck]:
        """As :meth:`transaction`, blocking (sync handlers, on their own thread)."""
        if conn is None:
            pool = self._blocking_pool()
            with translated(self.config.schema, self.config.redacted):  # not the handler's errors
                own = pool.getconn()
            try:
                with own.transaction():
                    yield SyncAck(own, self.config, self.clock)
            finally:
                pool.putconn(own)
            return
        if isinstance(conn, psycopg.Connection):
            if conn.autocommit:
                with conn.transaction():
                    yield SyncAck(conn, self.config, self.clock)
                return
        elif _sqlalchemy_sync(conn) is None:
            raise _unsupported(conn, "job.transaction() in a sync handler")
        try:
            yield SyncAck(conn, self.config, self.clock)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        with self._sync_lock:
            sync_pool, self._sync_pool = self._sync_pool, None
        if sync_pool is not None:
            await asyncio.to_thread(sync_pool.close, 1.0)
