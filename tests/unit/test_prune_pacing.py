"""A prune pass rests between full batches, and ends at a rest when the worker stops."""

from __future__ import annotations

import asyncio
import time

from pqueue.worker.maintenance import BATCH, Maintenance


class Backlog:
    """Only ``prune``: ``batches`` full batches of history, each taking ``seconds``."""

    def __init__(self, batches: int, seconds: float) -> None:
        self.left, self.seconds = batches, seconds
        self.calls: list[float] = []

    async def prune(self, *, limit: int = 1000) -> int:
        self.calls.append(time.monotonic())
        await asyncio.sleep(self.seconds)
        if self.left:
            self.left -= 1
            return limit
        return 0


async def test_a_backlog_is_pruned_whole_with_rests_between_batches() -> None:
    broker = Backlog(batches=3, seconds=0.02)
    jobs = Maintenance(broker, prune_duty=0.25)  # type: ignore[arg-type]
    assert await jobs.prune() == 3 * BATCH
    gaps = [b - a for a, b in zip(broker.calls, broker.calls[1:], strict=False)]
    assert len(gaps) == 3 and all(gap >= 0.02 + 0.055 for gap in gaps)  # the batch, then 3x its time


async def test_a_stop_ends_the_pass_at_its_next_rest() -> None:
    stop = asyncio.Event()
    broker = Backlog(batches=1000, seconds=0.05)  # ~3 minutes of paced deleting
    jobs = Maintenance(broker, stop=stop, prune_duty=0.25)  # type: ignore[arg-type]
    passing = asyncio.create_task(jobs.prune())
    await asyncio.sleep(0.1)
    stop.set()
    assert await asyncio.wait_for(passing, 1.0) == len(broker.calls) * BATCH
    assert len(broker.calls) <= 2
