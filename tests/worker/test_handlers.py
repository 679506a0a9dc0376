"""Sync and async handlers run on every backend and see a read-only view of their job."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

from pqueue import AsyncClient, Job, JobStatus, Router
from tests.worker.conftest import MakeWorker, running, settled


async def test_async_handler_runs_on_the_loop_and_stores_its_result(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    seen: list[Job] = []
    loop_thread: list[threading.Thread] = []

    @router.task("greet:async")
    async def greet(job: Job) -> dict[str, str]:
        await asyncio.sleep(0)
        seen.append(job)
        loop_thread.append(threading.current_thread())
        return {"hello": job.payload["name"]}

    result = await client.enqueue("greet:async", {"name": "ada"}, max_retries=7, meta={"trace": "t-1"})
    async with running(make_worker(router)):
        job = await settled(client, result.id)
    assert job.status is JobStatus.COMPLETED and job.result == {"hello": "ada"}
    [view] = seen
    assert (view.id, view.type, view.queue, view.payload) == (
        result.id,
        "greet:async",
        "default",
        {"name": "ada"},
    )
    assert (view.attempt, view.max_retries, view.meta) == (1, 7, {"trace": "t-1"})
    assert view.enqueued_at == job.enqueued_at
    assert loop_thread == [threading.current_thread()]  # async handlers run on the worker's loop
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.attempt = 5  # type: ignore[misc]


async def test_sync_handler_runs_in_a_thread_and_stores_its_result(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    threads: list[threading.Thread] = []

    @router.task("sum:sync")
    def add(job: Job) -> int:
        threads.append(threading.current_thread())
        return sum(job.payload)

    ids = [(await client.enqueue("sum:sync", [i, i, 1])).id for i in range(5)]
    async with running(make_worker(router)):
        jobs = [await settled(client, job_id) for job_id in ids]
    assert [j.result for j in jobs] == [1, 3, 5, 7, 9]
    assert all(j.status is JobStatus.COMPLETED and j.attempt == 1 for j in jobs)
    assert threading.current_thread() not in threads


async def test_unencodable_result_completes_the_job_without_a_result(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()

    @router.task("odd:result")
    async def odd(job: Job) -> object:
        return {1, 2}  # a set is not JSON

    job_id = (await client.enqueue("odd:result")).id
    async with running(make_worker(router)):
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED and job.result is None


async def test_jobs_of_several_queues_are_all_served(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()
    ran: list[str] = []

    @router.task("q:any")
    async def any_queue(job: Job) -> None:
        ran.append(job.queue)

    ids = [(await client.enqueue("q:any", queue=q)).id for q in ("critical", "default", "low", "low")]
    async with running(make_worker(router, queues={"critical": 6, "default": 3, "low": 1})):
        for job_id in ids:
            await settled(client, job_id)
    assert sorted(ran) == ["critical", "default", "low", "low"]
