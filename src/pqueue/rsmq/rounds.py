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

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pqueue.combine import Line

Send = Callable[[list[Any]], Awaitable[list[Any]]]
"""Sends requests in one round trip; returns a reply or an exception per request."""


class _Waiter:
    __slots__ = ("future", "request")

    def __init__(self, request: Any, future: asyncio.Future[Any]) -> None:
        self.request = request
        self.future = future


class Rounds:
    """Callers of one asyncio client sharing round trips through ``send``."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._line: Line[_Waiter] = Line()
        self._task: asyncio.Task[None] | None = None

    async def submit(self, request: Any) -> Any:
        """``request``'s reply (or its error, raised here) from the next round trip."""
        loop = asyncio.get_running_loop()
        me = _Waiter(request, loop.create_future())
        if self._line.arrive(me):
            self._task = loop.create_task(self._run(), name="pqueue-rsmq-rounds")
        try:
            return await me.future
        except asyncio.CancelledError:
            if me in self._line.waiting:
                self._line.waiting.remove(me)
            raise

    async def _run(self) -> None:
        batch: list[_Waiter] = []
        try:
            while True:
                batch = [w for w in self._line.take() if not w.future.done()]
                if batch:
                    try:
                        outcomes = await self._send([w.request for w in batch])
                    except Exception as exc:  # noqa: BLE001 - the whole round trip failed: each caller gets it
                        outcomes = [exc] * len(batch)
                    for waiter, outcome in zip(batch, outcomes, strict=True):
                        if waiter.future.done():
                            continue
                        if isinstance(outcome, BaseException):
                            waiter.future.set_exception(outcome)
                        else:
                            waiter.future.set_result(outcome)
                batch = []
                if self._line.finish() is None:
                    return
        except BaseException:  # this task was cancelled (its loop is closing): free every waiter
            for waiter in batch + self._line.take():
                if not waiter.future.done():
                    waiter.future.cancel()
            self._line.busy = False
            raise
