"""Idempotency keys: a job runs successfully at most once per key; duplicates are acked unrun."""

from __future__ import annotations

import asyncio

from pqueue import AsyncClient, Job, JobStatus, Router
from pqueue.clock import ManualClock
from tests.worker.conftest import MakeWorker, eventually, running, settled


async def test_duplicate_delivery_after_success_is_acked_without_running(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    charges: list[str] = []

    @router.task("charge")
    async def charge(job: Job) -> str:
        charges.append(job.id)
        return "charged"

    first = (await client.enqueue("charge", {"cents": 500}, idempotency_key="order-7")).id
    async with running(make_worker(router, concurrency=1)) as worker:
        await settled(client, first)
        second = (await client.enqueue("charge", {"cents": 500}, idempotency_key="order-7")).id
        duplicate = await settled(client, second)
    assert charges == [first]
    assert duplicate.status is JobStatus.COMPLETED and duplicate.result is None
    assert worker.counters.duplicates == 1 and worker.counters.completed == 1


async def test_duplicate_delivered_while_the_first_runs_waits_then_is_acked(
    client: AsyncClient, make_worker: MakeWorker, clock: ManualClock
) -> None:
    router = Router()
    gate = asyncio.Event()
    charges: list[str] = []

    @router.task("charge")
    async def charge(job: Job) -> None:
        charges.append(job.id)
        await gate.wait()

    first = (await client.enqueue("charge", idempotency_key="order-8")).id
    async with running(make_worker(router, concurrency=2, idempotency_busy_delay=5)) as worker:
        await eventually(lambda: charges == [first])
        second = (await client.enqueue("charge", idempotency_key="order-8")).id
        job = await settled(client, second, JobStatus.SCHEDULED)  # key busy: handed back for 5 s
        assert job.attempt == 0
        gate.set()
        await settled(client, first)
        clock.advance(5)
        await settled(client, second)
    assert charges == [first] and worker.counters.duplicates == 1


async def test_a_failed_run_releases_the_key(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()
    runs: list[str] = []

    @router.task("charge", max_retries=0)
    async def charge(job: Job) -> None:
        runs.append(job.id)
        if len(runs) == 1:
            raise RuntimeError("card declined")

    first = (await client.enqueue_task(charge.task(idempotency_key="order-9"))).id
    async with running(make_worker(router, concurrency=1)):
        assert (await settled(client, first)).status is JobStatus.DEAD
        second = (await client.enqueue_task(charge.task(idempotency_key="order-9"))).id
        assert (await settled(client, second)).status is JobStatus.COMPLETED
    assert runs == [first, second]
