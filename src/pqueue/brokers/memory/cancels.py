"""The memory backend's push channel for cancels: each listening broker has an inbox that
``cancel_active`` fills from any thread (the worker's side thread listens on its own loop)."""

from __future__ import annotations

import asyncio
import threading
from collections import deque


class CancelInbox:
    """Job ids cancelled while running, waiting for one broker's ``wait_for_cancels``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ids: deque[str] = deque()
        self._event = asyncio.Event()

    def push(self, job_id: str) -> None:
        """Deliver ``job_id`` (from any thread)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._arrive, job_id)

    def _arrive(self, job_id: str) -> None:
        self._ids.append(job_id)
        self._event.set()

    async def take(self, timeout: float) -> list[str]:
        """Every id delivered so far, waiting up to ``timeout`` seconds for the first."""
        if not self._ids:
            try:
                async with asyncio.timeout(max(0.0, timeout)):
                    await self._event.wait()
            except TimeoutError:
                return []
        self._event.clear()
        ids = list(self._ids)
        self._ids.clear()
        return ids


class CancelInboxes:
    """Every listening broker's inbox on one store."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inboxes: set[CancelInbox] = set()

    def add(self, inbox: CancelInbox) -> None:
        with self._lock:
            self._inboxes.add(inbox)

    def remove(self, inbox: CancelInbox) -> None:
        with self._lock:
            self._inboxes.discard(inbox)

    def publish(self, job_id: str) -> None:
        with self._lock:
            inboxes = list(self._inboxes)
        for inbox in inboxes:
            inbox.push(job_id)
