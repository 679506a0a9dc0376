"""Concurrent ``AsyncRsmq`` calls share round trips: requests that arrive together go out
as one Redis pipeline.

The policy is :class:`pqueue.combine.Line`'s (ADR 0121): a caller that finds nothing in
flight sends at once (a lone caller waits for nothing), callers arriving while a round
trip is in flight wait, and the next round trip carries all of them. Each gets its own
reply or its own error: a pipeline's commands fail one by one. The round trips run in a
task of their own, so a caller cancelled while waiting neither cancels its neighbours'
round trip nor stalls the line; a request not yet sent when its caller is cancelled is not
sent at all. Eight tasks receiving and deleting then cost one write and one read per
round trip instead of eight of each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pqueue.combine import AsyncCombiner

Send = Callable[[list[Any]], Awaitable[list[Any]]]
"""Sends requests in one round trip; returns a reply or an exception per request."""


class Rounds:
    """Callers of one asyncio client sharing round trips through ``send``: an
    :class:`~pqueue.combine.AsyncCombiner` whose round trip, when it fails as a whole,
    fails each of its callers with that error."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._combiner: AsyncCombiner[Any, Any] = AsyncCombiner(self._each, name="pqueue-rsmq-rounds")

    async def _each(self, requests: list[Any]) -> list[Any]:
        try:
            return await self._send(requests)
        except Exception as exc:  # noqa: BLE001 - the whole round trip failed: each caller gets it
            return [exc] * len(requests)

    async def submit(self, request: Any) -> Any:
        """``request``'s reply (or its error, raised here) from the next round trip."""
        return await self._combiner.submit(request)
