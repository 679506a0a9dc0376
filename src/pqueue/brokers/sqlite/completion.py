"""Complete a job in the handler's own SQLite transaction (``Capability.TRANSACTIONAL_COMPLETION``).

``job.transaction()`` (pqueue.worker.completion) asks for an open transaction on the
queue's file, lets the handler write on its ``sqlite3.Connection``, then runs the broker's
fenced ack (:func:`pqueue.brokers.sqlite.store.ack`: matched by id and lease token,
settling dependants and freeing a key held until done) in it and commits: the handler's
rows and the job's completion land together or not at all (ADR 0151).

The transaction starts with ``BEGIN IMMEDIATE``: it holds the file's writer lock from
the start, as every write of this backend does (ADR 0147), so nothing can change the job
between the ack and the commit, and a handler that reads first never meets a stale
snapshot at its first write. The lock is the file's only one: while a block is open every
other writer (claims, heartbeats, other handlers' blocks) waits, up to ``busy_timeout``.

Without a connection the handler gets one of a few connections kept by the broker for
this (opened as the broker's own, apart from its thread's, so a handler never runs on the
connection claims use); the waits for the lock and the commit run off the event loop.
A connection the handler passes (``sqlite3.Connection`` or a synchronous SQLAlchemy
``Connection``/``Session`` on the file) is used on the caller's thread, as sqlite3 wants.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from pqueue.brokers.sqlite import store
from pqueue.brokers.sqlite.config import SqliteConfig
from pqueue.brokers.sqlite.connection import begin_write, begin_write_async, connect, translated
from pqueue.brokers.sqlite.transactional import dbapi
from pqueue.errors import InvalidRequest
from pqueue.job import Lease

T = TypeVar("T")

KEEP_IDLE = 8
"""Idle handler connections kept open for the next block; more are closed."""


class _Ack:
    """What both kinds of open transaction share: the fenced ack on the raw connection."""

    def __init__(
        self, connection: Any, raw: sqlite3.Connection, config: SqliteConfig, now: Callable[[], float]
    ) -> None:
        self.connection = connection
        self._raw = raw
        self._config = config
        self._now = now

    def _ack(self, lease: Lease, result_json: str | None) -> bool:
        with translated(self._config):
            [done] = store.ack(self._raw, self._now(), [lease], [result_json])
        return done


class SyncAck(_Ack):
    """An open transaction of a sync handler (:class:`pqueue.broker.AckTransactionSync`)."""

    def ack(self, lease: Lease, result_json: str | None) -> bool:
        return self._ack(lease, result_json)


class AsyncAck(_Ack):
    """An open transaction of an async handler (:class:`pqueue.broker.AckTransaction`)."""

    def __init__(self, *args: Any, off_loop: bool) -> None:
        super().__init__(*args)
        self._off_loop = off_loop

    async def ack(self, lease: Lease, result_json: str | None) -> bool:
        if self._off_loop:
            return await _in_thread(self._ack, lease, result_json)
        return self._ack(lease, result_json)


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn`` on a worker thread; a caller cancelled meanwhile still waits for it to end, so a
    connection is never handed back while a call on it (a ``BEGIN``, a commit) still runs."""
    call = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await call
        raise


def _same_file(raw: sqlite3.Connection, config: SqliteConfig) -> None:
    """Refuse a connection on another file: its transaction could not hold the job's ack."""
    row = raw.execute("PRAGMA database_list").fetchone()
    path = "" if row is None else str(row[2] or "")
    mine = os.path.realpath(config.path)
    if not path or os.path.realpath(path) != mine:
        raise InvalidRequest(
            f"job.transaction(conn): the connection is on {path or 'an in-memory database'!r}, "
            f"the queue is in {mine!r}; a job completes only in a transaction on its own file"
        )


class HandlerTransactions:
    """The SQLite broker's side of transactional completion, with its idle connections."""

    def __init__(self, config: SqliteConfig, now: Callable[[], float]) -> None:
        self.config = config
        self.now = now
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    # -- the broker's own connections --------------------------------------------------

    def _take(self) -> sqlite3.Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        with translated(self.config):
            return connect(self.config, spin=True)

    def _give(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:  # a failed commit: nothing of it may reach the next block
                conn.rollback()
        except sqlite3.Error:
            conn.close()
            return
        with self._lock:
            if not self._closed and len(self._idle) < KEEP_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _begin(self, conn: sqlite3.Connection) -> None:
        with translated(self.config):
            begin_write(conn, wait=self.config.busy_timeout)

    def _commit(self, conn: sqlite3.Connection) -> None:
        with translated(self.config):
            conn.commit()

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.rollback()

    # -- a connection the handler passed ------------------------------------------------

    def _passed(self, conn: Any) -> sqlite3.Connection:
        raw = dbapi(conn, "job.transaction(conn)")
        _same_file(raw, self.config)
        if not raw.in_transaction:
            self._begin(raw)
        return raw

    async def _passed_async(self, conn: Any) -> sqlite3.Connection:
        """:meth:`_passed` for an async handler: its connection lives on the loop's thread,
        so the wait for the file's lock must not block the loop."""
        raw = dbapi(conn, "job.transaction(conn)")
        _same_file(raw, self.config)
        if not raw.in_transaction:
            with translated(self.config):
                await begin_write_async(raw, wait=self.config.busy_timeout)
        return raw

    # -- the seam (pqueue.broker.CompletionTransactions) --------------------------------

    @contextlib.asynccontextmanager
    async def transaction(self, conn: Any = None) -> AsyncIterator[AsyncAck]:
        """Begin (on ``conn``, or a connection of the broker's); commit on a clean exit,
        else roll back."""
        if conn is not None:
            raw = await self._passed_async(conn)
            try:
                yield AsyncAck(conn, raw, self.config, self.now, off_loop=False)
            except BaseException:
                conn.rollback()
                raise
            self._commit_passed(conn)
            return
        own = await _in_thread(self._take)
        try:
            await _in_thread(self._begin, own)
            try:
                yield AsyncAck(own, own, self.config, self.now, off_loop=True)
            except BaseException:
                await _in_thread(self._rollback, own)
                raise
            await _in_thread(self._commit, own)
        finally:
            self._give(own)

    @contextlib.contextmanager
    def transaction_sync(self, conn: Any = None) -> Iterator[SyncAck]:
        """As :meth:`transaction`, blocking (sync handlers, on their own thread)."""
        if conn is not None:
            raw = self._passed(conn)
            try:
                yield SyncAck(conn, raw, self.config, self.now)
            except BaseException:
                conn.rollback()
                raise
            self._commit_passed(conn)
            return
        own = self._take()
        try:
            self._begin(own)
            try:
                yield SyncAck(own, own, self.config, self.now)
            except BaseException:
                self._rollback(own)
                raise
            self._commit(own)
        finally:
            self._give(own)

    def _commit_passed(self, conn: Any) -> None:
        with translated(self.config):
            conn.commit()  # sqlite3, or SQLAlchemy's commit of the same DBAPI connection

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
