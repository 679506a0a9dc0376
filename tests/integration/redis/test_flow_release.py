"""Redis releases dependants in two steps across queues (ADR 0116): a crash between them
is finished by the recover sweep, and repeating a step doubles nothing."""

from __future__ import annotations

import pytest

from pqueue.brokers.redis import calls
from pqueue.brokers.redis.broker import RedisBroker
from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from tests.integration.redis.conftest import OpenRedis

pytestmark = pytest.mark.redis


@pytest.mark.asyncio
async def test_a_release_cut_short_by_a_crash_is_finished_by_recover(open_redis: OpenRedis) -> None:
    clock = ManualClock(1_800_000_000.0)
    broker = await open_redis(clock=clock)
    assert isinstance(broker, RedisBroker)
    parent = build_spec("t", 1, queue="up")
    child = build_spec("t", 2, queue="down", depends_on=[parent.id])
    grandchild = build_spec("t", 3, queue="up", depends_on=[child.id])
    await broker.enqueue_flow([parent, child, grandchild])
    [lease] = await broker.claim(["up"], worker_id="w", limit=1, lease_for=30)
    # Step one only, as a process killed right after the ack script would leave it.
    call = calls.ack(broker.queue("up"), broker.now_arg(), 0, [lease], ['"p"'], results_channel="r")
    assert await broker.run(call) == [2]
    assert (await broker.get_job(child.id)).status is JobStatus.WAITING
    await broker.recover()
    assert (await broker.get_job(child.id)).status is JobStatus.WAITING  # younger than the grace
    clock.advance(6)
    await broker.recover()  # the sweep runs step two
    job = await broker.get_job(child.id)
    assert job.status is JobStatus.PENDING and job.parent_results == {parent.id: "p"}
    await broker.settle("up", [parent.id])  # a repeat of step two changes nothing
    assert await broker.claim(["down"], worker_id="w", limit=5, lease_for=30) != []
    assert await broker.claim(["down"], worker_id="w", limit=5, lease_for=30) == []
    assert (await broker.get_job(grandchild.id)).status is JobStatus.WAITING
