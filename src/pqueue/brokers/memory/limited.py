"""The memory backend's limit groups: per (queue, limit key) a line of waiting jobs, the
count of active ones and a token bucket (ADR 0110). Used only under the store's lock."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from pqueue.brokers.memory.records import Record
from pqueue.job import JobStatus
from pqueue.limits import Limit, LimitState, refill

Entry = tuple[int, float, int, str]  # (-priority, run_at, order, job id), as the store's lines
Live = Callable[[Entry], Record | None]
"""The store's check of a line entry: its record if still waiting there, else None."""


@dataclass(slots=True)
class Group:
    """One limit group's state."""

    queue: str
    key: str
    limit: Limit
    """The parameters of the group's most recently seen job (shown by stats)."""
    line: list[Entry] = field(default_factory=list)
    active: int = 0
    tokens: float = -1.0  # -1: not used yet, a full bucket
    refilled_at: float = 0.0

    def allowance(self, limit: Limit, now: float) -> int:
        """How many jobs under ``limit`` may start now."""
        room = math.inf if limit.concurrency is None else limit.concurrency - self.active
        if limit.rate is not None:
            room = min(room, math.floor(self._tokens(limit, now)))
        return max(0, int(min(room, 1 << 30)))

    def take(self, limit: Limit, now: float) -> None:
        """Spend one token (when ``limit`` has a rate)."""
        if limit.rate is not None:
            self.tokens, self.refilled_at = self._tokens(limit, now) - 1.0, now

    def next_token_at(self, limit: Limit, now: float) -> float | None:
        """When the bucket next holds a whole token; None without a rate or when it does now."""
        if limit.rate is None:
            return None
        tokens = self._tokens(limit, now)
        return None if tokens >= 1.0 else now + (1.0 - tokens) / limit.rate

    def _tokens(self, limit: Limit, now: float) -> float:
        if self.tokens < 0:
            return limit.burst
        return refill(self.tokens, self.refilled_at, now, limit)


class LimitGroups:
    """Every limit group of a store."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, Group]] = {}

    def group(self, rec: Record) -> Group:
        assert rec.limit is not None
        groups = self._groups.setdefault(rec.queue, {})
        group = groups.get(rec.limit.key)
        if group is None:
            group = groups[rec.limit.key] = Group(rec.queue, rec.limit.key, rec.limit)
        return group

    def note(self, rec: Record) -> Group:
        """The group of a limited job entering it (due or not): made if new, with its limit."""
        group = self.group(rec)
        group.limit = rec.limit or group.limit
        return group

    def line_up(self, rec: Record, entry: Entry) -> None:
        """Put a due job in its group's line."""
        heapq.heappush(self.note(rec).line, entry)

    def status_changed(self, rec: Record, old: JobStatus, new: JobStatus) -> None:
        """Keep the group's active count: every way out of ``active`` gives the slot back."""
        if old is JobStatus.ACTIVE and new is not JobStatus.ACTIVE:
            self.group(rec).active -= 1
        elif new is JobStatus.ACTIVE and old is not JobStatus.ACTIVE:
            self.group(rec).active += 1

    def admit(self, queue: str, now: float, want: int, live: Live, start: Callable[[Record], object]) -> int:
        """Start (``start(rec)``, which makes it active) up to ``want`` due jobs of ``queue``'s
        groups that their limits let start now, the group whose head comes first in line
        (priority, then due time) first, spending their tokens. Returns how many started."""
        taken = 0
        for group in sorted(self._heads(queue, now, live), key=lambda g: g.line[0]):
            while taken < want and group.line:
                rec = live(group.line[0])
                if rec is None:
                    heapq.heappop(group.line)
                    continue
                limit = rec.limit or group.limit
                if group.allowance(limit, now) <= 0:
                    break
                heapq.heappop(group.line)
                group.take(limit, now)
                start(rec)
                taken += 1
            if taken >= want:
                break
        return taken

    def _heads(self, queue: str, now: float, live: Live) -> Iterator[Group]:
        """Groups of ``queue`` with a due job (stale heads dropped; a line holds due jobs only)."""
        for group in self._groups.get(queue, {}).values():
            line = group.line
            while line and live(line[0]) is None:
                heapq.heappop(line)
            if line:
                yield group

    def ready(self, queues: Iterable[str], now: float, live: Live) -> bool:
        """Whether a due limited job of ``queues`` could start now."""
        for queue in queues:
            for group in self._heads(queue, now, live):
                rec = live(group.line[0])
                if rec is not None and group.allowance(rec.limit or group.limit, now) > 0:
                    return True
        return False

    def next_token_at(self, queues: Iterable[str], now: float, live: Live) -> float | None:
        """The earliest time a group of ``queues`` held back by its rate gets a token."""
        times: list[float] = []
        for queue in queues:
            for group in self._heads(queue, now, live):
                rec = live(group.line[0])
                limit = group.limit if rec is None or rec.limit is None else rec.limit
                if limit.concurrency is None or group.active < limit.concurrency:
                    at = group.next_token_at(limit, now)
                    if at is not None:
                        times.append(at)
        return min(times, default=None)

    def states(self, now: float, waiting: Callable[[str, str], int]) -> list[LimitState]:
        """Every group with a waiting or active job, for stats (docs/limits.md, ADR 0140); a
        group without one is kept, bucket and all, but not listed."""
        out: list[LimitState] = []
        for queue in sorted(self._groups):
            for key, group in sorted(self._groups[queue].items()):
                waits = waiting(queue, key)
                if not waits and not group.active:
                    continue
                limit = group.limit
                tokens = None if limit.rate is None else group._tokens(limit, now)
                out.append(LimitState(queue, key, group.active, waits, limit.concurrency, limit.rate, tokens))
        return out
