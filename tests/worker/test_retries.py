"""Failures: the policy's delays and attempt counts, SkipRetry, Retry(after), the DLQ."""

from __future__ import annotations

from datetime import timedelta

from pqueue import AsyncClient, ConstantBackoff, Job, JobStatus, LinearBackoff, Retry, Router, SkipRetry
from pqueue.clock import ManualClock, to_datetime
from tests.worker.conftest import MakeWorker, eventually, running, settled


async def test_retries_follow_the_policy_delays_and_count_attempts(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    router = Router()
    attempts: list[int] = []

    @router.task("flaky", max_retries=5, retry=LinearBackoff(step=10))
    def flaky(job: Job) -> str:
        attempts.append(job.attempt)
        if job.attempt < 3:
            raise ConnectionError(f"upstream down (attempt {job.attempt})")
        return "ok"

    job_id = (await client.enqueue_task(flaky.task())).id
    async with running(make_worker(router)):
        for attempt, delay in ((1, 10), (2, 20)):
            job = await settled(client, job_id, JobStatus.RETRY)
            assert job.attempt == attempt
            assert job.run_at == to_datetime(clock.now() + delay)  # LinearBackoff: step * attempt
            assert job.last_error is not None and job.last_error.kind == "ConnectionError"
            assert job.last_error.message == f"upstream down (attempt {attempt})"
            assert job.last_error.attempt == attempt
            clock.advance(delay - 0.5)
            assert (await client.get_job(job_id)).status is JobStatus.RETRY  # not due yet
            clock.advance(0.5)
            await eventually(lambda a=attempt: len(attempts) > a, what="the next attempt")
        job = await settled(client, job_id)
    assert attempts == [1, 2, 3]
    assert job.status is JobStatus.COMPLETED and job.attempt == 3 and job.result == "ok"
    assert [e.attempt for e in job.errors] == [1, 2]


async def test_exhausted_retries_dead_letter_with_the_last_error(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    router = Router()
    runs: list[int] = []

    @router.task("poison", max_retries=2, retry=ConstantBackoff(5))
    async def poison(job: Job) -> None:
        runs.append(job.attempt)
        raise_deep(job.attempt)

    job_id = (await client.enqueue_task(poison.task())).id
    async with running(make_worker(router)):
        for attempt in (1, 2):
            await eventually(lambda a=attempt: len(runs) == a)
            await settled(client, job_id, JobStatus.RETRY)
            clock.advance(5)
        job = await settled(client, job_id)
    assert job.status is JobStatus.DEAD and job.attempt == 3  # max_retries=2: three runs in all
    error = job.last_error
    assert error is not None and error.kind == "ValueError" and error.message == "bad record 3"
    assert "raise_deep" in error.traceback and error.traceback.rstrip().endswith("ValueError: bad record 3")
    assert len(job.errors) == 3


def raise_deep(attempt: int) -> None:
    raise ValueError(f"bad record {attempt}")


async def test_skip_retry_dead_letters_at_once(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()
    runs: list[int] = []

    @router.task("refuse", max_retries=10)
    def refuse(job: Job) -> None:
        runs.append(job.attempt)
        raise SkipRetry("account closed")

    job_id = (await client.enqueue_task(refuse.task())).id
    async with running(make_worker(router)):
        job = await settled(client, job_id)
    assert runs == [1]
    assert job.status is JobStatus.DEAD and job.attempt == 1
    assert job.last_error is not None and (job.last_error.kind, job.last_error.message) == (
        "SkipRetry",
        "account closed",
    )


async def test_retry_after_sets_the_next_run_time(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    router = Router()
    runs: list[int] = []
    start = clock.now()

    @router.task("later", max_retries=3, retry=ConstantBackoff(1))
    async def later(job: Job) -> str:
        runs.append(job.attempt)
        if job.attempt == 1:
            raise Retry(after=120)
        if job.attempt == 2:
            raise Retry(after=to_datetime(start + 500))
        if job.attempt == 3:
            raise Retry(after=timedelta(minutes=1))
        return "done"

    job_id = (await client.enqueue_task(later.task())).id
    async with running(make_worker(router)):
        job = await settled(client, job_id, JobStatus.RETRY)
        assert job.run_at == to_datetime(start + 120) and job.last_error is not None
        assert job.last_error.kind == "Retry"
        clock.advance(120)
        await eventually(lambda: len(runs) == 2)
        job = await settled(client, job_id, JobStatus.RETRY)
        assert job.run_at == to_datetime(start + 500)  # an absolute time
        clock.advance(380)
        await eventually(lambda: len(runs) == 3)
        job = await settled(client, job_id, JobStatus.RETRY)
        assert job.run_at == to_datetime(start + 560)
        clock.advance(60)
        job = await settled(client, job_id)
    assert runs == [1, 2, 3, 4] and job.status is JobStatus.COMPLETED


async def test_retry_after_counts_against_max_retries(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()

    @router.task("snooze", max_retries=0)
    async def snooze(job: Job) -> None:
        raise Retry(after=10)

    job_id = (await client.enqueue_task(snooze.task())).id
    async with running(make_worker(router)):
        job = await settled(client, job_id)
    assert job.status is JobStatus.DEAD and job.last_error is not None and job.last_error.kind == "Retry"


async def test_base_exceptions_from_handlers_fail_the_job_not_the_worker(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()

    @router.task("exit:async", max_retries=0)
    async def exit_async(job: Job) -> None:
        raise SystemExit(3)

    @router.task("exit:sync", max_retries=0)
    def exit_sync(job: Job) -> None:
        raise KeyboardInterrupt

    @router.task("fine")
    async def fine(job: Job) -> str:
        return "still serving"

    a = (await client.enqueue_task(exit_async.task())).id
    s = (await client.enqueue_task(exit_sync.task())).id
    async with running(make_worker(router, concurrency=1)):
        assert [(await settled(client, i)).last_error.kind for i in (a, s)] == [
            "SystemExit",
            "KeyboardInterrupt",
        ]  # type: ignore[union-attr]
        later = (await client.enqueue("fine")).id
        assert (await settled(client, later)).result == "still serving"
