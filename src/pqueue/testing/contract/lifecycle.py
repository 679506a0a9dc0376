"""Ack, fail, retry scheduling, the dead-letter queue, release and retention."""

from __future__ import annotations

import json

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import MAX_ERROR_HISTORY, ErrorInfo, JobStatus
from pqueue.outcome import next_retry_in
from pqueue.retry import ExponentialBackoff
from pqueue.testing.contract.helpers import boom, put, status_of, take, take_one, total


@pytest.mark.asyncio
class LifecycleContract:
    async def test_claim_makes_job_active_with_a_lease(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker)
        lease = await take_one(broker, lease_for=30)
        assert lease.job.id == job_id and lease.job.status is JobStatus.ACTIVE
        assert lease.job.attempt == 1 and lease.token
        assert abs(lease.expires_at - (clock.now() + 30)) < 0.002
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.ACTIVE and job.started_at is not None
        assert await take(broker) == []

    async def test_ack_completes_and_keeps_the_result(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker)
        lease = await take_one(broker)
        clock.advance(2)
        assert await broker.ack([lease], [json.dumps({"sent": True})]) == [True]
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.COMPLETED and job.result == {"sent": True}
        assert job.finished_at is not None and job.attempt == 1
        assert await broker.ack([lease]) == [False]  # a second ack changes nothing

    async def test_ack_many_in_one_call(self, broker: FullBroker) -> None:
        ids = [await put(broker, payload=i) for i in range(5)]
        leases = await take(broker, limit=5)
        assert await broker.ack(leases) == [True] * 5
        assert {(await broker.get_job(i)).status for i in ids} == {JobStatus.COMPLETED}

    async def test_fail_with_retry_schedules_the_next_attempt(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker, max_retries=3)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom("smtp down"), retry_in=10) is True
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.RETRY and job.attempt == 1
        assert job.last_error is not None and job.last_error.message == "smtp down"
        assert job.last_error.kind == "RuntimeError" and "Traceback" in job.last_error.traceback
        assert job.last_error.attempt == 1
        clock.advance(9.99)
        assert await take(broker) == []
        clock.advance(0.01)
        again = await take_one(broker)
        assert again.job.id == job_id and again.job.attempt == 2 and again.token != lease.token

    async def test_dead_letter_after_max_retries_with_last_error(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        policy = ExponentialBackoff(base=2, factor=2, jitter=False)
        job_id = await put(broker, max_retries=3)
        delays = []
        for attempt in range(1, 5):
            lease = await take_one(broker)
            assert lease.job.attempt == attempt
            delay = next_retry_in(lease.job, RuntimeError(f"fail {attempt}"), policy)
            assert await broker.fail(lease, boom(f"fail {attempt}"), retry_in=delay)
            if delay is not None:
                delays.append(delay)
                clock.advance(delay)
        assert delays == [2, 4, 8]
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.DEAD and job.attempt == 4 and job.finished_at is not None
        assert job.last_error is not None and job.last_error.message == "fail 4"
        assert [e.message for e in job.errors] == [f"fail {i}" for i in range(1, 5)]
        assert await take(broker) == []
        page = await broker.list_jobs(JobStatus.DEAD)
        assert [j.id for j in page.jobs] == [job_id]

    async def test_fail_without_retry_is_dead_at_once(self, broker: FullBroker) -> None:
        job_id = await put(broker, max_retries=10)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom("bad input"), retry_in=None)
        assert await status_of(broker, job_id) is JobStatus.DEAD

    async def test_error_history_is_bounded(self, broker: FullBroker) -> None:
        job_id = await put(broker, max_retries=100)
        for i in range(MAX_ERROR_HISTORY + 3):
            lease = await take_one(broker)
            assert await broker.fail(lease, boom(f"e{i}"), retry_in=0)
        job = await broker.get_job(job_id)
        assert len(job.errors) == MAX_ERROR_HISTORY
        assert job.errors[-1].message == f"e{MAX_ERROR_HISTORY + 2}" and job.errors[0].message == "e3"

    async def test_release_hands_back_without_burning_an_attempt(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        first = await put(broker, payload=1)
        second = await put(broker, payload=2)
        lease = await take_one(broker)
        assert lease.job.id == first
        assert await broker.release([lease]) == [True]
        assert await status_of(broker, first) is JobStatus.PENDING
        again = await take_one(broker)
        assert again.job.id == first and again.job.attempt == 1 and again.job.recoveries == 0
        assert await broker.release([lease]) == [False]  # the old lease is gone
        assert await broker.release([again], delay=60) == [True]
        assert await status_of(broker, first) is JobStatus.SCHEDULED
        assert (await take_one(broker)).job.id == second

    async def test_release_can_leave_a_note_in_the_error_history(self, broker: FullBroker) -> None:
        job_id = await put(broker, max_retries=0)
        lease = await take_one(broker)
        note = ErrorInfo("UnknownJobType", "no handler for job type 'x'")
        assert await broker.release([lease], delay=30, note=note) == [True]
        job = await broker.get_job(job_id)
        assert job.status is JobStatus.SCHEDULED and job.attempt == 0
        assert job.last_error is not None and job.last_error.kind == "UnknownJobType"
        assert job.last_error.message == "no handler for job type 'x'" and job.last_error.attempt == 1

    async def test_completed_jobs_are_kept_then_pruned(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker)
        assert await broker.ack([await take_one(broker)]) == [True]
        clock.advance(60)
        assert await broker.prune() == 0
        assert (await broker.get_job(job_id)).status is JobStatus.COMPLETED
        clock.advance(366 * 24 * 3600)
        assert await broker.prune() == 1
        assert await total(broker, [JobStatus.COMPLETED]) == 0
