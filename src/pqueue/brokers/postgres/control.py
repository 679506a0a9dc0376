"""Pause/resume and cancel of running jobs in Postgres: the
:class:`~pqueue.broker_control.Controller` half (ADR 0105, 0106).

Paused queues are rows of ``paused_queues`` (migration 0004), which the claim and ``look``
statements skip. Cancels of running jobs are announced with NOTIFY on the schema's cancel
channel; a broker that calls :meth:`wait_for_cancels` keeps one LISTEN connection for
them, outside the pool (producers never open it).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import psycopg
from psycopg import sql

from pqueue.broker_control import CANCEL_KIND, CANCEL_REASON, cancel_reason, control_queue
from pqueue.brokers.postgres.admin import PostgresAdmin
from pqueue.brokers.postgres.connection import connection_kwargs, translated
from pqueue.errors import JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import MAX_ERROR_HISTORY


def cancel_channel_for(schema: str) -> str:
    """The NOTIFY channel on which a schema's cancels of running jobs are announced."""
    return f"{schema}.cancel"


class PostgresControl(PostgresAdmin):
    """pause, resume, paused_queues, cancel_active, wait_for_cancels."""

    _cancels: psycopg.AsyncConnection[Any] | None = None

    async def pause(self, queue: str) -> bool:
        params = self._params(queue=control_queue(queue))
        return bool(await self.db.value(self._q["pause"], params, prepare=False))

    async def resume(self, queue: str) -> bool:
        params = self._params(queue=control_queue(queue))
        return bool(await self.db.value(self._q["resume"], params, prepare=False))

    async def paused_queues(self) -> list[str]:
        return [str(queue) for (queue,) in await self.db.rows(self._q["paused_queues"], {}, prepare=False)]

    async def cancel_active(self, job_id: str, *, reason: str = CANCEL_REASON) -> bool:
        message = cancel_reason(reason)
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r}")
        params = self._params(
            id=job_id,
            kind=CANCEL_KIND,
            message=message,
            keep=MAX_ERROR_HISTORY,
            channel=cancel_channel_for(self.schema),
        )
        rows = await self.db.rows(self._q["cancel_active"], params, prepare=False)
        if not rows:
            raise JobNotFound(f"no job with id {job_id!r}")
        return bool(rows[0][1])

    async def wait_for_cancels(self, timeout: float) -> list[str]:
        conn = self._cancels
        if conn is None:
            with translated(self.schema, self.config.redacted):
                conn = await psycopg.AsyncConnection.connect(
                    self.config.conninfo, **connection_kwargs(self.config)
                )
                channel = sql.Identifier(cancel_channel_for(self.schema))
                await conn.execute(sql.SQL("LISTEN {}").format(channel))
            self._cancels = conn
            return []
        ids: list[str] = []
        try:
            with translated(self.schema, self.config.redacted):
                async for note in conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
                    ids.append(note.payload)
                while True:  # and whatever else has arrived already
                    more = [note.payload async for note in conn.notifies(timeout=0.0, stop_after=1)]
                    if not more:
                        break
                    ids += more
        except BaseException:
            await self.close_cancels()  # listen afresh next time; lost ones: the heartbeat
            raise
        return ids

    async def close_cancels(self) -> None:
        """Stop listening for cancels (``close`` calls it)."""
        conn, self._cancels = self._cancels, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(conn.close())
