"""``Stats`` as the clients fill it: counts, workers, and how each queue moves."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from pqueue import AsyncClient, Client
from pqueue.brokers.memory.broker import drop_store
from pqueue.clock import ManualClock
from pqueue.job import JobStatus


@pytest.fixture
def dsn() -> Iterator[str]:
    name = f"stats-{uuid.uuid4().hex[:8]}"
    yield f"memory://{name}"
    drop_store(name)


async def test_async_client_fills_oldest_pending_age_and_done_per_second(dsn: str) -> None:
    clock = ManualClock(1_000.0)
    async with AsyncClient(dsn, clock=clock) as client:
        await client.enqueue("a:job", queue="a")
        await client.enqueue("b:job", queue="b")
        clock.advance(12)
        broker = client.broker
        for _ in range(3):
            [lease] = await broker.claim(["b"], worker_id="w", limit=1, lease_for=30)
            assert await broker.ack([lease]) == [True]
            await client.enqueue("b:job", queue="b")
        stats = await client.stats()
    assert stats.oldest_pending_age == {"a": pytest.approx(12), "b": 0.0}
    assert stats.done_per_second == {"a": 0.0, "b": pytest.approx(3 / 60)}
    assert stats.total(JobStatus.COMPLETED) == 3 and stats.total(JobStatus.PENDING, "a") == 1


def test_sync_client_stats_are_the_async_ones(dsn: str) -> None:
    clock = ManualClock(1_000.0)
    with Client(dsn, clock=clock) as client:
        client.enqueue("a:job", queue="a")
        clock.advance(4)
        stats = client.stats()
    assert stats.oldest_pending_age == {"a": pytest.approx(4)}
    assert stats.done_per_second == {"a": 0.0}
