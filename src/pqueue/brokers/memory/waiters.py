"""Idle claimers parked in ``wait_for_jobs``, woken from any thread when work arrives."""

from __future__ import annotations

import asyncio
import threading


class Waiters:
    """Idle claimers parked in ``wait_for_jobs``, woken from any thread by an enqueue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Event, frozenset[str]]] = []

    def add(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event, queues: frozenset[str]) -> None:
        with self._lock:
            self._waiting.append((loop, event, queues))

    def remove(self, event: asyncio.Event) -> None:
        with self._lock:
            self._waiting = [w for w in self._waiting if w[1] is not event]

    def wake(self, queues: set[str]) -> None:
        if not queues:
            return
        with self._lock:
            targets = [(loop, ev) for loop, ev, qs in self._waiting if qs & queues]
        for loop, event in targets:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)


_waiters: dict[int, Waiters] = {}
