"""Lease expiry and recovery, heartbeats, fencing, and the crash bound."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.testing.contract.helpers import OpenAnother, boom, put, put_many, status_of, take, take_one


@pytest.mark.asyncio
class RecoveryContract:
    async def test_expired_lease_returns_job_to_pending(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker)
        await take_one(broker, lease_for=30)
        clock.advance(29)
        assert (await broker.recover()).recovered == ()
        clock.advance(1.01)
        report = await broker.recover()
        assert report.recovered == (job_id,) and report.dead == ()
        assert dict(report.queues) == {"default": 1}
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.PENDING
        assert job.recoveries == 1 and job.attempt == 0  # a crash is not a handler error
        again = await take_one(broker)
        assert again.job.id == job_id and again.job.attempt == 1 and again.job.recoveries == 1

    async def test_heartbeat_prevents_recovery(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker)
        lease = await take_one(broker, lease_for=30)
        for _ in range(10):  # 200 s of work, beating every 20 s
            clock.advance(20)
            assert await broker.extend([lease], lease_for=30) == [True]
            assert (await broker.recover()).recovered == ()
        assert await status_of(broker, job_id) is JobStatus.ACTIVE
        assert await broker.ack([lease]) == [True]

    async def test_old_lease_is_fenced_after_recovery(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker, max_retries=5)
        zombie = await take_one(broker, worker="w1")
        clock.advance(31)
        assert (await broker.recover()).recovered == (job_id,)
        fresh = await take_one(broker, worker="w2")
        assert fresh.token != zombie.token
        assert await broker.ack([zombie]) == [False]
        assert await broker.fail(zombie, boom(), retry_in=5) is False
        assert await broker.extend([zombie], lease_for=30) == [False]
        assert await broker.release([zombie]) == [False]
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.ACTIVE and job.errors == ()
        assert await broker.ack([fresh]) == [True]

    @pytest.mark.parametrize("stale_first", [True, False])
    async def test_a_batch_with_a_stale_and_a_current_lease_of_one_job_credits_the_current(
        self, broker: FullBroker, clock: ManualClock, stale_first: bool
    ) -> None:
        """A worker that lost a lease and claimed the job again holds both; its heartbeat
        and its ack batch name the job twice. Only the current lease lands (the stale one
        was once credited by job id, and the current one reported lost)."""
        job_id = await put(broker)
        stale = await take_one(broker, worker="w1")
        clock.advance(31)
        assert (await broker.recover()).recovered == (job_id,)
        current = await take_one(broker, worker="w1")
        both = [stale, current] if stale_first else [current, stale]
        expected = [not stale_first, stale_first]
        assert await broker.extend(both, lease_for=30) == expected
        assert await broker.ack(both) == expected
        assert await status_of(broker, job_id) is JobStatus.COMPLETED
        other = await put(broker)
        stale = await take_one(broker, worker="w1")
        clock.advance(31)
        await broker.recover()
        current = await take_one(broker, worker="w1")
        both = [stale, current] if stale_first else [current, stale]
        assert await broker.release(both) == expected
        assert await status_of(broker, other) is JobStatus.PENDING

    async def test_fencing_also_holds_before_anyone_reclaims(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker)
        zombie = await take_one(broker)
        clock.advance(31)
        await broker.recover()
        assert await broker.ack([zombie]) == [False]
        assert await status_of(broker, job_id) is JobStatus.PENDING

    async def test_crashes_are_counted_apart_from_errors(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker, max_retries=1, max_recoveries=5)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom(), retry_in=0)
        for _ in range(3):
            await take_one(broker)
            clock.advance(31)
            assert (await broker.recover()).recovered == (job_id,)
        job = await broker.get_job(job_id)
        assert (job.attempt, job.recoveries, len(job.errors)) == (1, 3, 1)
        lease = await take_one(broker)
        assert lease.job.attempt == 2  # the one retry left is still there

    async def test_job_that_keeps_crashing_goes_dead(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker, max_recoveries=2)
        for _ in range(2):
            await take_one(broker)
            clock.advance(31)
            assert (await broker.recover()).recovered == (job_id,)
        await take_one(broker)
        clock.advance(31)
        report = await broker.recover()
        assert report.dead == (job_id,) and report.recovered == ()
        assert dict(report.queues) == {"default": 1}  # a lease expired: counted as a recovery too
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.DEAD and job.recoveries == 3
        assert job.last_error is not None and "lease expired 3 times" in job.last_error.message
        assert await take(broker) == []

    async def test_clock_jump_past_many_leases_and_run_ats(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        active = await put_many(broker, 40, queue="a")
        assert len(await take(broker, ["a"], limit=40, lease_for=30)) == 40
        scheduled = await put_many(broker, 40, queue="s", delay=600)
        retried = await put_many(broker, 10, queue="r")
        for lease in await take(broker, ["r"], limit=10):
            assert await broker.fail(lease, boom(), retry_in=300)
        clock.advance(3600)
        recovered: set[str] = set()
        per_queue: Counter[str] = Counter()
        while True:
            report = await broker.recover(limit=15)
            if not report.recovered and not report.dead:
                break
            recovered.update(report.recovered)
            per_queue.update(report.queues)
        assert recovered == set(active) and per_queue == {"a": 40}
        claimed = await take(broker, ["a", "s", "r"], limit=200)
        assert sorted(lease.job.id for lease in claimed) == sorted(active + scheduled + retried)
        assert all(lease.job.attempt == (2 if lease.job.queue == "r" else 1) for lease in claimed)

    async def test_concurrent_recoverers_move_each_job_once(
        self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother
    ) -> None:
        ids = await put_many(broker, 60)
        assert len(await take(broker, limit=60)) == 60
        clock.advance(31)
        others = [await open_broker() for _ in range(3)]
        reports = await asyncio.gather(*(b.recover(limit=1000) for b in [broker, *others] for _ in range(2)))
        moved = [job_id for report in reports for job_id in report.recovered]
        assert sorted(moved) == sorted(ids)  # each exactly once
        assert {(await broker.get_job(i)).recoveries for i in ids} == {1}
