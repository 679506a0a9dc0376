"""Cancelling a task in the middle of a broker call cancels it: the call raises
CancelledError and never quietly returns (redis-py 8 on Python 3.11 loses some
cancellations inside ``asyncio.wait_for``; the broker restores them)."""

from __future__ import annotations

import asyncio
import random

import pytest

from pqueue.broker import Claimer, FullBroker
from pqueue.clock import ManualClock
from pqueue.job import Lease
from pqueue.spec import build_spec
from tests.integration.redis.conftest import OpenRedis

pytestmark = pytest.mark.redis


async def _call_forever(broker: FullBroker, lease: Lease, which: int) -> None:
    """Call one broker method in a loop; every call goes to Redis (none returns early)."""
    calls = (
        broker.promote,
        broker.recover,
        lambda: broker.extend([lease], lease_for=30),
        lambda: broker.claim(["default"], worker_id="w", limit=1, lease_for=30),
        broker.counts,
        lambda: broker.wait_for_jobs(["default"], timeout=0.01),
        lambda: broker.wait_for_jobs(["idle"], timeout=0.01, claimer=Claimer("w", 1, 30)),  # parks
    )
    while True:
        await calls[which % len(calls)]()


@pytest.mark.asyncio
async def test_a_cancelled_call_never_returns_normally(open_redis: OpenRedis) -> None:
    broker = await open_redis(clock=ManualClock())
    await broker.enqueue([build_spec("t")])
    [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    rng = random.Random(5)
    for i in range(300):
        task = asyncio.create_task(_call_forever(broker, lease, i))
        await asyncio.sleep(rng.random() * 0.003)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=10)
        assert task in done, f"call {i % 7} swallowed its cancellation and kept running"
        assert task.cancelled()


@pytest.mark.asyncio
async def test_close_returns_while_a_wait_is_parked(open_redis: OpenRedis) -> None:
    broker = await open_redis()
    for _ in range(20):
        waiter = asyncio.create_task(broker.wait_for_jobs(["default"], timeout=5))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    await asyncio.wait_for(broker.close(), 10)
