"""Idle claimers waiting on the wake-up channel of the broker's hub.

Scripts that make a queue's pending list non-empty (or bring its next scheduled/retry
run_at forward) ``PUBLISH`` the queue name on ``<prefix>:wake``; the hub hands each to
:meth:`Wakeups.wake`, which sets the events of local waiters on that queue. Waiters
register before they look for due work, so no wake-up falls between the look and the
sleep. Whenever the hub may have missed messages (it lost its connection, or subscribed
again), every waiter is woken once to look again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


class Wakeups:
    """Queue name -> the events of the local waiters on it."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

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

    def wake(self, queue: str) -> None:
        for event in self._waiters.get(queue, ()):
            event.set()

    def wake_all(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()
