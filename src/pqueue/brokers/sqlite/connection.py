"""Opening the database file, running transactions on it, and one thread per broker to do so.

Every connection is set up the same way (WAL, ``busy_timeout``, ``synchronous``; ADRs 0147
and 0149). A write is ``BEGIN IMMEDIATE`` ... ``COMMIT``: the writer lock is taken at the
start, so a transaction never fails half-way for want of it, and a process killed inside
one leaves nothing behind (SQLite rolls the WAL back on the next open). The asyncio broker
runs its transactions on one dedicated thread with one connection (:class:`Database`): the
file has one writer at a time anyway, and sqlite3 calls release the GIL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shlex
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from pqueue.brokers.sqlite.config import SqliteConfig
from pqueue.brokers.sqlite.sql import latest_version, queries
from pqueue.errors import (
    BrokerError,
    BrokerUnavailable,
    BrokerUnusable,
    ConfigError,
    PQueueError,
    SchemaError,
)

T = TypeVar("T")

Work = Callable[[sqlite3.Connection], T]
"""An operation's body: statements on an open connection, inside its transaction."""


def migrate_hint(config: SqliteConfig) -> str:
    return f"run: pqueue migrate --dsn {config.dsn}"


def check_path(config: SqliteConfig, *, create: bool) -> None:
    """Refuse, in one line and before anything is written, a file the broker cannot use."""
    path = config.path
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ConfigError(f"sqlite: the directory {folder!r} of {path!r} does not exist")
    exists = os.path.exists(path)
    if not exists and not create:
        raise SchemaError(f"sqlite: no pqueue database at {path!r}; {migrate_hint(config)}")
    if exists and not os.path.isfile(path):
        raise ConfigError(f"sqlite: {path!r} is not a file")
    if exists and not _writable(path):
        raise ConfigError(f"sqlite: {path!r} is read-only; pqueue needs to write to it")
    if not _writable(folder):
        raise ConfigError(
            f"sqlite: the directory {folder!r} is read-only; pqueue needs to write "
            "the database's -wal and -shm files beside it"
        )
    # The file's header is checked by SQLite itself, in connect(): this process must never
    # open() and close() the database file, since closing any descriptor of it drops every
    # POSIX lock the process holds on it, its SQLite connections' included (ADR 0155).


def _writable(path: str) -> bool:
    """Whether ``path`` may be written: the OS allows it and its owner left a write bit on
    (root may write anywhere, but a file or folder made read-only on purpose is refused)."""
    return os.access(path, os.W_OK) and bool(os.stat(path).st_mode & 0o222)


def connect(config: SqliteConfig, *, create: bool = False, spin: bool = False) -> sqlite3.Connection:
    """A connection set up for pqueue (autocommit: transactions are explicit). With ``spin``
    SQLite's own busy handler is off: :func:`transact` waits for the writer lock itself."""
    check_path(config, create=create)
    mode = "rwc" if create else "rw"
    uri = f"file:{_quote(os.path.abspath(config.path))}?mode={mode}"
    timeout = 0.0 if spin else config.busy_timeout
    with translated(config):
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=timeout)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            conn.execute(f"PRAGMA synchronous = {config.synchronous.upper()}")
            conn.execute("PRAGMA foreign_keys = OFF")
            conn.execute("PRAGMA schema_version").fetchone()  # reads the header: a foreign file fails here
        except BaseException:
            conn.close()
            raise
    return conn


def _quote(path: str) -> str:
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


_DAMAGED = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
"""SQLite's primary result codes for a file whose pages cannot be read as a database."""


