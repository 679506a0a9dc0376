"""Idle claimers parked on the schema's wake-up channel of the broker's hub.

``enqueue`` and the other statements that make work due NOTIFY the schema's channel with
"<queue> <seconds until due>": a waiter on that queue wakes at once for 0, or shortens
its sleep for a later time. Whenever the hub may have missed notifications (it lost its
connection, or just started listening), every waiter is woken to look again.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence


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


class Wakeups:
    """The parked waiters, and the handlers the hub calls for the wake-up channel."""

    def __init__(self) -> None:
        self._waiters: set[Waiter] = set()

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

    def wake_all(self) -> None:
        """Messages may have been missed: every waiter looks again."""
        if not self._waiters:
            return
        now = asyncio.get_running_loop().time()
        for waiter in list(self._waiters):
            waiter.expect(now)
