"""A scheduled job is never claimable before its run_at: on the server's clock (whatever
the host clock says) and, exhaustively, on an injected clock."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from pqueue.clock import ManualClock, to_epoch
from pqueue.job import Lease
from pqueue.spec import build_spec
from tests.integration.redis.conftest import OpenRedis

pytestmark = pytest.mark.redis


@pytest.mark.asyncio
async def test_never_claimable_early_on_an_injected_clock(open_redis: OpenRedis) -> None:
    clock = ManualClock()
    broker = await open_redis(clock=clock)
    rng = random.Random(11)
    delays = [rng.randint(0, 5000) / 1000 for _ in range(300)]  # 0..5 s in ms steps
    await broker.enqueue([build_spec("t", i, delay=d) for i, d in enumerate(delays)])
    await broker.enqueue([build_spec("t", "r", queue="r") for _ in range(20)])
    for lease in await broker.claim(["r"], worker_id="w", limit=20, lease_for=600):
        assert await broker.fail(lease, _boom(), retry_in=rng.randint(0, 5000) / 1000)
    claimed: list[Lease] = []
    while len(claimed) < 320:
        clock.advance(rng.randint(0, 40) / 1000)
        if rng.random() < 0.5:
            await broker.promote()
        now_ms = round(clock.now() * 1000)  # the broker reads its clock in whole milliseconds
        for lease in await broker.claim(["default", "r"], worker_id="w", limit=50, lease_for=600):
            assert round(to_epoch(lease.job.run_at) * 1000) <= now_ms, (lease.job.run_at, now_ms)
            claimed.append(lease)
    assert len({lease.job.id for lease in claimed}) == 320


@pytest.mark.asyncio
async def test_never_claimable_early_on_the_server_clock(
    open_redis: OpenRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host clock runs a day ahead; the server's clock alone decides when a job is due."""
    broker = await open_redis()
    skew = 86_400.0
    real_time, real_time_ns = time.time, time.time_ns
    monkeypatch.setattr(time, "time", lambda: real_time() + skew)
    monkeypatch.setattr(time, "time_ns", lambda: real_time_ns() + int(skew * 1e9))
    ids = {r.id for r in await broker.enqueue([build_spec("t", i, delay=0.05 * i) for i in range(1, 7)])}
    assert await broker.claim(["default"], worker_id="w", limit=10, lease_for=30) == []
    claimed: list[Lease] = []
    while len(claimed) < len(ids):
        await asyncio.sleep(0.01)
        claimed += await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
    for lease in claimed:
        assert lease.job.started_at is not None and lease.job.started_at >= lease.job.run_at
        assert to_epoch(lease.job.run_at) < real_time() + 60  # run_at is on the server clock
    assert {lease.job.id for lease in claimed} == ids


def _boom() -> object:
    from pqueue.job import ErrorInfo

    return ErrorInfo("E", "boom")
