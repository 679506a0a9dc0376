"""The local side of ``result()`` waiting, shared by the Redis and Postgres listeners: the
events of the coroutines waiting for each job, set when the broker's push channel names it."""

from __future__ import annotations

import asyncio


class ResultWaiters:
    """Job id -> the events of its local waiters (ADR 0117)."""

    def __init__(self) -> None:
        self._events: dict[str, set[asyncio.Event]] = {}

    def add(self, job_id: str) -> asyncio.Event:
        """A new event, set when ``job_id`` is named (or every waiter is woken)."""
        event = asyncio.Event()
        self._events.setdefault(job_id, set()).add(event)
        return event

    def remove(self, job_id: str, event: asyncio.Event) -> None:
        """Forget a waiter that finished waiting (woken or timed out)."""
        events = self._events.get(job_id)
        if events is not None:
            events.discard(event)
            if not events:
                del self._events[job_id]

    def wake(self, job_id: str | None) -> None:
        """Wake the waiters of ``job_id``, or all of them (None: after a reconnect, when a
        message may have been missed, each waiter looks at its job again)."""
        groups = self._events.values() if job_id is None else [self._events.get(job_id, set())]
        for events in groups:
            for event in events:
                event.set()
