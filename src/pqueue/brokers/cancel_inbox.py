"""Cancels of running jobs heard on a broker's hub, kept for ``wait_for_cancels`` (ADR 0106, 0134).

The hub hands each id published on the cancel channel to :meth:`CancelInbox.put`; the
worker's listener takes them with :meth:`CancelInbox.take`. Ids missed while the hub was
down are not replayed: the next heartbeat finds those leases refused (ADR 0106).
"""

from __future__ import annotations

import asyncio
import contextlib

from pqueue.brokers.hub import Hub

START_TIMEOUT = 5.0
"""Most seconds the first ``wait_for_cancels`` waits for the hub to hear the channel."""


class CancelInbox:
    """Ids heard on the cancel channel, not yet taken."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._ids: list[str] = []
        self._arrived = asyncio.Event()

    def put(self, job_id: str) -> None:
        self._ids.append(job_id)
        self._arrived.set()

    async def wait_for_cancels(self, hub: Hub, timeout: float) -> list[str]:
        """The first call registers the channel and waits until the hub hears it (returns
        []); later calls return the ids heard so far, waiting up to ``timeout`` s for one."""
        if not hub.registered(self.channel):
            hub.register(self.channel, self.put)
            await hub.start(max(timeout, START_TIMEOUT))
            return []
        await hub.start(0.0)  # a closed hub (broker reopened) connects again
        if not self._ids:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(timeout, 0.0)):
                    await self._arrived.wait()
        ids, self._ids = self._ids, []
        self._arrived.clear()
        return ids
