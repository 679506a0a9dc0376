"""Housekeeping every worker runs: recover expired leases, promote due jobs, prune old ones.

Each pass is one atomic broker operation, so every worker can run them at once without
moving a job twice; idle passes cost one cheap call each. Pruning a backlog of history
rests between its batches, so it never crowds out claims and acks (ADR 0127).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from pqueue.broker import FullBroker, RecoveryReport

log = logging.getLogger("pqueue.worker")

BATCH = 1000

PRUNE_DUTY = 0.25
"""The share of a prune pass spent deleting: after each full batch it rests three times as
long as the batch took. A backlog drains steadily (a quarter of a flat-out loop's rate per
worker) instead of keeping the server busy with deletes while jobs wait for claims and acks."""


class Maintenance:
    """The three passes; ``on_work`` is called when jobs became claimable (to wake claimers),
    ``on_recovered`` with each recovery pass that took jobs back (for middleware)."""

    def __init__(
        self,
        broker: FullBroker,
        *,
        on_work: Callable[[], None] = lambda: None,
        on_recovered: Callable[[RecoveryReport], None] = lambda report: None,
        stop: asyncio.Event | None = None,
        prune_duty: float = PRUNE_DUTY,
    ) -> None:
        self.broker = broker
        self.on_work = on_work
        self.on_recovered = on_recovered
        self.stop = stop or asyncio.Event()
        """Set when the worker stops: a prune pass ends at its next rest."""
        self.prune_duty = prune_duty

    async def promote(self) -> int:
        """Mark due scheduled/retry jobs pending (batches until none is left)."""
        total = 0
        while True:
            moved = await self.broker.promote(limit=BATCH)
            total += moved
            if moved < BATCH:
                break
        if total:
            self.on_work()
        return total

    async def recover(self) -> int:
        """Put jobs whose lease expired back to pending (or dead past max_recoveries)."""
        recovered = dead = 0
        while True:
            report = await self.broker.recover(limit=BATCH)
            recovered += len(report.recovered)
            dead += len(report.dead)
            if report.recovered or report.dead:
                self.on_recovered(report)
            if report.dead:
                log.error(
                    "%d job(s) dead after too many lost leases: %s",
                    len(report.dead),
                    ", ".join(report.dead[:5]),
                )
            if len(report.recovered) + len(report.dead) < BATCH:
                break
        if recovered:
            log.warning("recovered %d job(s) whose worker stopped beating", recovered)
            self.on_work()
        return recovered + dead

    async def prune(self) -> int:
        """Delete completed/cancelled jobs older than the broker's retention, resting
        between full batches (``prune_duty``) until none is left or the worker stops."""
        loop = asyncio.get_running_loop()
        total = 0
        while True:
            started = loop.time()
            removed = await self.broker.prune(limit=BATCH)
            total += removed
            if removed < BATCH or self.stop.is_set():
                return total
            rest = (loop.time() - started) * (1 / self.prune_duty - 1)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), rest)
