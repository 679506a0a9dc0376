"""The broker's one LISTEN connection, and the idle claimers parked on it.

Started on the first ``wait_for_jobs`` (producers never open it), kept outside the pool,
and reconnected with backoff when it drops. It listens on two channels:

- the schema's: "<queue> <seconds until due>" wakes a waiter on that queue at once for
  0, or shortens its sleep for a later time;
- the broker's own hand-off channel (ADR 0054): leases an enqueue gave this broker's
  parked claimers go to ``on_handoff``; a marker from :attr:`markers` tells the broker's
  ``close`` that everything sent before it has arrived.

After every (re)connect all waiters are woken, since notifications sent while nobody
listened are lost; :attr:`identity` names the connection's backend while it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import LiteralString

import psycopg
from psycopg import sql

from pqueue.brokers.handoff import FlushMarkers
from pqueue.brokers.health import describe, health_of
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import address, connection_kwargs

log = logging.getLogger("pqueue.postgres")

MIN_BACKOFF = 0.05
MAX_BACKOFF = 0.5  # a listener back within half a second of the server: wake-ups and hand-offs resume


class Waiter:
    """One parked ``wait_for_jobs`` call: its queues and when a job is expected due."""

    __slots__ = ("due_at", "event", "queues")

    def __init__(self, queues: Sequence[str]) -> None:
        self.queues = frozenset(queues)
        self.event = asyncio.Event()
        self.due_at = math.inf  # event-loop time

    def expect(self, when: float) -> None:
        """A job of one of our queues is due at loop time ``when``: wake to look again."""
        self.due_at = min(self.due_at, when)
        self.event.set()


class Listener:
    """LISTEN on the schema's channel and the broker's hand-off channel; route what comes."""

    def __init__(
        self,
        config: PostgresConfig,
        listen_query: LiteralString,
        identity_query: LiteralString,
        *,
        handoff_channel: str,
        on_handoff: Callable[[str], None],
    ) -> None:
        self._config = config
        self._listen_query = listen_query
        self._identity_query = identity_query
        self.handoff_channel = handoff_channel
        self._on_handoff = on_handoff
        self._waiters: set[Waiter] = set()
        self._listening = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = MIN_BACKOFF
        self.markers = FlushMarkers()
        self._health = health_of(f"Postgres at {address(config.conninfo)}")
        self.identity: tuple[int, datetime] | None = None
        """(pid, backend start) of the LISTEN connection while it listens, else None."""

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    async def start(self, timeout: float) -> bool:
        """Start listening (once) and wait up to ``timeout`` s for it; False = not yet."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"pqueue-listen-{self._config.schema}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), timeout)
        return self._listening.is_set()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._listening.clear()

    def park(self, queues: Sequence[str]) -> Waiter:
        waiter = Waiter(queues)
        self._waiters.add(waiter)
        return waiter

    def unpark(self, waiter: Waiter) -> None:
        self._waiters.discard(waiter)

    def dispatch(self, payload: str) -> None:
        """Handle one notification payload ("<queue> <seconds until due>")."""
        queue, _, delay_text = payload.partition(" ")
        try:
            delay = max(float(delay_text), 0.0)
        except ValueError:
            delay = 0.0
        when = asyncio.get_running_loop().time() + delay
        for waiter in list(self._waiters):
            if queue in waiter.queues:
                waiter.expect(when)

    def _handoff(self, payload: str) -> None:
        if not self.markers.arrived(payload):
            self._on_handoff(payload)

    def wake_all(self) -> None:
        now = asyncio.get_running_loop().time()
        for waiter in list(self._waiters):
            waiter.expect(now)

    async def _run(self) -> None:
        while True:
            try:
                await self._listen()
            except psycopg.Error as exc:  # logged once per outage by the server's health
                log.debug("pqueue: LISTEN connection lost (%s); reconnecting in %.1fs", exc, self._backoff)
                self._health.lost(describe(exc))
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)

    async def _listen(self) -> None:
        conn = await psycopg.AsyncConnection.connect(self._config.conninfo, **connection_kwargs(self._config))
        try:
            await conn.execute(self._listen_query)
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.handoff_channel)))
            row = await (await conn.execute(self._identity_query)).fetchone()
            self.identity = None if row is None else (int(row[0]), row[1])
            self._backoff = MIN_BACKOFF
            self._listening.set()
            self.wake_all()
            async for note in conn.notifies():
                if note.channel == self.handoff_channel:
                    self._handoff(note.payload)
                else:
                    self.dispatch(note.payload)
        finally:
            self.identity = None
            self._listening.clear()
            await conn.close()
