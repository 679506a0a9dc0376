"""Prefetch: fast jobs are claimed ahead of free slots (bounded), slow ones never are, and
a drain hands back the prefetched jobs that never started, without burning an attempt."""

from __future__ import annotations

import asyncio

from pqueue import AsyncClient, Job, JobStatus, Router, Task
from tests.worker.conftest import MakeWorker, eventually, running, settled


def _router(gate: asyncio.Event, started: list[str], *, quick_seconds: float = 0.0) -> Router:
    router = Router()

    @router.task("quick")
    async def quick(job: Job) -> None:
        if quick_seconds:
            await asyncio.sleep(quick_seconds)

    @router.task("gated")
    async def gated(job: Job) -> None:
        started.append(job.id)
        await gate.wait()

    return router


async def _warm_up(client: AsyncClient, n: int) -> None:
    """Run ``n`` quick jobs so the worker has measured how long its jobs take."""
    for result in await client.enqueue_many([Task("quick", i) for i in range(n)]):
        await settled(client, result.id)


async def test_fast_jobs_are_prefetched_up_to_the_limit_and_handed_back_unrun_at_a_drain(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    gate, started = asyncio.Event(), []
    worker = make_worker(_router(gate, started), concurrency=2, prefetch=3, prefetch_window=1.0)
    async with running(worker):
        await _warm_up(client, 4)
        gated = [r.id for r in await client.enqueue_many([Task("gated", i) for i in range(10)])]
        await eventually(lambda: len(started) == 2 and worker.held == 5, what="2 running + 3 prefetched")
        await asyncio.sleep(0.05)  # a misbehaving claim loop would over-claim now
        assert len(started) == 2 and worker.held == 5

        async def five_active() -> bool:
            return (await client.stats()).total(JobStatus.ACTIVE) == 5

        # A hand-off that raced the worker's last claim may lease it more for a moment;
        # its broker gives those back unrun within STALE_AFTER (docs/redis.md, "Hand-off").
        await eventually(five_active, timeout=10, what="only the held jobs leased")
        assert worker.held == 5
        worker.stop()  # the drain hands the 3 waiting jobs back at once, then waits for the 2
        await eventually(lambda: worker.counters.released == 3, what="the prefetched jobs handed back")
        gate.set()
    jobs = {job_id: await client.get_job(job_id) for job_id in gated}
    assert sorted(jobs[i].status for i in started) == [JobStatus.COMPLETED] * 2
    waiting = [job for job_id, job in jobs.items() if job_id not in started]
    assert {job.status for job in waiting} == {JobStatus.PENDING}
    assert {job.attempt for job in waiting} == {0}  # handed back unrun: no attempt burnt
    assert worker.counters.completed == 4 + 2 and worker.counters.claimed == 4 + 5


async def test_jobs_slower_than_the_window_are_not_prefetched(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    gate, started = asyncio.Event(), []
    router = _router(gate, started, quick_seconds=0.02)
    # 2 slots, jobs of >= 20 ms, window 1 ms: a third job would wait ~10 ms for a slot.
    worker = make_worker(router, concurrency=2, prefetch=50, prefetch_window=0.001)
    async with running(worker):
        await _warm_up(client, 2)
        await client.enqueue_many([Task("gated", i) for i in range(6)])
        await eventually(lambda: len(started) == 2, what="two gated jobs running")
        await asyncio.sleep(0.05)
        assert worker.held == 2 and (await client.stats()).total(JobStatus.ACTIVE) == 2
        gate.set()
        await eventually(lambda: len(started) == 6, what="every gated job to run")


async def test_prefetch_zero_never_holds_more_than_the_slots(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    gate, started = asyncio.Event(), []
    worker = make_worker(_router(gate, started), concurrency=2, prefetch=0)
    async with running(worker):
        await _warm_up(client, 4)
        await client.enqueue_many([Task("gated", i) for i in range(6)])
        await eventually(lambda: len(started) == 2, what="two gated jobs running")
        await asyncio.sleep(0.05)
        assert worker.held == 2
        gate.set()
        await eventually(lambda: len(started) == 6, what="every gated job to run")
