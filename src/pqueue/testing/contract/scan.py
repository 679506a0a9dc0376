"""Bulk reads: ``Inspector.scan_jobs`` returns every matching job once, live and finished."""

from __future__ import annotations

from collections import Counter

import pytest

from pqueue.broker import FullBroker, JobScan
from pqueue.clock import ManualClock
from pqueue.errors import InvalidRequest
from pqueue.job import Job, JobStatus
from pqueue.testing.contract.helpers import boom, put_many, take


async def _scan(broker: FullBroker, scan: JobScan) -> list[Job]:
    jobs: list[Job] = []
    async for page in broker.scan_jobs(scan):
        assert 0 < len(page) <= scan.page_size
        jobs.extend(page)
    return jobs


async def _history(broker: FullBroker, clock: ManualClock) -> dict[str, JobStatus]:
    """Jobs in every status but cancelled, across two queues; returns id -> status."""
    expected: dict[str, JobStatus] = {}
    for job_id in await put_many(broker, 7, queue="a"):
        expected[job_id] = JobStatus.PENDING
    for job_id in await put_many(broker, 2, queue="a", delay=3600):
        expected[job_id] = JobStatus.SCHEDULED
    for job_id in await put_many(broker, 6, queue="b", max_retries=0):
        expected[job_id] = JobStatus.PENDING
    clock.advance(5)
    leases = await take(broker, ["b"], limit=6)
    assert len(leases) == 6
    assert await broker.ack(leases[:3]) == [True] * 3
    for lease in leases[3:5]:
        assert await broker.fail(lease, boom("poison"), retry_in=None)
    expected.update({lease.job.id: JobStatus.COMPLETED for lease in leases[:3]})
    expected.update({lease.job.id: JobStatus.DEAD for lease in leases[3:5]})
    expected[leases[5].job.id] = JobStatus.ACTIVE
    return expected


@pytest.mark.asyncio
class ScanContract:
    async def test_scan_returns_every_job_once_in_pages(self, broker: FullBroker, clock: ManualClock) -> None:
        expected = await _history(broker, clock)
        jobs = await _scan(broker, JobScan(page_size=4))
        assert Counter(job.id for job in jobs) == Counter(list(expected))
        assert {job.id: job.status for job in jobs} == expected
        finished = [job for job in jobs if job.status in (JobStatus.COMPLETED, JobStatus.DEAD)]
        assert all(job.started_at is not None and job.finished_at is not None for job in finished)
        dead = [job for job in jobs if job.status is JobStatus.DEAD]
        assert all(job.attempt == 1 and job.last_error is not None for job in dead)
        assert {job.last_error.message for job in dead if job.last_error} == {"poison"}

    async def test_scan_filters_by_status_and_queue(self, broker: FullBroker, clock: ManualClock) -> None:
        expected = await _history(broker, clock)
        wanted = (JobStatus.COMPLETED, JobStatus.DEAD)
        jobs = await _scan(broker, JobScan(statuses=wanted))
        assert sorted(job.id for job in jobs) == sorted(i for i, s in expected.items() if s in wanted)
        in_a = await _scan(broker, JobScan(queue="a"))
        assert len(in_a) == 9 and {job.queue for job in in_a} == {"a"}
        assert await _scan(broker, JobScan(queue="nowhere")) == []

    async def test_scan_since_keeps_recent_finishes_and_recent_enqueues(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        expected = await _history(broker, clock)  # enqueued at t0, finished at t0 + 5
        clock.advance(100)
        late = await put_many(broker, 2, queue="a")
        since = clock.now() - 50  # after every enqueue above and the finishes at t0 + 5
        jobs = await _scan(broker, JobScan(since=since))
        assert sorted(job.id for job in jobs) == sorted(late)
        between = clock.now() - 102  # t0 + 3: after the t0 enqueues, before the t0 + 5 finishes
        jobs = await _scan(broker, JobScan(since=between))
        finished = [i for i, s in expected.items() if s in (JobStatus.COMPLETED, JobStatus.DEAD)]
        assert sorted(job.id for job in jobs) == sorted([*late, *finished])

    async def test_scan_parts_split_the_jobs_without_overlap(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        expected = await _history(broker, clock)
        parts = [await _scan(broker, JobScan(part=i, parts=3)) for i in range(3)]
        ids = [job.id for part in parts for job in part]
        assert Counter(ids) == Counter(list(expected))

    async def test_bad_scan_requests_are_refused(self) -> None:
        for bad in ({"parts": 0}, {"part": 2, "parts": 2}, {"page_size": 0}, {"statuses": ("nope",)}):
            with pytest.raises(InvalidRequest):
                JobScan(**bad)
