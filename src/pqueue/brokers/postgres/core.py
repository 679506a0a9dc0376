"""What every part of the Postgres broker shares: settings, queries, pool, clock, lifecycle."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, LiteralString, TypeVar

from pqueue.brokers.fencing import landed
from pqueue.brokers.handoff import FlushMarkers
from pqueue.brokers.hub import Hub
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import Database, migrate_hint
from pqueue.brokers.postgres.hub import PostgresLink
from pqueue.brokers.postgres.sql import latest_version, queries_for
from pqueue.clock import Clock, to_datetime
from pqueue.errors import BrokerError, SchemaError
from pqueue.job import Lease
from pqueue.steps import Steps, run_async

T = TypeVar("T")

log = logging.getLogger("pqueue.postgres")

Statement = tuple[LiteralString, Mapping[str, Any], bool]
"""One step of an operation (pqueue.steps): a named query's text, its parameters, and
whether to prepare it; the reply is its rows as tuples."""
Rows = list[tuple[Any, ...]]


class BrokerCore:
    """Connection lifecycle and helpers; the hot path and admin methods build on it."""

    def __init__(self, config: PostgresConfig, *, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock
        self._q = queries_for(config.schema)
        self._db: Database | None = None
        self._link = PostgresLink(config, self._q["listener_identity"])
        self._hub = Hub(self._link, name=f"pqueue-listen-{config.schema}")
        """The broker's one LISTEN connection, for every part that waits (ADR 0134)."""
        self.handoff_channel = f"pqueue_h_{uuid.uuid4().hex}"  # this broker's own; <= 63 bytes
        self.markers = FlushMarkers()

    @property
    def schema(self) -> str:
        return self.config.schema

    @property
    def db(self) -> Database:
        if self._db is None:
            raise BrokerError(
                "the Postgres broker is not open: use 'async with broker' or 'await broker.open()'"
            )
        return self._db

    async def open(self) -> None:
        """Connect the pool and check the schema version; idempotent."""
        if self._db is not None:
            return
        db = Database(self.config)
        await db.open()
        try:
            await self._check_schema(db)
        except BaseException:
            await db.close()
            raise
        self._db = db

    async def close(self) -> None:
        """Stop listening and close every connection; idempotent."""
        await self._hub.close()
        db, self._db = self._db, None
        if db is not None:
            await db.close()

    async def _check_schema(self, db: Database) -> None:
        version = await db.value(self._q["schema_version"], {}, prepare=False)
        known = latest_version()
        where = f"schema {self.schema!r} at {self.config.redacted}"
        hint = migrate_hint(self.schema, self.config.redacted)
        if version is None:
            raise SchemaError(f"pqueue {where} has no migrations applied; {hint}")
        if version > known:
            raise SchemaError(
                f"pqueue {where} is at version {version}, newer than this pqueue knows ({known}); "
                "upgrade pqueue before running it against this schema"
            )
        if version < known:
            raise SchemaError(f"pqueue {where} is at version {version}, this pqueue needs {known}; {hint}")

    async def steps(self, steps: Steps[Statement, Rows, T]) -> T:
        """Drive an operation's steps on this broker's asyncio pool (see pqueue.steps)."""
        return await run_async(steps, self._execute)

    async def _execute(self, statement: Statement) -> Rows:
        query, params, prepare = statement
        return await self.db.rows(query, params, prepare=prepare)

    def _now(self) -> datetime | None:
        """The ``now`` parameter: the injected clock's time, or None for the server's."""
        return None if self.clock is None else to_datetime(self.clock.now())

    def _params(self, **params: Any) -> dict[str, Any]:
        params["now"] = self._now()
        return params

    async def now(self) -> float:
        """The broker's current time: the injected clock, else the server's clock."""
        if self.clock is not None:
            return self.clock.now()
        stamp: datetime = await self.db.value(self._q["now"], {})
        return stamp.timestamp()


def settled(leases: Sequence[Lease], rows: Sequence[Sequence[Any]]) -> list[bool]:
    """Per lease, True if its job id and token came back from a fenced update (rows start
    with the id and end with the token that matched: a stale lease of the same job in the
    same batch is not credited)."""
    return landed(leases, ((str(row[0]), str(row[-1])) for row in rows))
