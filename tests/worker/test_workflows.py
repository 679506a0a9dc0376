"""Workflows (chain, group, chord, depends_on) and client.result(), through real workers, on
every backend (docs/workflows.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import pqueue
from pqueue import (
    AsyncClient,
    Client,
    InvalidOption,
    InvalidPayload,
    Job,
    JobCancelled,
    JobFailed,
    JobNotFound,
    JobStatus,
    ResultTimeout,
    Router,
    SkipRetry,
    Task,
)
from pqueue.ids import new_id
from tests.conftest import only_backends
from tests.worker.conftest import MakeWorker, running


def app() -> Router:
    router = Router()

    @router.task("wf:add")
    async def add(job: Job) -> Any:
        before = sum(v for v in job.parent_results.values() if isinstance(v, int))
        return before + int(job.payload)

    @router.task("wf:collect")
    async def collect(job: Job) -> Any:
        return [job.parent_results[p] for p in job.depends_on]

    @router.task("wf:boom")
    async def boom(job: Job) -> None:
        raise SkipRetry("no luck")

    return router


def add(n: int, **options: Any) -> Task:
    return Task("wf:add", n, **options)


async def test_a_chain_passes_each_result_on(client: AsyncClient, make_worker: MakeWorker) -> None:
    ids = await pqueue.chain(add(1), add(10), add(100)).enqueue_async(client)
    assert len(ids) == 3
    jobs = [await client.get_job(i) for i in ids]
    assert [j.status for j in jobs] == [JobStatus.PENDING, JobStatus.WAITING, JobStatus.WAITING]
    assert jobs[1].depends_on == (ids[0],) and jobs[2].depends_on == (ids[1],)
    async with running(make_worker(app())):
        assert await client.result(ids[-1], timeout=30) == 111
    assert [await client.result(i, timeout=0) for i in ids] == [1, 11, 111]  # finished: at once


async def test_a_chord_collects_every_member_in_order(client: AsyncClient, make_worker: MakeWorker) -> None:
    flow = pqueue.chain(add(1), pqueue.chord(pqueue.group([add(2), add(3), add(4)]), Task("wf:collect")))
    ids = await flow.enqueue_async(client)
    assert len(ids) == 5
    async with running(make_worker(app())):
        assert await client.result(ids[-1], timeout=30) == [3, 4, 5]


async def test_a_failing_step_cancels_the_rest_and_result_raises(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    ids = await pqueue.chain(add(1), Task("wf:boom"), add(2), add(3)).enqueue_async(client)
    async with running(make_worker(app())):
        with pytest.raises(JobFailed) as failed:
            await client.result(ids[1], timeout=30)
        assert failed.value.job_id == ids[1] and failed.value.error.kind == "SkipRetry"
        with pytest.raises(JobCancelled) as cancelled:
            await client.result(ids[3], timeout=30)
    assert "ParentFailed" in str(cancelled.value)
    assert (await client.get_job(ids[2])).status is JobStatus.CANCELLED


async def test_policy_run_runs_the_rest(client: AsyncClient, make_worker: MakeWorker) -> None:
    flow = pqueue.chain(Task("wf:boom"), add(2), add(3))
    ids = await flow.enqueue_async(client, on_parent_failure="run")
    async with running(make_worker(app())):
        assert await client.result(ids[-1], timeout=30) == 5


async def test_depends_on_at_enqueue(client: AsyncClient, make_worker: MakeWorker) -> None:
    first = await client.enqueue("wf:add", 5)
    second = await client.enqueue("wf:add", 6, depends_on=[first.id])
    with pytest.raises(JobNotFound):
        await client.enqueue("wf:add", 7, depends_on=[new_id()])
    with pytest.raises(InvalidOption):
        await client.enqueue("wf:add", 7, depends_on=[first.id], unique_for=60)
    async with running(make_worker(app())):
        assert await client.result(second.id, timeout=30) == 11


async def test_a_bad_task_stores_nothing_of_the_graph(client: AsyncClient) -> None:
    bad = pqueue.chain(add(1), pqueue.group([add(2), Task("wf:add", {1, 2})]), add(3))  # a set: not JSON
    with pytest.raises(InvalidPayload):
        await bad.enqueue_async(client)
    assert (await client.stats()).queues == {}
    with pytest.raises(InvalidOption):
        pqueue.chain()
    with pytest.raises(InvalidOption):
        pqueue.group([add(1), "not a task"])  # type: ignore[list-item]


async def test_result_times_out_and_knows_unknown_jobs(client: AsyncClient) -> None:
    job = await client.enqueue("wf:add", 1)
    with pytest.raises(ResultTimeout):
        await client.result(job.id, timeout=0.2)
    with pytest.raises(TimeoutError):  # ResultTimeout is a TimeoutError
        await client.result(job.id, timeout=0.05)
    with pytest.raises(JobNotFound):
        await client.result(new_id(), timeout=1)
    with pytest.raises(pqueue.InvalidRequest):
        await client.result(job.id, timeout=-1)


async def test_result_of_a_cancelled_job_raises(client: AsyncClient) -> None:
    job = await client.enqueue("wf:add", 1)
    waiter = asyncio.create_task(client.result(job.id, timeout=30))
    await asyncio.sleep(0.2)
    assert await client.cancel(job.id)
    with pytest.raises(JobCancelled):
        await asyncio.wait_for(waiter, 10)


async def test_the_sync_client_enqueues_workflows_and_waits(
    backend_dsn: str, client: AsyncClient, make_worker: MakeWorker
) -> None:
    def produce() -> Any:
        with Client(backend_dsn) as sync:
            ids = pqueue.chain(add(1), add(2)).enqueue(sync)
            return sync.result(ids[-1], timeout=30)

    async with running(make_worker(app())):
        assert await asyncio.to_thread(produce) == 3


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_result_sleeps_on_push_without_polling(
    client: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a result() waits on an unfinished job, the broker makes no round trips at all
    (it sleeps on its subscription), then the ack's push wakes it at once."""
    job = await client.enqueue("wf:add", 1)
    broker: Any = client.broker
    calls: list[str] = []
    target, names = (
        (broker.db, ("run",) if hasattr(broker.db, "run") else ("rows", "value", "fetch"))
        if hasattr(broker, "db")
        else (broker, ("run", "run_many"))
    )
    for name in names:
        real = getattr(target, name)

        async def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return await _real(*args, **kwargs)

        monkeypatch.setattr(target, name, counted)
    waiter = asyncio.create_task(client.result(job.id, timeout=60))
    await asyncio.sleep(0.5)  # subscribe, mark watched, read: then nothing
    settled = len(calls)
    await asyncio.sleep(1.5)
    assert len(calls) == settled and not waiter.done()  # no poll in 1.5 s
    [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    loop = asyncio.get_running_loop()
    assert await broker.ack([lease], ["42"]) == [True]
    acked = loop.time()
    assert await asyncio.wait_for(waiter, 10) == 42
    assert loop.time() - acked < 1.0  # woken by the push
