"""A paused queue: a running worker claims nothing more from it; resume restores it."""

from __future__ import annotations

import asyncio

from pqueue import AsyncClient, Job, JobStatus, Router
from tests.worker.conftest import MakeWorker, eventually, running


async def test_a_running_worker_stops_claiming_a_paused_queue_and_resumes(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    gate = asyncio.Event()
    ran: list[str] = []

    @router.task("work")
    async def work(job: Job) -> None:
        ran.append(job.payload)
        if job.payload == "long":
            await gate.wait()

    long = (await client.enqueue("work", "long", queue="a")).id
    async with running(make_worker(router, queues=["a", "b"])) as worker:
        await eventually(lambda: ran == ["long"], what="the first job to start")
        assert await client.pause("a") is True
        held = (await client.enqueue("work", "held", queue="a")).id
        other = (await client.enqueue("work", "other", queue="b")).id
        await eventually(lambda: "other" in ran, what="the unpaused queue's job")
        gate.set()  # a job running when its queue was paused finishes
        await eventually(lambda: worker.counters.completed == 2, what="the running job to finish")
        await asyncio.sleep(0.3)  # many claim cycles (the worker polls every 10 ms)
        assert "held" not in ran
        assert (await client.get_job(held)).status is JobStatus.PENDING
        assert "a" in (await client.stats()).paused
        assert await client.resume("a") is True
        await eventually(lambda: "held" in ran, what="the held job after resume")
    assert {(await client.get_job(i)).status for i in (long, held, other)} == {JobStatus.COMPLETED}
