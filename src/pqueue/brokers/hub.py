"""One notification connection per broker, shared by every part that listens (ADR 0134).

The parts of a broker that wait for pushes (idle claimers' wake-ups, hand-offs to parked
claimers, ``result()`` waiters, cancels of running jobs) each register a channel here
with a handler for its messages and a ``missed`` callback. The hub keeps one connection
(one LISTEN connection on Postgres, one pub/sub connection on Redis: a backend supplies
a :class:`Link`), listens on every registered channel, reconnects with backoff when it
drops and listens again. What happened meanwhile is not delivered, so ``missed`` is
called when the connection is lost and again once a channel is heard after a
(re)connect: a part then looks at the state it waits on for itself. An outage is logged
once through the server's :class:`~pqueue.brokers.health.ServerHealth` (the Link's
``lost`` and ``back``); attempts are logged at DEBUG.

Producers that never wait never start a hub: it connects on the first :meth:`Hub.start`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger("pqueue.broker")

MIN_BACKOFF = 0.05
MAX_BACKOFF = 0.5
"""Seconds between reconnect attempts, doubling from MIN to MAX: a hub is back within
half a second of its server, so wake-ups and hand-offs resume."""


class Session(Protocol):
    """One live notification connection, made by :meth:`Link.connect`."""

    listens_while_reading: bool
    """Whether :meth:`listen` may run while :meth:`read` waits (Redis: yes; Postgres: the
    connection has one lock, so the hub stops reading to listen)."""

    async def listen(self, channels: Sequence[str]) -> None:
        """Start listening on ``channels``; the hub's :meth:`Hub.heard` is called for each
        once the server confirms it."""

    async def unlisten(self, channels: Sequence[str]) -> None:
        """Stop listening on ``channels``."""

    async def read(self) -> None:
        """Hand every message to :meth:`Hub.deliver` until the connection fails (raises)."""

    async def close(self) -> None:
        """Close the connection (never raises)."""


class Link(Protocol):
    """What a backend gives its hub: connections, and the server's health to report to."""

    errors: tuple[type[BaseException], ...]
    """The driver's errors that mean the connection is lost (reconnect, log once)."""

    async def connect(self, hub: Hub) -> Session:
        """A new connection that reports to ``hub``."""

    def lost(self, error: BaseException) -> None:
        """The connection was lost or could not be made (logged once per outage)."""

    def back(self, sent_at: float) -> None:
        """The connection listens again (the outage's end is logged once). ``sent_at``
        (``time.monotonic()``): when the command it answered was sent; an answer to one sent
        before the outage was noticed (a stopping server's last reply) does not end it."""


def _nothing() -> None:
    return None


@dataclass(slots=True)
class _Channel:
    on_message: Callable[[str], None]
    on_missed: Callable[[], None]
    heard: bool = False
    """Confirmed on the current connection: messages sent from now on arrive."""


