"""The sync Client's SQLite transport: a connection of its own, used from the caller's thread.

It drives the :class:`~pqueue.brokers.sqlite.broker.SqliteBroker`'s own steps (the same
transaction bodies, statements and decoding) on a blocking connection opened like the
broker's, so a producer's enqueue never waits for the asyncio loop thread (ADR 0136).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING, Any, TypeVar

from pqueue.brokers.sqlite.connection import connect, transact, translated
from pqueue.steps import Steps, run_sync
from pqueue.transport import StepsTransport

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
        with self._lock, translated(config):
            if self._conn is None:
                self._conn = connect(config)
            return transact(self._conn, work, write=write)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
