"""Per-job priority within a queue (ADR 0145, docs/priority.md): a claim takes the highest
priority first, then the earliest due, then the first enqueued; every way a job goes back
in line (delay, retry, recovery, release, requeue, a parent completing, a limit group)
puts it where its priority says. Priority between queues is PriorityContract's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.limits import Limit
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import LEASE, WORKER, boom, drain_ids, put, take, take_one


async def put_all(broker: FullBroker, priorities: list[int], **options: Any) -> list[str]:
    """One batch, one job per priority (payload: its index); the ids in that order."""
    specs = [build_spec("contract:job", i, priority=p, **options) for i, p in enumerate(priorities)]
    results = await broker.enqueue(specs)
    assert all(r.created for r in results)
    return [r.id for r in results]


def ordered(ids: list[str], order: list[int]) -> list[str]:
    return [ids[i] for i in order]


@pytest.mark.asyncio
class JobPriorityContract:
    async def test_highest_priority_first_then_fifo(self, broker: FullBroker) -> None:
        ids = await put_all(broker, [0, 5, -3, 100, 5, 0, -100, -3])
        assert await drain_ids(broker, batch=3) == ordered(ids, [3, 1, 4, 0, 5, 2, 7, 6])

    async def test_fifo_among_equals_across_batches_and_single_enqueues(self, broker: FullBroker) -> None:
        first = await put(broker, priority=7)
        batch = await put_all(broker, [7, 7])
        last = await put(broker, priority=7)
        plain = await put(broker)
        assert await drain_ids(broker, batch=1) == [first, *batch, last, plain]

    async def test_the_job_shows_its_priority(self, broker: FullBroker) -> None:
        low, plain = await put(broker, priority=-42), await put(broker)
        assert (await broker.get_job(low)).priority == -42
        assert (await broker.get_job(plain)).priority == 0
        [lease, other] = await take(broker, limit=2)
        assert (lease.job.id, lease.job.priority) == (plain, 0)
        assert (other.job.id, other.job.priority) == (low, -42)
        page = await broker.list_jobs(JobStatus.ACTIVE)
        assert {job.id: job.priority for job in page.jobs} == {plain: 0, low: -42}

    async def test_waiting_jobs_are_listed_with_their_priority(self, broker: FullBroker) -> None:
        ids = await put_all(broker, [0, 9, -9])
        page = await broker.list_jobs(JobStatus.PENDING)
        assert {job.id: job.priority for job in page.jobs} == dict(zip(ids, [0, 9, -9], strict=True))
        assert (await broker.counts())["default"][JobStatus.PENDING] == 3

    async def test_a_delayed_high_priority_job_waits_then_goes_first(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        later = await put(broker, priority=50, delay=10)
        now_ids = await put_all(broker, [0, 10])
        assert [lease.job.id for lease in await take(broker, limit=1)] == [now_ids[1]]
        clock.advance(11)
        assert await drain_ids(broker, batch=1) == [later, now_ids[0]]

    async def test_delayed_jobs_are_claimed_by_priority_once_due_without_a_promote_pass(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        # A job is claimable by the next claim once due, whatever its priority: promote only
        # relabels. No promote runs here (take() would run one), so nothing waits for it.
        high = await put(broker, priority=5, delay=5)
        plain = await put(broker, delay=5)
        low = await put(broker, priority=-5, delay=5)
        pending_high, pending_low = await put_all(broker, [3, -7])
        clock.advance(6)
        claimed: list[str] = []
        while leases := await broker.claim(["default"], worker_id=WORKER, limit=1, lease_for=LEASE):
            claimed.extend(lease.job.id for lease in leases)
        assert claimed == [high, pending_high, plain, low, pending_low]

    async def test_a_retried_job_is_claimed_by_priority_once_due_without_a_promote_pass(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        high = await put(broker, priority=5)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom(), retry_in=1.0)
        plain = await put(broker)
        clock.advance(2)
        leases = await broker.claim(["default"], worker_id=WORKER, limit=2, lease_for=LEASE)
        assert [lease.job.id for lease in leases] == [high, plain]

    async def test_earlier_due_first_among_equal_priority(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        delayed = await put(broker, priority=3, delay=5)
        clock.advance(6)
        fresh = await put(broker, priority=3)
        assert await drain_ids(broker, batch=1) == [delayed, fresh]

    async def test_a_retry_goes_back_by_its_priority(self, broker: FullBroker, clock: ManualClock) -> None:
        high = await put(broker, priority=20)
        others = await put_all(broker, [0, 0, -5])
        lease = await take_one(broker)
        assert lease.job.id == high
        assert await broker.fail(lease, boom(), retry_in=1.0)
        clock.advance(2)
        assert await drain_ids(broker, batch=1) == [high, *others]

    async def test_recovery_and_release_put_jobs_back_by_priority(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        low, plain, high = await put_all(broker, [-7, 0, 8])
        held = await take(broker, limit=3)
        assert [lease.job.id for lease in held] == [high, plain, low]
        assert await broker.release([held[1]]) == [True]  # plain back in line
        clock.advance(LEASE + 1)
        report = await broker.recover()
        assert set(report.recovered) == {high, low}
        assert await drain_ids(broker, batch=1) == [high, plain, low]

    async def test_a_released_job_with_delay_comes_back_by_priority(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        high = await put(broker, priority=1)
        lease = await take_one(broker)
        assert await broker.release([lease], delay=5) == [True]
        plain = await put(broker)
        assert await drain_ids(broker) == [plain]
        clock.advance(6)
        second = await put(broker)
        assert await drain_ids(broker, batch=1) == [high, second]

    async def test_a_requeued_dead_job_keeps_its_priority(self, broker: FullBroker) -> None:
        low = await put(broker, priority=-1)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom(), retry_in=None)
        plain = await put(broker)
        assert await broker.requeue_dead(job_ids=[low]) == 1
        assert (await broker.get_job(low)).priority == -1
        assert await drain_ids(broker, batch=1) == [plain, low]

    async def test_a_released_child_lines_up_by_its_priority(self, broker: FullBroker) -> None:
        parent = build_spec("contract:job", "parent")
        child = build_spec("contract:job", "child", depends_on=[parent.id], priority=60)
        assert all(r.created for r in await broker.enqueue_flow([parent, child]))
        first = await take_one(broker)
        assert first.job.id == parent.id
        plain = await put(broker)
        assert await broker.ack([first], [json.dumps(None)]) == [True]
        assert await drain_ids(broker, batch=1) == [child.id, plain]

    async def test_limited_jobs_take_their_priority_within_their_group(self, broker: FullBroker) -> None:
        solo = Limit("solo", concurrency=1)
        levels = [0, -2, 9, 9]
        specs = [build_spec("contract:limited", i, limit=solo, priority=p) for i, p in enumerate(levels)]
        ids = [r.id for r in await broker.enqueue(specs)]
        claimed: list[str] = []
        while leases := await take(broker, limit=5):
            assert len(leases) == 1
            claimed.append(leases[0].job.id)
            assert await broker.ack(leases) == [True]
        assert claimed == ordered(ids, [2, 3, 0, 1])

    async def test_priority_does_not_cross_queues(self, broker: FullBroker) -> None:
        low_first = await put(broker, queue="first", priority=-100)
        high_second = await put(broker, queue="second", priority=100)
        assert await drain_ids(broker, ["first", "second"], batch=1) == [low_first, high_second]
