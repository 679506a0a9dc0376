"""AsyncClient and Client: enqueue options, batches, inspection and admin, on every backend."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pqueue import (
    AsyncClient,
    Client,
    InvalidPayload,
    Job,
    JobNotFound,
    JobStatus,
    Router,
    SkipRetry,
    Task,
    UnknownJobType,
)
from pqueue.clock import ManualClock, to_datetime
from tests.worker.conftest import MakeWorker, count_broker_enqueues, running, settled


async def test_enqueue_stores_every_option(client: AsyncClient, clock: ManualClock) -> None:
    result = await client.enqueue(
        "mail:send",
        {"to": "ada@example.com"},
        queue="critical",
        delay=timedelta(seconds=90),
        max_retries=9,
        timeout=12.5,
        idempotency_key="mail-1",
        meta={"tenant": "acme"},
    )
    assert result.created
    job = await client.get_job(result.id)
    assert (job.type, job.queue, job.payload, job.status) == (
        "mail:send",
        "critical",
        {"to": "ada@example.com"},
        JobStatus.SCHEDULED,
    )
    assert job.run_at == to_datetime(clock.now() + 90)
    assert (job.max_retries, job.timeout, job.idempotency_key, job.meta) == (
        9,
        12.5,
        "mail-1",
        {"tenant": "acme"},
    )
    at = to_datetime(clock.now() + 3600)
    assert (await client.get_job((await client.enqueue("mail:send", run_at=at)).id)).run_at == at


async def test_refused_unique_enqueue_returns_the_existing_id(client: AsyncClient) -> None:
    first = await client.enqueue("report:daily", {"day": "2026-01-02"}, unique_for=3600)
    again = await client.enqueue("report:daily", {"day": "2026-01-02"}, unique_for=3600)
    other = await client.enqueue("report:daily", {"day": "2026-01-03"}, unique_for=3600)
    keyed = await client.enqueue("report:daily", {"x": 1}, unique_for=60, unique_key="daily")
    keyed_again = await client.enqueue("report:daily", {"x": 2}, unique_for=60, unique_key="daily")
    assert first.created and not again.created and again.id == first.id
    assert other.created and other.id != first.id
    assert keyed.created and (keyed_again.id, keyed_again.created) == (keyed.id, False)


async def test_enqueue_many_is_one_broker_call_in_order(client: AsyncClient) -> None:
    calls = count_broker_enqueues(client)
    tasks = [Task("batch:item", i, queue="low" if i % 2 else "default") for i in range(250)]
    results = await client.enqueue_many(tasks)
    assert calls == [250] and all(r.created for r in results)
    jobs = [await client.get_job(r.id) for r in results[:4]]
    assert [(j.payload, j.queue) for j in jobs] == [(0, "default"), (1, "low"), (2, "default"), (3, "low")]


async def test_a_bad_task_in_a_batch_stores_nothing(client: AsyncClient) -> None:
    with pytest.raises(InvalidPayload):
        await client.enqueue_many([Task("ok", 1), Task("bad", {"not": {1, 2}})])
    assert (await client.stats()).totals[JobStatus.PENDING] == 0


async def test_stats_count_jobs_and_list_live_workers(client: AsyncClient, make_worker: MakeWorker) -> None:
    await client.enqueue_many([Task("t", i) for i in range(3)] + [Task("t", queue="low")])
    stats = await client.stats()
    assert stats.total(JobStatus.PENDING) == 4 and stats.total(JobStatus.PENDING, "low") == 1
    assert stats.workers == []
    async with running(make_worker(Router(), concurrency=3, queues=["other"])) as worker:
        [info] = (await client.stats()).workers
    assert (info.id, info.queues, info.concurrency) == (worker.id, ("other",), 3)
    assert info.pid > 0 and info.host and info.started_at > 0 and info.last_seen > 0
    assert (await client.stats()).workers == []  # unregistered on clean stop


async def test_dead_letter_admin_and_cancel(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()

    @router.task("doomed", max_retries=0)
    async def doomed(job: Job) -> None:
        raise SkipRetry(f"poison {job.payload}")

    ids = [(await client.enqueue("doomed", i, queue="default")).id for i in range(3)]
    later = (await client.enqueue("doomed", 99, delay=3600)).id
    async with running(make_worker(router)):
        for job_id in ids:
            await settled(client, job_id)
    page = await client.dead_jobs(limit=2)
    assert len(page.jobs) == 2 and page.next_offset == 2
    assert all(job.last_error is not None and job.last_error.kind == "SkipRetry" for job in page.jobs)
    assert await client.requeue_dead(job_ids=[ids[0]]) == 1
    assert (await client.get_job(ids[0])).status is JobStatus.PENDING
    assert await client.purge_dead() == 2
    with pytest.raises(JobNotFound):
        await client.get_job(ids[1])
    assert await client.cancel(later) is True
    assert (await client.get_job(later)).status is JobStatus.CANCELLED
    assert await client.cancel(later) is False


async def test_router_defaults_apply_to_enqueue_by_name(
    backend_dsn: str, clock: ManualClock, client: AsyncClient
) -> None:
    router = Router()

    @router.task("email:welcome", queue="critical", max_retries=1, timeout=5)
    async def welcome(job: Job) -> None: ...

    async with AsyncClient(backend_dsn, clock=clock, router=router) as routed:
        by_name = await routed.get_job((await routed.enqueue("email:welcome", {"user": 1})).id)
        overridden = await routed.get_job(
            (await routed.enqueue("email:welcome", queue="low", max_retries=0)).id
        )
        with pytest.raises(UnknownJobType, match="did you mean 'email:welcome'"):
            await routed.enqueue("email:welcom")  # a router makes the client refuse types it lacks
        unregistered = await client.get_job((await client.enqueue("other:type")).id)  # no router: any type
    assert (by_name.queue, by_name.max_retries, by_name.timeout) == ("critical", 1, 5.0)
    assert (overridden.queue, overridden.max_retries) == ("low", 0)
    assert (unregistered.queue, unregistered.max_retries, unregistered.timeout) == ("default", 3, None)
    assert (await client.stats()).total(JobStatus.PENDING) == 3


async def test_sync_client_is_the_same_api_from_any_thread(
    backend_dsn: str, clock: ManualClock, broker: object
) -> None:
    def produce() -> tuple[Job, list[bool], int]:
        with Client(backend_dsn, clock=clock) as client:
            job = client.get_job(client.enqueue("sync:job", {"n": 1}, queue="low").id)
            batch = client.enqueue_many([Task("sync:job", i) for i in range(5)])
            return job, [r.created for r in batch], client.stats().total(JobStatus.PENDING)

    job, created, pending = await asyncio.to_thread(produce)
    assert (job.type, job.payload, job.queue) == ("sync:job", {"n": 1}, "low")
    assert created == [True] * 5 and pending == 6


async def test_handler_enqueue_goes_through_the_routers_client(
    backend_dsn: str, clock: ManualClock, broker: object
) -> None:
    router = Router()

    @router.task("email:welcome", queue="critical", max_retries=2)
    async def welcome(job: Job) -> None: ...

    client = Client(backend_dsn, clock=clock)
    router.use(client)
    try:
        sent = await asyncio.to_thread(welcome.enqueue, {"user": 1}, delay=30)
        awaited = await welcome.enqueue_async({"user": 2})
        jobs = [await asyncio.to_thread(client.get_job, r.id) for r in (sent, awaited)]
    finally:
        router.close()  # the client was given to use(): router.close() leaves it open
        assert client.get_job(sent.id).id == sent.id
        client.close()
    assert [(j.queue, j.max_retries, j.payload, j.status) for j in jobs] == [
        ("critical", 2, {"user": 1}, JobStatus.SCHEDULED),
        ("critical", 2, {"user": 2}, JobStatus.PENDING),
    ]
