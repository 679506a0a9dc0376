"""Wake-ups without LISTEN/NOTIFY: adaptive polling of ``PRAGMA data_version`` (ADR 0148).

``data_version`` changes on a connection whenever another connection (of any process)
commits to the file; reading it touches no page. One poller thread per broker, with a
connection of its own (so the broker's own commits count too), polls while someone waits:
every :data:`FAST` seconds just after a change, backing off to :data:`SLOW` when nothing
happens. Waiters hold a generation number and sleep until it moves, so a commit between
their look at the tables and their sleep is never missed. No waiter: the thread sleeps.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

from pqueue.brokers.sqlite.config import SqliteConfig
from pqueue.brokers.sqlite.connection import connect
from pqueue.brokers.sqlite.sql import queries

FAST = 0.002
"""Seconds between polls right after a change."""
SLOW = 0.025
"""The longest pause between polls: an idle worker's pick-up delay is at most this."""


class Poller:
    """Counts the commits it sees (:attr:`generation`) and wakes the asyncio waiters."""

    def __init__(self, config: SqliteConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._want = threading.Event()
        self._stop = False
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._thread: threading.Thread | None = None
        self.generation = 0

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pqueue-sqlite-wakeups", daemon=True)
            self._thread.start()

    async def wait(self, generation: int, timeout: float) -> bool:
        """Sleep until the generation moves past ``generation`` or ``timeout`` passes; True if it moved."""
        if self.generation != generation:
            return True
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        entry = (loop, event)
        with self._lock:
            self._start()
            self._waiters.add(entry)
            self._want.set()
        try:
            if self.generation != generation:
                return True
            try:
                await asyncio.wait_for(event.wait(), max(timeout, 0.0))
            except TimeoutError:
                return self.generation != generation
            return True
        finally:
            with self._lock:
                self._waiters.discard(entry)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        last: int | None = None
        pause = FAST
        probe = queries()["data_version"]
        while not self._stop:
            self._want.wait()
            if self._stop:
                break
            try:
                if conn is None:
                    conn = connect(self._config)
                (version,) = conn.execute(probe).fetchone()
            except Exception:  # noqa: BLE001 - the file is busy or gone: try again soon
                version = last
                pause = SLOW
            if last is not None and version != last:
                self.generation += 1
                self._wake()
                pause = FAST
            else:
                pause = min(SLOW, pause * 2)
            last = version
            with self._lock:
                if not self._waiters:
                    self._want.clear()
            time.sleep(pause)
        if conn is not None:
            conn.close()

    def _wake(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    def close(self) -> None:
        self._stop = True
        self._want.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(1.0)
