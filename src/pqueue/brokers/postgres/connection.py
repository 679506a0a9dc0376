"""The broker's connection pool and the one place driver errors become pqueue errors.

Every statement runs in autocommit on a pooled psycopg connection. When a statement fails
because the connection died (a Postgres restart, ``pg_terminate_backend``, a network cut),
the server is probed with one direct connection: if it answers, the pool is replaced by a
fresh one and the statement is retried once on it; if it does not, the statement fails at
once with :class:`~pqueue.errors.BrokerUnreachable` naming the cause, and every later
statement probes again (at most one probe per ``PROBE_EVERY``) until the server is back.
That retry is safe for every statement pqueue runs: job ids are made by the producer
(``ON CONFLICT (id) DO NOTHING``), settlements are fenced by lease tokens, and a claim
whose reply was lost only leaves leases that recovery hands back (ADR 0013).

Why not let psycopg_pool reconnect: its reconnect attempts back off from 1 s doubling
(not configurable), so after a one-second outage claims waited 5-10 s for a connection
and leases expired meanwhile (ADR 0060). A probe per retry of the caller, and a new pool
the moment one succeeds, brings the first statement through within milliseconds of the
server accepting connections again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, LiteralString

import psycopg
from psycopg import errors as pg_errors
from psycopg.abc import Buffer
from psycopg.adapt import AdaptersMap, Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import ExecStatus
from psycopg.rows import dict_row, tuple_row
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from pqueue.brokers.health import ServerHealth, describe, failure_message, health_of
from pqueue.brokers.postgres.codec import TOO_DEEP
from pqueue.brokers.postgres.config import DEFAULT_SCHEMA, PostgresConfig
from pqueue.brokers.postgres.cursors import CursorCache
from pqueue.errors import BrokerError, BrokerUnavailable, BrokerUnreachable, BrokerUnusable, SchemaError
from pqueue.logs import demote

log = logging.getLogger("pqueue.postgres")

Params = Mapping[str, Any]

_SCHEMA_MISSING = (
    pg_errors.UndefinedTable,
    pg_errors.InvalidSchemaName,
    pg_errors.UndefinedFunction,
    pg_errors.UndefinedColumn,
)
_DAMAGED = (pg_errors.DataCorrupted, pg_errors.IndexCorrupted)
"""The server found its own data damaged (SQLSTATE XX001, XX002): no retry heals that."""
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
TUPLES_OK = ExecStatus.TUPLES_OK
_CONNECTING = "connection to server"
"""In every libpq message of a failed connection attempt ("connection to server at ... failed")."""

PROBE_EVERY = 0.1
"""Seconds a failed probe's verdict is reused: statements during an outage fail at once."""
PROBE_TIMEOUT = 2.0
"""Most seconds a probe of a lost server waits (a black-holed host would wait for TCP)."""


def address(conninfo: str) -> str:
    """``host:port`` of a connection string, for messages (never its password)."""
    try:
        info = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "?"
    host = str(info.get("host") or info.get("hostaddr") or "localhost")
    port = str(info.get("port") or "5432")
    return f"{host}:{port}"


def first_line(exc: BaseException) -> str:
    """A driver message's first line (psycopg adds LINE/HINT lines): error messages are one line."""
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else type(exc).__name__


def migrate_hint(schema: str, dsn: str = "postgresql://...") -> str:
    """The command that creates or upgrades the schema, for error messages."""
    option = "" if schema == DEFAULT_SCHEMA else f" --schema {schema}"
    return f"run: pqueue migrate --dsn '{dsn}'{option}"


class translated:  # noqa: N801 - used like the function it replaced: ``with translated(...)``
    """Re-raise psycopg/pool errors as the pqueue error a caller can act on.

    Missing tables, schemas, functions or columns and data the server reports damaged are
    :class:`BrokerUnusable` (``SchemaError`` for the first), which a worker stops on (ADR
    0158); a lost connection, a timeout or an authentication refused stay outages.
    ``dsn`` (already redacted) only names the server in messages. A class, not a
    generator-based context manager: it wraps every statement, and this costs a fraction.
    """

    __slots__ = ("dsn", "schema")

    def __init__(self, schema: str, dsn: str = "postgresql://...") -> None:
        self.schema = schema
        self.dsn = dsn

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or not isinstance(exc, psycopg.Error | PoolTimeout):
            return
        schema, dsn = self.schema, self.dsn
        # The driver's first line says what went wrong (first_line); the rest (LINE 2: ... ^,
        # hints) is for psql, and would break the one-line errors of logs and the CLI.
        if isinstance(exc, _SCHEMA_MISSING):  # the message says it all: no driver traceback chained
            log.debug("Postgres at %s: %s", address(dsn), exc, exc_info=exc)
            raise SchemaError(
                f"pqueue schema {schema!r} is missing or incomplete in {dsn} ({first_line(exc)}); "
                f"{migrate_hint(schema, dsn)}"
            ) from None
        if isinstance(exc, _DAMAGED):
            raise BrokerUnusable(
                f"Postgres at {address(dsn)} reports damaged data ({first_line(exc)}): repair it "
                "(REINDEX a damaged index, restore damaged rows; the server's log names them)"
            ) from exc
        if isinstance(exc, PoolTimeout):
            raise BrokerUnavailable(
                f"Postgres at {dsn}: no free pooled connection ({first_line(exc)}); raise pool_max "
                "or pool_timeout in the DSN"
            ) from exc
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            where, cause = address(dsn), describe(exc)
            if _CONNECTING in str(exc):  # a connect failed (e.g. pqueue migrate's own connection)
                message = failure_message(f"Postgres at {where}", cause)
                raise BrokerUnreachable(message, address=where, cause=cause) from None
            raise BrokerUnavailable(f"Postgres at {where} is unavailable: {cause}") from exc
        raise BrokerError(f"Postgres error: {first_line(exc)}") from exc


