"""The sync Client's SQLite transport: a connection of its own, used from the caller's thread.

It drives the :class:`~pqueue.brokers.sqlite.broker.SqliteBroker`'s own steps (the same
transaction bodies, statements and decoding) on a blocking connection opened like the
broker's, so a producer's enqueue never waits for the asyncio loop thread (ADR 0136). A
file whose writer lock stays taken past ``busy_timeout`` raises :class:`~pqueue.transport.Hop`:
the call goes through the loop thread's broker, which reports it (ADR 0120).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING, Any, TypeVar

from pqueue.brokers.sqlite.connection import connect, transact, translated
from pqueue.errors import BrokerUnavailable
from pqueue.steps import Steps, run_sync
from pqueue.transport import Hop, StepsTransport

if TYPE_CHECKING:
    from pqueue.brokers.sqlite.broker import SqliteBroker, Txn

T = TypeVar("T")


class SqliteSyncTransport(StepsTransport["Txn", Any]):
    """Blocking twins of the broker's producer calls; one connection, one caller at a time."""

    def __init__(self, broker: SqliteBroker) -> None:
        super().__init__(broker)
        self.broker = broker
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def run(self, steps: Steps[Txn, Any, T]) -> T:
        return run_sync(steps, self._execute)

    def _execute(self, txn: Txn) -> Any:
        work, write = txn
        config = self.broker.config
        try:
            with self._lock, translated(config):
                return transact(self._connection(), work, write=write, wait=config.busy_timeout)
        except BrokerUnavailable as exc:  # the writer lock stayed taken: the loop thread retries
            raise Hop(str(exc)) from exc

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.broker.config, spin=True)
        return self._conn

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
