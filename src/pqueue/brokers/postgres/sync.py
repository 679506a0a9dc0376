"""The sync Client's Postgres transport: a psycopg connection pool used from the caller's thread.

It drives the :class:`~pqueue.brokers.postgres.broker.PostgresBroker`'s own steps (named
queries, parameters, codecs, decoding) with the same connection settings and the same
error translation (:class:`~pqueue.brokers.postgres.connection.translated`); only the
statement is run blocking. A lost connection, a busy pool or a server known to be down
raises :class:`~pqueue.transport.Hop`: the asyncio broker then probes, revives its pool,
retries and reports the outage once, as it always did (ADR 0120).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from pqueue.brokers.postgres.connection import TUPLES_OK, connection_kwargs, translated
from pqueue.brokers.postgres.core import Rows, Statement
from pqueue.brokers.postgres.cursors import CursorCache
from pqueue.steps import Steps, run_sync
from pqueue.transport import Hop, StepsTransport

if TYPE_CHECKING:
    from pqueue.brokers.postgres.broker import PostgresBroker

T = TypeVar("T")

_RETRIED_BY_BROKER = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
"""Errors the asyncio broker retries once: they take the loop thread, which does."""


class PostgresSyncTransport(StepsTransport[Statement, Rows]):
    """Blocking twins of the broker's producer calls; one per sync Client, shared by its
    threads. Concurrent enqueues go as one statement and commit (group commit), each
    request again alone if that fails (``StepsTransport.enqueue_each``)."""

    def __init__(self, broker: PostgresBroker) -> None:
        super().__init__(broker)
        self.broker = broker
        self._translated = translated(broker.config.schema, broker.config.redacted)
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._cursors = CursorCache()

    def _connections(self) -> ConnectionPool:
        if self.broker.db.health.down:
            raise Hop("the server is down: the broker's own pool probes for it")
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    config = self.broker.config
                    self._pool = ConnectionPool(
                        config.conninfo,
                        kwargs=connection_kwargs(config),
                        min_size=0,  # connects on demand: a client that never enqueues holds none
                        max_size=config.pool_max,
                        timeout=config.pool_timeout,
                        open=True,
                        name=f"pqueue-sync/{config.schema}",
                    )
                pool = self._pool
        return pool

    def run(self, steps: Steps[Statement, Rows, T]) -> T:
        """Drive one operation's steps here; errors are translated as the broker's are."""
        sent_at = time.monotonic()
        result = run_sync(steps, self._execute)
        self.broker.db.health.ok(sent_at)
        return result

    def _execute(self, statement: Statement) -> Rows:
        query, params, prepare = statement
        pool = self._connections()
        with self._translated:
            try:
                conn = pool.getconn()
            except PoolTimeout as exc:
                raise Hop(f"no free connection in the sync pool: {exc}") from exc
            try:
                cur = self._cursors.cursor(conn, tuple_row)
                cur.execute(query, params, prepare=prepare and self.broker.config.prepare)
                result = cur.pgresult
                rows: Rows = cur.fetchall() if result is not None and result.status == TUPLES_OK else []
                self._cursors.done(conn, len(rows))
                return rows
            except BaseException as exc:
                self._cursors.forget(conn)
                if not isinstance(exc, psycopg.OperationalError):
                    raise
                if conn.broken or conn.closed:
                    self._drop(pool)
                    raise Hop(f"the connection was lost: {exc}") from exc
                if isinstance(exc, _RETRIED_BY_BROKER):
                    raise Hop(f"retried by the broker: {exc}") from exc
                raise
            finally:
                pool.putconn(conn)

    def _drop(self, pool: ConnectionPool) -> None:
        """Forget a pool whose connection died (a fresh one is made after the hop window)."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        threading.Thread(target=pool.close, kwargs={"timeout": 1.0}, daemon=True).start()

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=1.0)