_raw_decode = json.JSONDecoder().raw_decode


class JsonLoader(Loader):
    """JSON column text to Python; ``{}`` and ``[]`` (empty meta, no errors) cost nothing.

    Postgres has validated the text, so whatever follows the first value is whitespace:
    the decoder's ``raw_decode`` skips ``json.loads``'s trailing-text check (about half
    its cost on small payloads). Leading whitespace (possible in rows written by hand)
    falls back to ``json.loads``.
    """

    def load(self, data: Buffer) -> Any:
        if data == b"{}":
            return {}
        if data == b"[]":
            return []
        text = str(data, "utf-8")
        try:
            try:
                return _raw_decode(text)[0]
            except ValueError:
                return json.loads(text)
        except RecursionError:
            return TOO_DEEP  # the row decoder refuses it as a CorruptJob


def _adapters() -> AdaptersMap:
    """psycopg's defaults, but uuid columns load as str and JSON decodes faster."""
    adapters = AdaptersMap(psycopg.adapters)
    adapters.register_loader("uuid", TextLoader)
    adapters.register_loader("json", JsonLoader)
    adapters.register_loader("jsonb", JsonLoader)
    return adapters


ADAPTERS = _adapters()


def connection_kwargs(config: PostgresConfig) -> dict[str, Any]:
    """Session settings for every broker connection (pool and listener)."""
    kwargs: dict[str, Any] = {"autocommit": True, "context": ADAPTERS}
    if not config.prepare:
        kwargs["prepare_threshold"] = None  # never prepare, not even after repeated use
    if "application_name" not in conninfo_to_dict(config.conninfo):
        kwargs["application_name"] = f"pqueue/{config.schema}"
    return kwargs


