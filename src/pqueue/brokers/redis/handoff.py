"""Jobs handed to this broker's parked claimers, held until each claimer's next claim.

An idle worker parks while it waits (park.lua); an enqueue then leases due jobs straight
to it and publishes the leases on the broker's hand-off channel (docs/redis.md,
"Hand-off"), so an idle worker's pick-up is one hop instead of a wake-up and a claim.
The wake-up listener puts each message in a :class:`HandoffBox`; ``claim`` takes from it
before asking Redis. Leases nobody takes soon (the claimer filled up or stopped while
still parked) are given back by the broker, unrun.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

STALE_AFTER = 2.0
"""Seconds a handed-off lease may wait for its claimer before the broker gives it back.
A claimer that is waiting collects it within milliseconds; one that is not would leave
it unrun and unextended until its lease expired."""


@dataclass(frozen=True, slots=True)
class HeldJob:
    """One leased job handed to a claimer of this broker, not yet collected."""

    queue: str
    job_id: str
    fields: list[str]
    """The job hash as claim.lua returns it (name, value, ...), lease fields last."""
    expires_at: float
    """The lease deadline, epoch seconds."""
    received: float
    """Event-loop time it arrived (for giving back stale ones)."""


def parse_handoff(data: str, received: float) -> tuple[str, list[HeldJob]]:
    """A hand-off message (JSON from pq_hand_off) -> (worker id, jobs); ValueError if malformed."""
    try:
        message = json.loads(data)
        queue, deadline_ms, worker, jobs = message["q"], int(message["d"]), message["w"], message["j"]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise ValueError(f"unreadable hand-off message ({type(exc).__name__})") from exc
    if jobs == {}:  # Lua's cjson writes an empty table as an object
        jobs = []
    if not isinstance(queue, str) or not isinstance(worker, str) or not isinstance(jobs, list):
        raise ValueError("hand-off message of the wrong shape")
    held = [HeldJob(queue, *_entry(entry), deadline_ms / 1000, received) for entry in jobs]
    return worker, held


def _entry(entry: Any) -> tuple[str, list[str]]:
    if (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], list)
        and all(isinstance(value, str) for value in entry[1])
    ):
        return entry[0], entry[1]
    raise ValueError("hand-off entry of the wrong shape")


class HandoffBox:
    """Handed-off jobs per worker id, and the events of that worker's waiters."""

    def __init__(self) -> None:
        self._held: dict[str, deque[HeldJob]] = {}
        self._watchers: dict[str, set[asyncio.Event]] = {}

    def watch(self, worker: str, event: asyncio.Event) -> None:
        """Set ``event`` whenever jobs arrive for ``worker``."""
        self._watchers.setdefault(worker, set()).add(event)

    def unwatch(self, worker: str, event: asyncio.Event) -> None:
        events = self._watchers.get(worker)
        if events is not None:
            events.discard(event)
            if not events:
                del self._watchers[worker]

    def put(self, worker: str, jobs: Sequence[HeldJob]) -> None:
        if not jobs:
            return
        self._held.setdefault(worker, deque()).extend(jobs)
        for event in self._watchers.get(worker, ()):
            event.set()

    def holds(self, worker: str) -> bool:
        return bool(self._held.get(worker))

    def take(self, worker: str, queues: Sequence[str], limit: int) -> list[HeldJob]:
        """Up to ``limit`` of ``worker``'s jobs from ``queues``, oldest first."""
        held = self._held.get(worker)
        if not held or limit <= 0:
            return []
        wanted = set(queues)
        taken: list[HeldJob] = []
        kept: deque[HeldJob] = deque()
        while held:
            job = held.popleft()
            if len(taken) < limit and job.queue in wanted:
                taken.append(job)
            else:
                kept.append(job)
        self._keep(worker, kept)
        return taken

    def take_stale(self, received_before: float) -> list[HeldJob]:
        """Every job that arrived before ``received_before`` (loop time)."""
        stale: list[HeldJob] = []
        for worker in list(self._held):
            kept: deque[HeldJob] = deque()
            for job in self._held[worker]:
                (stale if job.received < received_before else kept).append(job)
            self._keep(worker, kept)
        return stale

    def take_all(self) -> list[HeldJob]:
        return self.take_stale(float("inf"))

    def oldest(self) -> float | None:
        """Arrival time of the oldest held job, or None when the box is empty."""
        times = [jobs[0].received for jobs in self._held.values() if jobs]
        return min(times) if times else None

    def _keep(self, worker: str, jobs: deque[HeldJob]) -> None:
        if jobs:
            self._held[worker] = jobs
        else:
            self._held.pop(worker, None)
