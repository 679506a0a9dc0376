"""Idle claimers wake on enqueue instead of polling (WAKEUP), or are handed jobs (HANDOFF)."""

from __future__ import annotations

import asyncio
import time

import pytest

from pqueue.broker import Capability, Claimer, FullBroker
from pqueue.job import JobStatus
from pqueue.testing.contract.helpers import LEASE, WORKER, OpenAnother, put, status_of, take, waiting_claimer


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


@pytest.mark.asyncio
class HandoffContract:
    """A claimer waiting in ``wait_for_jobs``: backends declaring HANDOFF lease it a due job
    enqueued meanwhile (Redis also up to ``limit`` jobs of a batch; Postgres single
    enqueues only); the others only wake it, and its claim takes the job."""

    async def test_a_waiting_claimer_is_handed_a_new_job_or_woken_to_claim_it(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        producer = await open_broker()
        waiter = await waiting_claimer(broker, Claimer(WORKER, limit=2, lease_for=LEASE))
        first = await put(producer)
        assert await asyncio.wait_for(waiter, 10) is True
        second = await put(producer)  # nobody waits now: this one only waits to be claimed
        handed = Capability.HANDOFF in broker.capabilities
        job = await producer.get_job(first)  # leased by the enqueue, before any claim (HANDOFF)
        assert (job.status, job.attempt) == ((JobStatus.ACTIVE, 1) if handed else (JobStatus.PENDING, 0))
        assert await status_of(producer, second) == JobStatus.PENDING
        expected = [first, second]
        if handed:  # the handed-off job is not claimable by anyone else
            other = await producer.claim(["default"], worker_id="someone-else", limit=10, lease_for=LEASE)
            assert [lease.job.id for lease in other] == [second]
            expected = [first]
        leases = await broker.claim(["default"], worker_id=WORKER, limit=2, lease_for=LEASE)
        assert [lease.job.id for lease in leases] == expected
        assert all(await broker.ack(leases))
        assert await status_of(producer, first) == JobStatus.COMPLETED

    async def test_jobs_never_collected_by_a_waiting_claimer_are_pending_after_its_close(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        producer = await open_broker()
        waiter = await waiting_claimer(broker, Claimer(WORKER, limit=5, lease_for=LEASE))
        job_id = await put(producer)
        assert await asyncio.wait_for(waiter, 10) is True
        await broker.close()  # without claiming: anything handed off is given back unrun
        job = await producer.get_job(job_id)
        assert (job.status, job.attempt) == (JobStatus.PENDING, 0)
        assert [lease.job.id for lease in await take(producer)] == [job_id]

    async def test_a_claimer_that_waits_with_work_due_is_not_handed_anything(
        self, broker: FullBroker
    ) -> None:
        job_id = await put(broker)
        claimer = Claimer(WORKER, limit=5, lease_for=LEASE)
        assert await broker.wait_for_jobs(["default"], timeout=20, claimer=claimer) is True
        assert await status_of(broker, job_id) == JobStatus.PENDING  # the claim that follows takes it
        assert [lease.job.id for lease in await take(broker)] == [job_id]
