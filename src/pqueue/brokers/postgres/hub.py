"""The Postgres side of the broker's notification hub (ADR 0134): one LISTEN connection.

Kept outside the pool, in autocommit, with the broker's session settings. On every
(re)connect the connection's backend identity (pid, start) is read first: parked
claimers name it, so an enqueue hands off only to a claimer whose listener is alive
(ADR 0054). psycopg serialises a connection's use, so the hub stops reading while it
LISTENs on a newly registered channel; notifications that arrive meanwhile wait in the
driver and are read next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any, LiteralString

import psycopg
from psycopg import sql

from pqueue.brokers.health import ServerHealth, describe, health_of
from pqueue.brokers.hub import Hub
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import address, connection_kwargs

_LISTEN = sql.SQL("-- pqueue:listen\nLISTEN {}")
_UNLISTEN = sql.SQL("-- pqueue:listen\nUNLISTEN {}")


class PostgresSession:
    """One LISTEN connection reporting to its hub."""

    listens_while_reading = False

    def __init__(self, conn: psycopg.AsyncConnection[Any], hub: Hub, link: PostgresLink) -> None:
        self._conn = conn
        self._hub = hub
        self._link = link

    async def listen(self, channels: Sequence[str]) -> None:
        for channel in channels:
            await self._conn.execute(_LISTEN.format(sql.Identifier(channel)))
            self._hub.heard(channel)

    async def unlisten(self, channels: Sequence[str]) -> None:
        for channel in channels:
            await self._conn.execute(_UNLISTEN.format(sql.Identifier(channel)))

    async def read(self) -> None:
        deliver = self._hub.deliver
        async for note in self._conn.notifies():
            deliver(note.channel, note.payload)

    async def close(self) -> None:
        self._link.identity = None
        with contextlib.suppress(Exception):  # a dead connection closes as it can
            await self._conn.close()


class PostgresLink:
    """Makes the hub's LISTEN connections; reports outages to the server's health."""

    errors: tuple[type[BaseException], ...] = (psycopg.Error, OSError)

    def __init__(self, config: PostgresConfig, identity_query: LiteralString) -> None:
        self._config = config
        self._identity_query = identity_query
        self._health: ServerHealth = health_of(f"Postgres at {address(config.conninfo)}")
        self.identity: tuple[int, datetime] | None = None
        """(pid, backend start) of the LISTEN connection while it is up, else None."""

    async def connect(self, hub: Hub) -> PostgresSession:
        self.identity = None
        conn = await psycopg.AsyncConnection.connect(self._config.conninfo, **connection_kwargs(self._config))
        try:
            row = await (await conn.execute(self._identity_query)).fetchone()
        except BaseException:
            await conn.close()
            raise
        self.identity = None if row is None else (int(row[0]), row[1])
        return PostgresSession(conn, hub, self)

    def lost(self, error: BaseException) -> None:
        self.identity = None
        self._health.lost(describe(error))

    def back(self, sent_at: float) -> None:
        self._health.ok(sent_at)
