"""Pause/resume and cancel of running jobs in Postgres: the
:class:`~pqueue.broker_control.Controller` half (ADR 0105, 0106).

Paused queues are rows of ``paused_queues`` (migration 0004), which the claim and ``look``
statements skip. Cancels of running jobs are announced with NOTIFY on the schema's cancel
channel; a broker that calls :meth:`wait_for_cancels` listens for them on its hub, the
one LISTEN connection it shares with wake-ups and result waiters (ADR 0134).
"""

from __future__ import annotations

from pqueue.broker_control import CANCEL_KIND, CANCEL_REASON, cancel_reason, control_queue
from pqueue.brokers.cancel_inbox import CancelInbox
from pqueue.brokers.postgres.admin import PostgresAdmin
from pqueue.errors import JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import MAX_ERROR_HISTORY


def cancel_channel_for(schema: str) -> str:
    """The NOTIFY channel on which a schema's cancels of running jobs are announced."""
    return f"{schema}.cancel"


class PostgresControl(PostgresAdmin):
    """pause, resume, paused_queues, cancel_active, wait_for_cancels."""

    _cancels: CancelInbox | None = None

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
        self.db  # noqa: B018 - raises unless the broker is open (a closed one must not listen)
        if self._cancels is None:
            self._cancels = CancelInbox(cancel_channel_for(self.schema))
        return await self._cancels.wait_for_cancels(self._hub, timeout)

    async def close_cancels(self) -> None:
        """Stop listening for cancels (``close`` stops every channel; this one alone)."""
        inbox, self._cancels = self._cancels, None
        if inbox is not None:
            self._hub.unregister(inbox.channel)
