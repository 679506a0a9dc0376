"""Jobs an enqueue leased straight to a parked claimer of this broker, held for its next claim.

Brokers with :attr:`~pqueue.broker.Capability.HANDOFF` (Redis: ADR 0051, Postgres: ADR
0054) let an idle worker park while it waits; an enqueue then leases a due job to it and
sends the lease on the broker's own channel, so the pick-up is one hop instead of a
wake-up and a claim. The broker's listener puts each received lease in a
:class:`HandoffHold`; ``claim`` takes from it before asking the server. What nobody
collects soon (the claimer filled up or stopped while still parked) is given back unrun.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

from pqueue.job import Lease

log = logging.getLogger("pqueue.handoff")

STALE_AFTER = 2.0
"""Seconds a handed-off lease may wait for its claimer before the broker gives it back.
A claimer that is waiting collects it within milliseconds; one that is not would leave
it unrun and unextended until its lease expired."""


class Held(Protocol):
    """What the box needs of a held item: its queue and when it arrived."""

    @property
    def queue(self) -> str: ...

    @property
    def received(self) -> float:
        """Event-loop time it arrived (for giving back stale ones)."""
        ...


H = TypeVar("H", bound=Held)


class HandoffBox(Generic[H]):
    """Handed-off items per worker id, and the events of that worker's waiters."""

    def __init__(self) -> None:
        self._held: dict[str, deque[H]] = {}
        self._watchers: dict[str, set[asyncio.Event]] = {}

    def watch(self, worker: str, event: asyncio.Event) -> None:
        """Set ``event`` whenever items arrive for ``worker``."""
        self._watchers.setdefault(worker, set()).add(event)

    def unwatch(self, worker: str, event: asyncio.Event) -> None:
        events = self._watchers.get(worker)
        if events is not None:
            events.discard(event)
            if not events:
                del self._watchers[worker]

    def put(self, worker: str, items: Sequence[H]) -> None:
        if not items:
            return
        self._held.setdefault(worker, deque()).extend(items)
        for event in self._watchers.get(worker, ()):
            event.set()

    def holds(self, worker: str) -> bool:
        return bool(self._held.get(worker))

    def take(self, worker: str, queues: Sequence[str], limit: int) -> list[H]:
        """Up to ``limit`` of ``worker``'s items from ``queues``, oldest first."""
        held = self._held.get(worker)
        if not held or limit <= 0:
            return []
        wanted = set(queues)
        taken: list[H] = []
        kept: deque[H] = deque()
        while held:
            item = held.popleft()
            if len(taken) < limit and item.queue in wanted:
                taken.append(item)
            else:
                kept.append(item)
        self._keep(worker, kept)
        return taken

    def take_stale(self, received_before: float) -> list[H]:
        """Every item that arrived before ``received_before`` (loop time)."""
        stale: list[H] = []
        for worker in list(self._held):
            kept: deque[H] = deque()
            for item in self._held[worker]:
                (stale if item.received < received_before else kept).append(item)
            self._keep(worker, kept)
        return stale

    def take_all(self) -> list[H]:
        return self.take_stale(float("inf"))

    def oldest(self) -> float | None:
        """Arrival time of the oldest held item, or None when the box is empty."""
        times = [items[0].received for items in self._held.values() if items]
        return min(times) if times else None

    def _keep(self, worker: str, items: deque[H]) -> None:
        if items:
            self._held[worker] = items
        else:
            self._held.pop(worker, None)


ToLeases = Callable[[Sequence[H]], Awaitable[list[Lease]]]
"""Decodes held items into leases (dead-lettering undecodable ones)."""
Release = Callable[[Sequence[Lease]], Awaitable[object]]
"""The broker's ``release``: hands leased jobs back unrun."""


class HandoffHold(Generic[H]):
    """A :class:`HandoffBox` and the sweeper that gives back what waits over STALE_AFTER."""

    def __init__(self, to_leases: ToLeases[H], release: Release, *, name: str) -> None:
        self.box: HandoffBox[H] = HandoffBox()
        self._to_leases = to_leases
        self._release = release
        self._name = name
        self._sweeper: asyncio.Task[None] | None = None

    def put(self, worker: str, items: Sequence[H]) -> None:
        """Hold ``items`` for ``worker`` (call on the event loop)."""
        self.box.put(worker, items)
        if items and (self._sweeper is None or self._sweeper.done()):
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name=self._name)

    async def close(self) -> None:
        """Stop sweeping and give back everything still held."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            await asyncio.wait({sweeper})
        await self._give_back(self.box.take_all())

    async def _give_back(self, held: Sequence[H]) -> None:
        """Release held items unrun; if that fails, lease expiry recovers them."""
        if not held:
            return
        try:
            await self._release(await self._to_leases(held))
        except Exception as exc:  # noqa: BLE001 - the sweeper and close() must go on
            log.warning("pqueue: could not give back %d handed-off job(s) (%s)", len(held), exc)

    async def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        while (oldest := self.box.oldest()) is not None:
            await asyncio.sleep(max(0.0, oldest + STALE_AFTER - loop.time()))
            await self._give_back(self.box.take_stale(loop.time() - STALE_AFTER + 0.001))


class FlushMarkers:
    """Markers a broker sends down its own hand-off channel at close. A channel delivers in
    order, so once a marker arrives, every hand-off sent before it has arrived too."""

    PREFIX = "flush "
    """Starts every marker; hand-off messages are JSON objects, so never do."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Event] = {}

    @contextlib.contextmanager
    def new(self) -> Iterator[tuple[str, asyncio.Event]]:
        """A fresh marker to send, and the event its arrival sets; forgotten on exit."""
        marker = self.PREFIX + secrets.token_hex(8)
        self._waiting[marker] = arrived = asyncio.Event()
        try:
            yield marker, arrived
        finally:
            del self._waiting[marker]

    def arrived(self, payload: str) -> bool:
        """Whether ``payload`` is a marker (ours or a stale one) rather than a hand-off."""
        if not payload.startswith(self.PREFIX):
            return False
        waiting = self._waiting.get(payload)
        if waiting is not None:
            waiting.set()
        return True
