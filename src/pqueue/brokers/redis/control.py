"""Pause/resume and cancel of running jobs over the Redis layout: the
:class:`~pqueue.broker_control.Controller` half (ADR 0105, 0106).

Each queue's ``paused`` key is what claim.lua and park.lua obey (read in the queue's own
cluster slot); the global ``paused`` set is only the index :meth:`paused_queues` reads.
Cancels of running jobs are published on ``<prefix>:cancel``; a broker that calls
:meth:`wait_for_cancels` keeps one subscribed connection for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from pqueue.broker_control import CANCEL_KIND, CANCEL_REASON, cancel_reason, control_queue
from pqueue.brokers.redis import calls
from pqueue.brokers.redis.core import translated
from pqueue.brokers.redis.inspector import RedisInspector
from pqueue.errors import JobNotFound
from pqueue.job import ErrorInfo

log = logging.getLogger("pqueue.redis")


class RedisControl(RedisInspector):
    """pause, resume, paused_queues, cancel_active, wait_for_cancels."""

    _cancels: PubSub | None = None

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

    @translated
    async def wait_for_cancels(self, timeout: float) -> list[str]:
        pubsub = self._cancels
        try:
            if pubsub is None:
                pubsub = self._cancels = self.client.pubsub()
                await pubsub.subscribe(self.keys.cancel_channel)
                await self._confirmed(pubsub, timeout)
                return []
            return await _drain(pubsub, timeout)
        except (RedisError, OSError):
            await self.close_cancels()  # subscribe afresh next time; lost messages: the heartbeat
            raise

    async def _confirmed(self, pubsub: PubSub, timeout: float) -> None:
        """Wait for the subscription's confirmation, so later cancels are heard."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 1.0)
        while loop.time() < deadline:
            message = await pubsub.get_message(timeout=deadline - loop.time())
            if message is not None and message.get("type") == "subscribe":
                return

    async def close_cancels(self) -> None:
        """Stop listening for cancels (``close`` calls it)."""
        pubsub, self._cancels = self._cancels, None
        if pubsub is not None:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]


async def _drain(pubsub: PubSub, timeout: float) -> list[str]:
    """Job ids published so far, waiting up to ``timeout`` seconds for the first."""
    ids: list[str] = []
    wait = max(timeout, 0.0)
    while True:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=wait)
        if message is None:  # nothing more (or, at worst, a subscribe notice ends the wait early)
            return ids
        if message.get("type") == "message":
            ids.append(str(message.get("data")))
            wait = 0.0
