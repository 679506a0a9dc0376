"""Wake idle claimers within milliseconds of work arriving, without polling.

Scripts that make a queue's pending list non-empty (or bring its next scheduled/retry
run_at forward) ``PUBLISH`` the queue name on ``<prefix>:wake``. Each broker keeps one
subscribed connection, read by one task that sets the events of local waiters on that
queue. Waiters subscribe before they look for due work, so no wake-up falls between
the look and the sleep. After the listener reconnects, every waiter is woken once to
look again (messages sent while it was away are lost).

The same connection also listens on the broker's own hand-off channel, on which enqueues
publish jobs leased to this broker's parked claimers (:mod:`.handoff`); those messages
go to ``on_handoff``. :meth:`WakeHub.flush` sends a marker down that channel and waits
for it, so every hand-off published before the call has been received when it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from pqueue.brokers.handoff import FlushMarkers
from pqueue.brokers.redis.core import OutageReporter, honour_lost_cancel

log = logging.getLogger("pqueue.redis")

RECONNECT_EVERY = 0.1
"""Seconds between the listener's attempts to subscribe again after losing its connection."""


class WakeHub:
    """One pub/sub listener per broker, fanning wake-ups out to local waiters."""

    def __init__(
        self,
        client: Redis,
        channel: str,
        handoff_channel: str,
        on_handoff: Callable[[str], None],
        *,
        reporter: OutageReporter | None = None,
    ) -> None:
        self._client = client
        self._channel = channel
        self._handoff_channel = handoff_channel
        self._on_handoff = on_handoff
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._markers = FlushMarkers()
        self._reporter = reporter

    async def subscribed(self, timeout: float) -> bool:
        """Start listening if needed; True once the subscription is confirmed."""
        if self._task is None or self._task.done():  # first use, or the listener died
            self._ready = asyncio.Event()
            self._task = asyncio.create_task(self._listen(), name="pqueue-redis-wakeup")
        assert self._ready is not None
        if self._ready.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        return self._ready.is_set()

    def add(self, queues: Iterable[str], event: asyncio.Event) -> None:
        for queue in queues:
            self._waiters.setdefault(queue, set()).add(event)

    def remove(self, queues: Iterable[str], event: asyncio.Event) -> None:
        for queue in queues:
            events = self._waiters.get(queue)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[queue]

    def _wake(self, queue: str) -> None:
        for event in self._waiters.get(queue, ()):
            event.set()

    def _wake_all(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()

    async def _listen(self) -> None:
        assert self._ready is not None
        pubsub = self._client.pubsub()
        me = asyncio.current_task()
        try:
            while True:
                try:
                    if not pubsub.subscribed:
                        await pubsub.subscribe(self._channel, self._handoff_channel)
                    message = await pubsub.get_message(timeout=None)
                    honour_lost_cancel(me, 0)  # close() cancels us; redis-py may drop that
                except (RedisError, OSError) as exc:
                    honour_lost_cancel(me, 0)
                    # Logged once per outage by the server's health, not per attempt.
                    log.debug("pqueue: wake-up listener lost redis (%s); reconnecting", exc)
                    if self._reporter is not None:
                        self._reporter.lost(exc)
                    self._ready.clear()
                    self._wake_all()
                    await asyncio.sleep(RECONNECT_EVERY)
                    continue
                self._handle(message)
        except Exception:
            log.exception("pqueue: wake-up listener failed; the next wait starts a new one")
            self._wake_all()
            raise
        finally:
            self._ready.clear()
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _handle(self, message: dict[str, object] | None) -> None:
        assert self._ready is not None
        if message is None:
            return
        kind = message.get("type")
        if kind == "message":
            if message.get("channel") == self._handoff_channel:
                self._received(str(message.get("data")))
            else:
                self._wake(str(message.get("data")))
        elif kind == "subscribe" and message.get("channel") == self._handoff_channel:  # the last one
            if self._ready.is_set():  # a re-subscription after a reconnect: look again
                self._wake_all()
            self._ready.set()

    def _received(self, data: str) -> None:
        if not self._markers.arrived(data):
            self._on_handoff(data)

    async def flush(self, timeout: float) -> bool:
        """Wait until every hand-off published before this call has been received.

        Redis delivers one channel's messages in the order they were published, so a
        marker published now arrives after them. False if it did not come in ``timeout``.
        """
        if self._task is None or self._task.done() or self._ready is None or not self._ready.is_set():
            return False
        with self._markers.new() as (marker, arrived):
            try:
                await self._client.publish(self._handoff_channel, marker)
                async with asyncio.timeout(timeout):
                    await arrived.wait()
                return True
            except (TimeoutError, RedisError, OSError):
                return False

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})  # unlike `await task`, keeps a cancel of close() itself
        self._wake_all()
