"""The broker's LISTEN connection for ``result()`` waiters (ADR 0117).

Opened on the first ``wait_finished`` (producers that never wait never open it), kept
outside the pool and reconnected with backoff. It listens on the schema's results
channel, where ``job_finished`` (migration 0005) names each finished job that a waiter
marked ``watched``; the waiters of that id are woken. After every (re)connect all waiters
are woken to read their job again, since notifications sent meanwhile are lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg
from psycopg import sql

from pqueue.brokers.health import describe, health_of
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import address, connection_kwargs
from pqueue.brokers.postgres.sql import results_channel_for
from pqueue.brokers.result_waiters import ResultWaiters

log = logging.getLogger("pqueue.postgres")

MIN_BACKOFF = 0.05
MAX_BACKOFF = 0.5


class ResultListener:
    """LISTEN on the results channel; wake the local waiters of each job it names."""

    def __init__(self, config: PostgresConfig) -> None:
        self._config = config
        self._channel = results_channel_for(config.schema)
        self._waiters = ResultWaiters()
        self._listening = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = MIN_BACKOFF
        self._health = health_of(f"Postgres at {address(config.conninfo)}")

    async def start(self, timeout: float) -> bool:
        """Start listening (once) and wait up to ``timeout`` s for it; False = not yet."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"pqueue-results-{self._config.schema}")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._listening.wait()
        return self._listening.is_set()

    def add(self, job_id: str) -> asyncio.Event:
        return self._waiters.add(job_id)

    def remove(self, job_id: str, event: asyncio.Event) -> None:
        self._waiters.remove(job_id, event)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._listening.clear()

    async def _run(self) -> None:
        while True:
            try:
                await self._listen()
            except psycopg.Error as exc:  # logged once per outage by the server's health
                log.debug("pqueue: results LISTEN connection lost (%s)", exc)
                self._health.lost(describe(exc))
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)

    async def _listen(self) -> None:
        conn = await psycopg.AsyncConnection.connect(self._config.conninfo, **connection_kwargs(self._config))
        try:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            self._backoff = MIN_BACKOFF
            self._listening.set()
            self._waiters.wake(None)
            async for note in conn.notifies():
                self._waiters.wake(note.payload)
        finally:
            self._listening.clear()
            await conn.close()
