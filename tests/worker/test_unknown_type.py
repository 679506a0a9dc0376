"""Jobs of a type this worker has no handler for: retried unrun, or dead-lettered."""

from __future__ import annotations

from pqueue import AsyncClient, Job, JobStatus, Router
from pqueue.clock import ManualClock
from tests.worker.conftest import MakeWorker, eventually, running, settled


async def test_unknown_type_is_handed_back_without_burning_an_attempt(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    old = Router()
    new = Router()
    ran: list[int] = []

    @new.task("report:new")
    async def report(job: Job) -> None:
        ran.append(job.attempt)

    job_id = (await client.enqueue("report:new", {"id": 1}, max_retries=0)).id
    async with running(make_worker(old)) as worker:
        job = await settled(client, job_id, JobStatus.SCHEDULED)
        await eventually(lambda: worker.counters.unknown == 1)
    assert job.attempt == 0  # not a failure of the job: no attempt burnt
    assert [e.kind for e in job.errors] == ["UnknownJobType"]  # but the reason is on record
    assert "no handler for job type 'report:new'" in job.errors[0].message
    assert job.run_at.timestamp() > clock.now()
    assert worker.counters.released == 1
    # The rolling deploy finishes: a worker that knows the type runs it on its first attempt.
    async with running(make_worker(new)):
        clock.advance(600)
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED and ran == [1]


async def test_unknown_type_backs_off_as_the_job_ages(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    job_id = (await client.enqueue("nobody:knows")).id
    delays: list[float] = []
    async with running(make_worker(Router(), unknown_type_max_delay=300)) as worker:
        for bounce in range(1, 16):
            job = await settled(client, job_id, JobStatus.SCHEDULED)
            await eventually(lambda b=bounce: worker.counters.released == b)  # handed back
            job = await client.get_job(job_id)
            delays.append(job.run_at.timestamp() - clock.now())
            clock.advance(delays[-1] + 0.001)
    assert delays[0] <= 1.2 and delays[-1] > 3 * delays[0]
    assert all(d <= 300 * 1.2 for d in delays)


async def test_unknown_type_can_dead_letter_at_once(client: AsyncClient, make_worker: MakeWorker) -> None:
    job_id = (await client.enqueue("typo:tpye", max_retries=5)).id
    async with running(make_worker(Router(), unknown_type="dead")):
        job = await settled(client, job_id)
    assert job.status is JobStatus.DEAD
    assert job.last_error is not None and job.last_error.kind == "UnknownJobType"
    assert "typo:tpye" in job.last_error.message


async def test_a_type_nobody_has_known_for_max_age_is_dead_lettered(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    job_id = (await client.enqueue("email:welcom", {"typo": True})).id  # a mistyped type
    async with running(make_worker(Router(), unknown_type_max_age=3600)) as worker:
        job = await settled(client, job_id, JobStatus.SCHEDULED)
        assert job.attempt == 0  # handed back while it is young: a deploy may be in progress
        clock.advance(3601)
        job = await settled(client, job_id, JobStatus.DEAD)
        assert worker.counters.unknown >= 2
    assert job.last_error is not None and job.last_error.kind == "UnknownJobType"
    assert "none has known it for 1 h" in job.last_error.message


class _ExplainingRouter(Router):
    """A router that finds handlers on demand and knows why it found none (pqueue.django's)."""

    def missing_reason(self, name: str) -> str | None:
        return f"cannot import {name.rpartition('.')[0]!r}: ModuleNotFoundError" if "." in name else None


async def test_the_routers_reason_is_in_the_error(client: AsyncClient, make_worker: MakeWorker) -> None:
    explained = (await client.enqueue("shop.tasks.gone")).id
    plain = (await client.enqueue("typo:tpye")).id
    async with running(make_worker(_ExplainingRouter(), unknown_type="dead")):
        jobs = [await settled(client, explained), await settled(client, plain)]
    assert [job.status for job in jobs] == [JobStatus.DEAD, JobStatus.DEAD]
    messages = [job.last_error.message for job in jobs if job.last_error is not None]
    assert messages[0] == (
        "no handler for job type 'shop.tasks.gone' in this worker "
        "(cannot import 'shop.tasks': ModuleNotFoundError)"
    )
    assert messages[1] == "no handler for job type 'typo:tpye' in this worker"