def damaged(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file itself is damaged ("database disk image is malformed",
    "file is not a database"): no retry heals that, unlike a busy or locked file."""
    code = getattr(exc, "sqlite_errorcode", None) or 0
    return (code & 0xFF) in _DAMAGED  # the primary code of an extended one (SQLITE_CORRUPT_INDEX)


@contextlib.contextmanager
def translated(config: SqliteConfig) -> Iterator[None]:
    """sqlite3's errors as pqueue's: one line naming the file and what to do. A damaged file
    is :class:`BrokerUnusable` (a worker stops on it, ADR 0158); a busy one may be retried."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise translation(exc, config) from exc


def translation(exc: sqlite3.DatabaseError, config: SqliteConfig) -> PQueueError:
    """The pqueue error for a sqlite3 error."""
    text = str(exc)
    if damaged(exc):
        if "not a database" in text:
            return SchemaError(f"sqlite: {config.path!r} is not a SQLite database")
        return damaged_file(config, text)
    if isinstance(exc, sqlite3.OperationalError):
        if "locked" in text or "busy" in text:
            return BrokerUnavailable(f"sqlite: {config.path!r} stayed locked by another writer ({text})")
        if "readonly" in text or "read-only" in text:
            return ConfigError(f"sqlite: {config.path!r} is read-only ({text})")
        if "no such table" in text:
            return SchemaError(f"sqlite: {config.path!r} holds no pqueue tables; {migrate_hint(config)}")
    return BrokerError(f"sqlite: {text} ({config.path!r})")


def damaged_file(config: SqliteConfig, problem: str) -> BrokerUnusable:
    """The error for a file SQLite found damaged, saying what to do about it."""
    return BrokerUnusable(
        f"sqlite: {config.path!r} is damaged ({problem}): restore it from a backup, or salvage "
        f"its rows with: sqlite3 {shlex.quote(config.path)} .recover"
    )


def check_integrity(conn: sqlite3.Connection, config: SqliteConfig) -> None:
    """:class:`BrokerUnusable` unless SQLite's ``quick_check`` finds every page of the file
    sound (it reads them all: about 0.3 s for 200,000 retained jobs)."""
    row = conn.execute("PRAGMA quick_check(1)").fetchone()
    problem = "no answer" if row is None else str(row[0])
    if problem != "ok":
        raise damaged_file(config, f"quick_check: {problem}")


SPIN_FIRST = 0.0002
SPIN_MOST = 0.004
"""Seconds :func:`transact` sleeps between tries for a busy file: from 0.2 ms, doubling to 4 ms
(SQLite's own handler sleeps 1, 2, 5, 10, ... 100 ms, which idles the file between writers)."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def transact(conn: sqlite3.Connection, work: Work[T], *, write: bool, wait: float = 0.0) -> T:
    """Run ``work`` in one transaction: ``BEGIN IMMEDIATE`` for a write, a deferred one
    (a consistent snapshot) for a read. Rolled back on any error. On a ``spin`` connection,
    a busy file is tried again with short sleeps for up to ``wait`` seconds: the transaction
    was rolled back, so it is repeated whole (a write's lock is taken at its ``BEGIN``)."""
    return spinning(lambda: _once(conn, work, write), wait=wait)


def spinning(attempt: Callable[[], T], *, wait: float) -> T:
    """``attempt()``, tried again after short sleeps while the file is busy, for up to
    ``wait`` seconds (an attempt that met a busy file must have left nothing behind)."""
    deadline = time.monotonic() + wait
    pause = SPIN_FIRST
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, SPIN_MOST)


def begin_write(conn: sqlite3.Connection, *, wait: float) -> None:
    """``BEGIN IMMEDIATE`` on a ``spin`` connection: the writer lock, waited for as
    :func:`transact` waits, then held until the caller commits or rolls back."""

    def begin() -> None:
        conn.execute("BEGIN IMMEDIATE")

    spinning(begin, wait=wait)


async def begin_write_async(conn: sqlite3.Connection, *, wait: float) -> None:
    """:func:`begin_write` for a connection on the event loop's thread (one an async handler
    passed): the file's lock is waited for with ``asyncio.sleep``, never a blocking sleep
    or SQLite's own busy handler, so the loop keeps serving heartbeats and other handlers
    meanwhile. The connection's busy timeout is put back afterwards."""
    (previous,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        deadline = time.monotonic() + wait
        pause = SPIN_FIRST
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, SPIN_MOST)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(previous)}")


def _once(conn: sqlite3.Connection, work: Work[T], write: bool) -> T:
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        result = work(conn)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The newest applied migration; None when the file was never migrated."""
    try:
        row = conn.execute(queries()["schema_version"]).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return None if row is None or row[0] is None else int(row[0])


def check_schema(conn: sqlite3.Connection, config: SqliteConfig) -> int:
    """The file's version, if it is the one this pqueue writes; else :class:`SchemaError`."""
    version = schema_version(conn)
    known = latest_version()
    if version is None:
        raise SchemaError(f"sqlite: {config.path!r} has no pqueue migrations applied; {migrate_hint(config)}")
    if version > known:
        raise SchemaError(
            f"sqlite: {config.path!r} is at version {version}, newer than this pqueue knows ({known}); "
            "upgrade pqueue"
        )
    if version < known:
        raise SchemaError(
            f"sqlite: {config.path!r} is at version {version}, this pqueue needs {known}; "
            + migrate_hint(config)
        )
    return version


class Database:
    """One connection on one thread: every transaction of an asyncio broker runs here."""

    def __init__(self, config: SqliteConfig) -> None:
        self.config = config
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pqueue-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    async def open(self) -> int:
        """Connect and check the schema; returns its version. A file that does not exist yet
        (in a directory that does) is created and migrated: nothing was there to protect (ADR 0147)."""

        def start(_: object) -> int:
            if not os.path.exists(self.config.path):  # a new file starts at the current version
                from pqueue.brokers.sqlite.migrate import migrate_file

                check_path(self.config, create=True)
                migrate_file(self.config)
            self._conn = connect(self.config, spin=True)
            with translated(self.config):
                return check_schema(self._conn, self.config)

        return await self._submit(start)

    async def run(self, work: Work[T], *, write: bool = True) -> T:
        """``work`` in one transaction on the broker's thread."""
        return await self._submit(lambda conn: self._transact(conn, work, write))

    def _transact(self, conn: object, work: Work[T], write: bool) -> T:
        if self._conn is None:
            raise BrokerError(
                "the SQLite broker is not open: use 'async with broker' or 'await broker.open()'"
            )
        with translated(self.config):
            return transact(self._conn, work, write=write, wait=self.config.busy_timeout)

    async def _submit(self, fn: Callable[[object], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, fn, None)

    async def close(self) -> None:
        def stop(_: object) -> None:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

        with contextlib.suppress(RuntimeError):
            await self._submit(stop)
        self._pool.shutdown(wait=False)