class Database:
    """A pool of autocommit connections with pqueue's error and reconnect rules."""

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self.address = address(config.conninfo)
        self.health: ServerHealth = health_of(f"Postgres at {self.address}")
        """Shared by every broker of this process on that server: one log line per outage."""
        self._pool = self._new_pool()
        self._cursors = CursorCache()
        self._translated = translated(config.schema, config.redacted)
        self._stale = False
        """A connection died: probe the server and start a fresh pool before the next statement."""
        self._reviving: asyncio.Lock | None = None
        self._probe_failed: tuple[float, str] | None = None
        """(monotonic time, cause) of the last failed probe, reused for PROBE_EVERY."""
        self._closing: set[asyncio.Task[None]] = set()
        demote("psycopg.pool")  # its per-attempt reconnect warnings; self.health reports outages

    def _new_pool(self) -> AsyncConnectionPool:
        config = self.config
        return AsyncConnectionPool(
            config.conninfo,
            kwargs=connection_kwargs(config),
            min_size=config.pool_min,
            max_size=config.pool_max,
            timeout=config.pool_timeout,
            open=False,
            name=f"pqueue/{config.schema}",
        )

    async def open(self) -> None:
        # One direct connection first: an unreachable server fails here at once with its
        # cause, not after pool_timeout with "pool initialization incomplete".
        await self.probe(timeout=self.config.pool_timeout, report=False)
        with translated(self.config.schema, self.config.redacted):
            await self._pool.open(wait=True, timeout=self.config.pool_timeout)

    async def close(self) -> None:
        await self._pool.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    async def fetch(
        self, query: LiteralString, params: Params, *, prepare: bool = True
    ) -> list[dict[str, Any]]:
        """Rows as dicts (for decoding jobs by column name)."""
        return await self._run(query, params, prepare, as_dicts=True)

    async def rows(
        self, query: LiteralString, params: Params, *, prepare: bool = True
    ) -> list[tuple[Any, ...]]:
        """Rows as tuples."""
        return await self._run(query, params, prepare, as_dicts=False)

    async def value(self, query: LiteralString, params: Params, *, prepare: bool = True) -> Any:
        """The first column of the first row, or None."""
        rows = await self.rows(query, params, prepare=prepare)
        return rows[0][0] if rows else None

    async def _run(self, query: LiteralString, params: Params, prepare: bool, *, as_dicts: bool) -> list[Any]:
        with self._translated:
            if self._stale:
                await self._revive()
            sent_at = time.monotonic()
            try:
                result = await self._once(query, params, prepare, as_dicts)
            except _ConnectionLost as lost:
                log.debug("pqueue: connection lost (%s); probing the server", lost.error)
                self._stale = True
                await self._revive()
                sent_at = time.monotonic()
                result = await self._retry(query, params, prepare, as_dicts)
            except PoolTimeout:
                await self.probe()  # the server is down (say so), or the pool is just busy (re-raise)
                raise
            except _RETRYABLE as exc:
                log.info("pqueue: retrying a statement after %s", type(exc).__name__)
                sent_at = time.monotonic()
                result = await self._retry(query, params, prepare, as_dicts)
            self.health.ok(sent_at)
            return result

    async def _retry(self, query: LiteralString, params: Params, prepare: bool, as_dicts: bool) -> list[Any]:
        try:
            return await self._once(query, params, prepare, as_dicts)
        except _ConnectionLost as lost:
            self._stale = True
            self.health.lost(describe(lost.error))
            raise lost.error from None

    async def _once(self, query: LiteralString, params: Params, prepare: bool, as_dicts: bool) -> list[Any]:
        # getconn/putconn rather than the pool's connection() context manager: the same for
        # autocommit connections, at half the cost (this wraps every statement).
        pool = self._pool
        try:
            conn = await pool.getconn()
        except PoolClosed:
            if self._pool is pool:
                raise
            return await self._once(query, params, prepare, as_dicts)  # replaced while we waited
        try:
            cur = self._cursors.cursor(conn, dict_row if as_dicts else tuple_row)
            await cur.execute(query, params, prepare=prepare and self.config.prepare)
            result = cur.pgresult
            rows: list[Any] = (
                await cur.fetchall() if result is not None and result.status == TUPLES_OK else []
            )
            self._cursors.done(conn, len(rows))
            return rows
        except psycopg.OperationalError as exc:
            self._cursors.forget(conn)
            if conn.broken or conn.closed:
                raise _ConnectionLost(exc) from exc
            raise
        except BaseException:
            self._cursors.forget(conn)
            raise
        finally:
            await pool.putconn(conn)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """One pooled connection in one transaction: committed when the block ends, rolled
        back if it raises (statements several calls must store all or nothing)."""
        with self._translated:
            sent_at = time.monotonic()
            async with self._pool.connection() as conn, conn.transaction():
                yield conn
            self.health.ok(sent_at)

    async def stream(
        self, query: LiteralString, params: Params, *, size: int
    ) -> AsyncIterator[list[tuple[Any, ...]]]:
        """Rows of one long read through a server-side cursor, ``size`` rows at a time.

        The cursor lives in one read-only transaction on one pooled connection, held until
        the caller stops iterating; memory stays bounded however many rows match.
        """
        with self._translated:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute("SET TRANSACTION READ ONLY")
                cur = conn.cursor(name="pqueue_scan", row_factory=tuple_row)
                await cur.execute(query, params)
                while rows := await cur.fetchmany(size):
                    yield rows
                await cur.close()

    async def probe(self, timeout: float = PROBE_TIMEOUT, *, report: bool = True) -> None:
        """Open and close one direct connection; :class:`BrokerUnreachable` (with the cause)
        if the server does not take it. A failure is remembered for ``PROBE_EVERY`` and,
        with ``report``, logged once per outage (not at open: nothing was lost yet)."""
        failed = self._probe_failed
        if failed is not None and time.monotonic() - failed[0] < PROBE_EVERY:
            raise self._unreachable(failed[1])  # a fresh error: a re-raised one grows its traceback
        try:
            async with asyncio.timeout(timeout):
                conn = await psycopg.AsyncConnection.connect(
                    self.config.conninfo, **connection_kwargs(self.config)
                )
        except (psycopg.Error, OSError, TimeoutError) as exc:
            cause = describe(exc)
            self._probe_failed = (time.monotonic(), cause)
            if report:
                self.health.lost(cause)
            # The message names the cause: callers get no driver traceback; DEBUG has it.
            log.debug("Postgres at %s: %s", self.address, exc, exc_info=exc)
            raise self._unreachable(cause) from None
        self._probe_failed = None
        await conn.close()

    def _unreachable(self, cause: str) -> BrokerUnreachable:
        return BrokerUnreachable(
            failure_message(f"Postgres at {self.address}", cause), address=self.address, cause=cause
        )

    async def _revive(self) -> None:
        """After a lost connection: probe the server, and once it answers, swap in a fresh pool.

        One caller probes at a time; the others wait for its verdict. The old pool is closed
        in the background (connections still out are closed when they come back).
        """
        if self._reviving is None:
            self._reviving = asyncio.Lock()
        async with self._reviving:
            if not self._stale:
                return  # another caller revived the pool while we waited
            await self.probe()
            old, self._pool = self._pool, self._new_pool()
            await self._pool.open(wait=False)
            self._stale = False
            task = asyncio.get_running_loop().create_task(old.close(timeout=1.0), name="pqueue-pg-old-pool")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)


class _ConnectionLost(Exception):
    """A statement failed because its connection died; ``error`` is the driver's error."""

    def __init__(self, error: psycopg.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error