class Hub:
    """One connection, the channels registered on it, and the task that keeps it listening."""

    def __init__(self, link: Link, *, name: str) -> None:
        self._link = link
        self._name = name
        self._channels: dict[str, _Channel] = {}
        self._changed = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = MIN_BACKOFF
        self._failure: str | None = None  # the unexpected error last logged, until a connection serves
        self._asked_at = 0.0  # monotonic time the LISTEN/SUBSCRIBE commands were last sent
        self.connections = 0
        """Connections made so far (tests and the ADR's count)."""

    def register(
        self, channel: str, on_message: Callable[[str], None], on_missed: Callable[[], None] = _nothing
    ) -> None:
        """Deliver ``channel``'s messages to ``on_message`` (call :meth:`start` to wait until it is
        heard). ``on_missed`` runs whenever messages may have been lost (see the module)."""
        if channel in self._channels:
            raise ValueError(f"channel {channel!r} is registered already")
        self._channels[channel] = _Channel(on_message, on_missed)
        self._ready.clear()
        self._changed.set()

    def unregister(self, channel: str) -> None:
        """Stop delivering ``channel`` (and stop listening on it)."""
        if self._channels.pop(channel, None) is not None:
            self._changed.set()
            self._update_ready()

    def registered(self, channel: str) -> bool:
        return channel in self._channels

    def hears(self, channel: str) -> bool:
        """Whether ``channel`` is confirmed on the live connection."""
        entry = self._channels.get(channel)
        return entry is not None and entry.heard

    @property
    def listening(self) -> bool:
        """Whether every registered channel is heard."""
        return self._ready.is_set()

    async def start(self, timeout: float) -> bool:
        """Connect (once) and wait up to ``timeout`` s until every registered channel is
        heard; False = not yet (the hub keeps trying)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=self._name)
        if not self._ready.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(timeout, 0.0)):
                    await self._ready.wait()
        return self._ready.is_set()

    async def close(self) -> None:
        """Close the connection; every part is told it may have missed messages, so no
        waiter sleeps on a closed hub."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})  # unlike `await task`, keeps a cancel of close() itself
        self._ready.clear()
        for entry in list(self._channels.values()):
            entry.heard = False
            entry.on_missed()

    # -- called by the Session --------------------------------------------------------

    def deliver(self, channel: str, payload: str) -> None:
        """One message from the server."""
        entry = self._channels.get(channel)
        if entry is not None:
            entry.on_message(payload)

    def heard(self, channel: str) -> None:
        """The server confirmed ``channel``: what was sent before, while nobody listened
        (or since a silent reconnect of the driver), is lost, so the part looks again."""
        entry = self._channels.get(channel)
        if entry is None:
            return
        entry.heard = True
        self._link.back(self._asked_at)  # the server answers (also after the driver reconnected by itself)
        self._update_ready()
        entry.on_missed()

    # -- the connection's task -----------------------------------------------------------

    def _update_ready(self) -> None:
        if all(entry.heard for entry in self._channels.values()):
            self._ready.set()
        else:
            self._ready.clear()

    async def _run(self) -> None:
        while True:
            session: Session | None = None
            try:
                session = await self._link.connect(self)
                self.connections += 1
                await self._serve(session)
            except Exception as exc:  # noqa: BLE001 - the hub outlives every failure
                self._lost(exc)
            finally:
                if session is not None:
                    await asyncio.shield(session.close())
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)

    def _lost(self, exc: Exception) -> None:
        if isinstance(exc, self._link.errors):  # logged once per outage by the server's health
            log.debug("pqueue: %s lost its connection (%s); reconnecting", self._name, exc)
            self._link.lost(exc)
        elif self._failure != repr(exc):  # a bug, not an outage: its traceback once, not every retry
            self._failure = repr(exc)
            log.exception("pqueue: %s failed; reconnecting", self._name)
        else:
            log.debug("pqueue: %s failed again (%r); reconnecting", self._name, exc)
        self._ready.clear()
        for entry in list(self._channels.values()):
            if entry.heard:
                entry.heard = False
                entry.on_missed()

    async def _serve(self, session: Session) -> None:
        """Listen on what is registered, read, and follow registrations until the connection fails."""
        listened: set[str] = set()
        while True:
            self._changed.clear()
            self._asked_at = time.monotonic()
            listened = await self._follow(session, listened)
            self._link.back(self._asked_at)
            self._backoff = MIN_BACKOFF
            self._failure = None
            reader = asyncio.create_task(session.read(), name=f"{self._name}-read")
            try:
                while True:
                    changed = asyncio.create_task(self._changed.wait())
                    try:
                        await asyncio.wait({reader, changed}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        changed.cancel()
                    if reader.done():
                        reader.result()  # raises the connection's error
                        raise ConnectionError("the notification connection closed")
                    if not session.listens_while_reading:
                        break  # stop reading, then listen (the outer loop)
                    self._changed.clear()
                    listened = await self._follow(session, listened)
            finally:
                if not reader.done():
                    reader.cancel()
                    await asyncio.wait({reader})
            if not reader.cancelled() and reader.exception() is not None:
                reader.result()

    async def _follow(self, session: Session, listened: set[str]) -> set[str]:
        """Listen on newly registered channels, stop listening on dropped ones."""
        wanted = set(self._channels)
        if dropped := sorted(listened - wanted):
            await session.unlisten(dropped)
        if added := sorted(wanted - listened):
            await session.listen(added)
        return wanted
