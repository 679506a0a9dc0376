"""Idle claimers wake on enqueue instead of polling (backends declaring WAKEUP)."""

from __future__ import annotations

import asyncio
import time

import pytest

from pqueue.broker import Capability, FullBroker
from pqueue.testing.contract.helpers import OpenAnother, put, take


@pytest.mark.asyncio
class WakeupContract:
    @pytest.mark.requires(Capability.WAKEUP)
    async def test_idle_claimer_wakes_on_enqueue_from_another_broker(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        producer = await open_broker()
        waiter = asyncio.create_task(broker.wait_for_jobs(["default"], timeout=20))
        await asyncio.sleep(0.2)  # let the waiter park
        assert not waiter.done()
        started = time.monotonic()
        job_id = await put(producer)
        assert await asyncio.wait_for(waiter, 10) is True
        # generous bound: proves a push wake-up, not a poll of the 20 s timeout
        assert time.monotonic() - started < 5
        assert [lease.job.id for lease in await take(broker)] == [job_id]

    async def test_wait_returns_at_once_when_work_is_due(self, broker: FullBroker) -> None:
        await put(broker)
        assert await asyncio.wait_for(broker.wait_for_jobs(["default"], timeout=20), 10) is True

    async def test_wait_times_out_when_nothing_comes(self, broker: FullBroker) -> None:
        assert await broker.wait_for_jobs(["default"], timeout=0.05) is False
