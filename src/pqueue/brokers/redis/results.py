"""Wake ``result()`` waiters within milliseconds of their job finishing (ADR 0117).

The finishing scripts PUBLISH a job's id on ``<prefix>:results`` when a waiter marked it
``watched`` (watch.lua). Each broker keeps one subscribed connection for its waiters,
started on the first wait; after a reconnect every waiter is woken once to read its job
again (messages sent while it was away are lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError

from pqueue.brokers.redis.core import OutageReporter, honour_lost_cancel
from pqueue.brokers.result_waiters import ResultWaiters

log = logging.getLogger("pqueue.redis")

RECONNECT_EVERY = 0.1


class ResultHub:
    """One pub/sub listener per broker on the results channel, fanning out to waiters."""

    def __init__(self, client: Redis, channel: str, *, reporter: OutageReporter | None = None) -> None:
        self._client = client
        self._channel = channel
        self._reporter = reporter
        self._waiters = ResultWaiters()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def subscribed(self, timeout: float) -> bool:
        """Start listening if needed; True once the subscription is confirmed."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._listen(), name="pqueue-redis-results")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        return self._ready.is_set()

    def add(self, job_id: str) -> asyncio.Event:
        return self._waiters.add(job_id)

    def remove(self, job_id: str, event: asyncio.Event) -> None:
        self._waiters.remove(job_id, event)

    async def _listen(self) -> None:
        pubsub = self._client.pubsub()
        me = asyncio.current_task()
        try:
            while True:
                try:
                    if not pubsub.subscribed:
                        await pubsub.subscribe(self._channel)
                    message = await pubsub.get_message(timeout=None)
                    honour_lost_cancel(me, 0)
                except (RedisError, OSError) as exc:
                    honour_lost_cancel(me, 0)
                    log.debug("pqueue: results listener lost redis (%s); reconnecting", exc)
                    if self._reporter is not None:
                        self._reporter.lost(exc)
                    self._ready.clear()
                    self._waiters.wake(None)
                    await asyncio.sleep(RECONNECT_EVERY)
                    continue
                if message is None:
                    continue
                if message.get("type") == "message":
                    self._waiters.wake(str(message.get("data")))
                elif message.get("type") == "subscribe":
                    if self._ready.is_set():
                        self._waiters.wake(None)
                    self._ready.set()
        finally:
            self._ready.clear()
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})
        self._waiters.wake(None)
