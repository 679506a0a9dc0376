"""Control: paused queues are skipped by claims and hand-offs; running jobs can be cancelled."""

from __future__ import annotations

import asyncio
import time

import pytest

from pqueue.broker import Capability, Claimer, FullBroker
from pqueue.broker_control import CANCEL_KIND
from pqueue.clock import ManualClock
from pqueue.errors import InvalidRequest, JobNotFound
from pqueue.ids import new_id
from pqueue.job import JobStatus
from pqueue.testing.contract.helpers import (
    LEASE,
    WORKER,
    OpenAnother,
    boom,
    put,
    put_many,
    status_of,
    take,
    take_one,
    waiting_claimer,
)


@pytest.mark.asyncio
class PauseContract:
    async def test_pause_stops_claims_on_that_queue_only(self, broker: FullBroker) -> None:
        await put_many(broker, 2, queue="a")
        running = await take_one(broker, ["a"])  # claimed before the pause: it may still finish
        b_ids = await put_many(broker, 2, queue="b")
        assert await broker.pause("a") is True
        assert await broker.pause("a") is False  # already paused: nothing changes
        assert await broker.paused_queues() == ["a"]
        leases = await take(broker, ["a", "b"], limit=10)
        assert sorted(lease.job.id for lease in leases) == sorted(b_ids)
        late = await put(broker, queue="a")  # enqueues go on
        assert await status_of(broker, late) == JobStatus.PENDING
        assert await take(broker, ["a"], limit=10) == []
        assert await broker.ack([running]) == [True]  # a running job of a paused queue finishes
        assert (await broker.counts())["a"][JobStatus.PENDING] == 2

    async def test_resume_restores_claims(self, broker: FullBroker) -> None:
        ids = await put_many(broker, 3, queue="a")
        await broker.pause("a")
        assert await take(broker, ["a"], limit=10) == []
        assert await broker.resume("a") is True
        assert await broker.resume("a") is False
        assert await broker.paused_queues() == []
        assert [lease.job.id for lease in await take(broker, ["a"], limit=10)] == ids

    async def test_pause_is_stored_in_the_broker(self, broker: FullBroker, open_broker: OpenAnother) -> None:
        await put(broker, queue="a")
        await broker.pause("a")
        await broker.pause("never-used")  # a queue may be paused before its first job
        await broker.close()
        reopened = await open_broker()
        assert await reopened.paused_queues() == ["a", "never-used"]
        assert await take(reopened, ["a"]) == []
        assert await reopened.resume("a") is True
        assert len(await take(reopened, ["a"])) == 1

    async def test_scheduled_jobs_that_come_due_wait_while_paused(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker, queue="a", delay=10)
        await broker.pause("a")
        clock.advance(11)
        assert await take(broker, ["a"]) == []
        await broker.resume("a")
        assert [lease.job.id for lease in await take(broker, ["a"])] == [job_id]

    async def test_an_idle_claimer_does_not_see_a_paused_queue_as_due(self, broker: FullBroker) -> None:
        await put(broker, queue="a")
        await broker.pause("a")
        started = time.monotonic()
        assert await broker.wait_for_jobs(["a"], timeout=0.3) is False
        assert time.monotonic() - started >= 0.25  # it slept: no busy loop of empty claims

    @pytest.mark.requires(Capability.WAKEUP)
    async def test_resume_wakes_an_idle_claimer(self, broker: FullBroker, open_broker: OpenAnother) -> None:
        admin = await open_broker()
        await put(broker, queue="a")
        await broker.pause("a")
        waiter = asyncio.create_task(broker.wait_for_jobs(["a"], timeout=20))
        await asyncio.sleep(0.2)
        assert not waiter.done()
        await admin.resume("a")
        assert await asyncio.wait_for(waiter, 10) is True

    async def test_a_paused_queue_hands_nothing_to_a_waiting_claimer(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        producer = await open_broker()
        waiter = await waiting_claimer(broker, Claimer(WORKER, limit=2, lease_for=LEASE))
        await producer.pause("default")
        job_id = await put(producer)
        await asyncio.wait_for(waiter, 25)
        assert await status_of(producer, job_id) == JobStatus.PENDING  # not leased to the waiter
        assert await broker.claim(["default"], worker_id=WORKER, limit=2, lease_for=LEASE) == []
        await producer.resume("default")
        assert [lease.job.id for lease in await take(broker)] == [job_id]

    async def test_bad_queue_names_are_refused(self, broker: FullBroker) -> None:
        for bad in ("", "has space", "a{b}", "x" * 300, 7):
            with pytest.raises(InvalidRequest):
                await broker.pause(bad)  # type: ignore[arg-type]
            with pytest.raises(InvalidRequest):
                await broker.resume(bad)  # type: ignore[arg-type]
        assert await broker.paused_queues() == []


@pytest.mark.asyncio
class CancelRunningContract:
    async def test_cancel_active_ends_the_job_cancelled_and_fences_its_lease(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker)
        lease = await take_one(broker)
        assert await broker.cancel_active(job_id, reason="operator said stop") is True
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.CANCELLED and job.finished_at is not None
        assert job.last_error is not None
        assert (job.last_error.kind, job.last_error.message) == (CANCEL_KIND, "operator said stop")
        # the worker's late settlements are refused: never completed, retried or dead
        assert await broker.ack([lease]) == [False]
        assert await broker.fail(lease, boom(), retry_in=0) is False
        assert await broker.fail(lease, boom(), retry_in=None) is False
        assert await broker.release([lease]) == [False]
        assert await broker.extend([lease], lease_for=LEASE) == [False]
        clock.advance(LEASE + 1)
        report = await broker.recover()
        assert job_id not in report.recovered + report.dead
        assert await status_of(broker, job_id) is JobStatus.CANCELLED
        assert await take(broker) == []
        counts = (await broker.counts())["default"]
        assert counts[JobStatus.CANCELLED] == 1 and counts[JobStatus.ACTIVE] == 0

    async def test_cancel_active_of_a_job_not_running_changes_nothing(self, broker: FullBroker) -> None:
        waiting = await put(broker)
        assert await broker.cancel_active(waiting) is False
        assert await status_of(broker, waiting) is JobStatus.PENDING
        [lease] = await take(broker)
        assert await broker.ack([lease]) == [True]
        assert await broker.cancel_active(waiting) is False
        job = await broker.get_job(waiting)
        assert job.status is JobStatus.COMPLETED and job.errors == ()
        with pytest.raises(JobNotFound):
            await broker.cancel_active(new_id())

    async def test_cancel_of_a_waiting_job_is_unchanged(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        assert await broker.cancel(job_id) is True
        assert await status_of(broker, job_id) is JobStatus.CANCELLED
        assert await broker.cancel_active(job_id) is False

    async def test_a_cancel_is_heard_by_other_brokers(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        listener = await open_broker()
        assert await listener.wait_for_cancels(0.05) == []  # starts listening
        job_id = await put(broker)
        await take_one(broker)
        assert await broker.cancel_active(job_id) is True
        heard: list[str] = []
        deadline = time.monotonic() + 10
        while job_id not in heard and time.monotonic() < deadline:
            heard += await listener.wait_for_cancels(1.0)
        assert heard == [job_id]
