"""Pause/resume and cancel of running jobs over the Redis layout: the
:class:`~pqueue.broker_control.Controller` half (ADR 0105, 0106).

Each queue's ``paused`` key is what claim.lua and park.lua obey (read in the queue's own
cluster slot); the global ``paused`` set is only the index :meth:`paused_queues` reads.
Cancels of running jobs are published on ``<prefix>:cancel``; a broker that calls
:meth:`wait_for_cancels` hears them on its hub, the one pub/sub connection it shares
with wake-ups and result waiters (ADR 0134).
"""

from __future__ import annotations

import logging

from pqueue.broker_control import CANCEL_KIND, CANCEL_REASON, cancel_reason, control_queue
from pqueue.brokers.cancel_inbox import CancelInbox
from pqueue.brokers.redis import calls
from pqueue.brokers.redis.core import translated
from pqueue.brokers.redis.inspector import RedisInspector
from pqueue.errors import JobNotFound
from pqueue.job import ErrorInfo

log = logging.getLogger("pqueue.redis")


class RedisControl(RedisInspector):
    """pause, resume, paused_queues, cancel_active, wait_for_cancels."""

    _cancels: CancelInbox | None = None

    @translated
    async def pause(self, queue: str) -> bool:
        queue = control_queue(queue)
        paused = await self.run(calls.pause(self.queue(queue), self.now_arg()))
        await self.client.sadd(self.keys.paused, queue)
        return bool(paused == 1)

    @translated
    async def resume(self, queue: str) -> bool:
        queue = control_queue(queue)
        await self.client.srem(self.keys.paused, queue)
        resumed = await self.run(calls.resume(self.queue(queue), self.now_arg(), self.keys.wake_channel))
        return bool(resumed == 1)

    @translated
    async def paused_queues(self) -> list[str]:
        names = await self.client.smembers(self.keys.paused)
        return sorted(str(name) for name in names)

    @translated
    async def cancel_active(self, job_id: str, *, reason: str = CANCEL_REASON) -> bool:
        note = ErrorInfo(CANCEL_KIND, cancel_reason(reason))
        queue, fields = await self.steps(self._locate(job_id))
        limit_key = fields.get("limit_key")
        call = calls.cancel_active(
            self.keys_for(queue, limit_key),
            self.now_arg(),
            job_id,
            retention_ms=self.retention_ms,
            reason=note,
            channel=self.keys.cancel_channel,
            results_channel=self.keys.results_channel,
        )
        done, *_ = await self.run_many([call, *self.reready([(queue, limit_key)])])  # slot freed
        if done == -1:
            raise JobNotFound(f"no job with id {job_id!r}")
        if done == 2:  # it has dependants: tell them, as cancel does (ADR 0116)
            await self.settle_or_defer(queue, [job_id])
        return bool(done in (1, 2))

    async def wait_for_cancels(self, timeout: float) -> list[str]:
        self.client  # noqa: B018 - raises unless the broker is open (a closed one must not listen)
        if self._cancels is None:
            self._cancels = CancelInbox(self.keys.cancel_channel)
        return await self._cancels.wait_for_cancels(self._hub, timeout)

    async def close_cancels(self) -> None:
        """Stop listening for cancels (``close`` stops every channel; this one alone)."""
        inbox, self._cancels = self._cancels, None
        if inbox is not None:
            self._hub.unregister(inbox.channel)
