"""The broker's connection pool and the one place driver errors become pqueue errors.

Every statement runs in autocommit on a pooled psycopg connection. When a statement fails
because the connection died (a Postgres restart, ``pg_terminate_backend``, a network cut),
the pool is told to check its idle connections and the statement is retried once on a
fresh one. That retry is safe for every statement pqueue runs: job ids are made by the
producer (``ON CONFLICT (id) DO NOTHING``), settlements are fenced by lease tokens, and a
claim whose reply was lost only leaves leases that recovery hands back. ADR 0013 has the
reasoning. Anything still failing surfaces as :class:`~pqueue.errors.BrokerUnavailable`.
"""

from __future__ import annotations

import json
import logging
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
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from pqueue.brokers.postgres.codec import TOO_DEEP
from pqueue.brokers.postgres.config import DEFAULT_SCHEMA, PostgresConfig
from pqueue.errors import BrokerError, BrokerUnavailable, SchemaError

log = logging.getLogger("pqueue.postgres")

Params = Mapping[str, Any]

_SCHEMA_MISSING = (pg_errors.UndefinedTable, pg_errors.InvalidSchemaName, pg_errors.UndefinedFunction)
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
TUPLES_OK = ExecStatus.TUPLES_OK


def migrate_hint(schema: str, dsn: str = "postgresql://...") -> str:
    """The command that creates or upgrades the schema, for error messages."""
    option = "" if schema == DEFAULT_SCHEMA else f" --schema {schema}"
    return f"run: pqueue migrate --dsn '{dsn}'{option}"


class translated:  # noqa: N801 - used like the function it replaced: ``with translated(...)``
    """Re-raise psycopg/pool errors as the pqueue error a caller can act on.

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
        # The driver's first line says what went wrong; the rest (LINE 2: ... ^, hints) is
        # for psql, and would break the one-line errors of logs and the CLI.
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, _SCHEMA_MISSING):
            raise SchemaError(
                f"pqueue schema {schema!r} is missing or incomplete in {dsn} ({said}); "
                f"{migrate_hint(schema, dsn)}"
            ) from exc
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError | PoolTimeout):
            raise BrokerUnavailable(f"Postgres at {dsn} is unavailable: {said}") from exc
        raise BrokerError(f"Postgres error: {said}") from exc


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
    """A pool of autocommit connections with pqueue's error rules."""

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self._pool = AsyncConnectionPool(
            config.conninfo,
            kwargs=connection_kwargs(config),
            min_size=config.pool_min,
            max_size=config.pool_max,
            timeout=config.pool_timeout,
            open=False,
            name=f"pqueue/{config.schema}",
        )
        self._translated = translated(config.schema, config.redacted)

    async def open(self) -> None:
        with translated(self.config.schema, self.config.redacted):
            await self._pool.open(wait=True, timeout=self.config.pool_timeout)

    async def close(self) -> None:
        await self._pool.close()

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
            try:
                return await self._once(query, params, prepare, as_dicts)
            except _ConnectionLost as lost:
                log.warning("pqueue: connection lost (%s); retrying on a fresh one", lost.error)
                await self._check_pool()
            except _RETRYABLE as exc:
                log.info("pqueue: retrying a statement after %s", type(exc).__name__)
            try:
                return await self._once(query, params, prepare, as_dicts)
            except _ConnectionLost as lost:
                raise lost.error from None

    async def _once(self, query: LiteralString, params: Params, prepare: bool, as_dicts: bool) -> list[Any]:
        # getconn/putconn rather than the pool's connection() context manager: the same for
        # autocommit connections, at half the cost (this wraps every statement).
        conn = await self._pool.getconn()
        try:
            cur = conn.cursor(row_factory=dict_row if as_dicts else tuple_row)
            await cur.execute(query, params, prepare=prepare and self.config.prepare)
            result = cur.pgresult
            return await cur.fetchall() if result is not None and result.status == TUPLES_OK else []
        except psycopg.OperationalError as exc:
            if conn.broken or conn.closed:
                raise _ConnectionLost(exc) from exc
            raise
        finally:
            await self._pool.putconn(conn)

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

    async def _check_pool(self) -> None:
        """Replace every idle connection that died with the one that just failed."""
        try:
            await self._pool.check()
        except Exception:  # the retry reports the real failure, if any
            log.debug("pqueue: pool check failed", exc_info=True)


class _ConnectionLost(Exception):
    """A statement failed because its connection died; ``error`` is the driver's error."""

    def __init__(self, error: psycopg.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error
