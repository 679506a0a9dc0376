"""Backpressure: a worker never holds more jobs than its concurrency, sync or async."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from pqueue import AsyncClient, Job, JobStatus, Router, Task
from pqueue.brokers.memory import MemoryBroker
from tests.conftest import only_backends
from tests.worker.conftest import MakeWorker, eventually, running, settled


async def _active(client: AsyncClient) -> int:
    return (await client.stats()).total(JobStatus.ACTIVE)


async def test_async_jobs_never_exceed_concurrency(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()
    gate = asyncio.Event()
    now_running = peak = 0

    @router.task("slow:async")
    async def slow(job: Job) -> None:
        nonlocal now_running, peak
        now_running += 1
        peak = max(peak, now_running)
        await gate.wait()
        now_running -= 1

    results = await client.enqueue_many([Task("slow:async", i) for i in range(12)])
    async with running(make_worker(router, concurrency=3)) as worker:
        await eventually(lambda: now_running == 3)
        await asyncio.sleep(0.05)  # give a misbehaving claim loop the chance to over-claim
        assert worker.held == 3 and await _active(client) == 3
        assert (await client.stats()).total(JobStatus.PENDING) == 9
        gate.set()
        for r in results:
            await settled(client, r.id)
    assert peak == 3 and worker.counters.completed == 12


async def test_sync_jobs_never_exceed_concurrency(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()
    gate = threading.Event()
    lock = threading.Lock()
    now_running = peak = 0

    @router.task("slow:sync")
    def slow(job: Job) -> None:
        nonlocal now_running, peak
        with lock:
            now_running += 1
            peak = max(peak, now_running)
        gate.wait(30)
        with lock:
            now_running -= 1

    results = await client.enqueue_many([Task("slow:sync", i) for i in range(10)])
    async with running(make_worker(router, concurrency=2)) as worker:
        await eventually(lambda: now_running == 2)
        await asyncio.sleep(0.05)
        assert worker.held == 2 and await _active(client) == 2
        gate.set()
        for r in results:
            await settled(client, r.id)
    assert peak == 2 and worker.counters.completed == 10


@only_backends("memory")
async def test_slow_acks_hold_back_claims_without_stalling_them(
    client: AsyncClient, make_worker: MakeWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When acks lag, the worker stops claiming until they catch up -- and then goes on."""
    real_ack = MemoryBroker.ack

    async def slow_ack(self: MemoryBroker, leases: Any, results_json: Any = None) -> list[bool]:
        await asyncio.sleep(0.02)
        return await real_ack(self, leases, results_json)

    monkeypatch.setattr(MemoryBroker, "ack", slow_ack)
    router = Router()

    @router.task("quick")
    async def quick(job: Job) -> None: ...

    results = await client.enqueue_many([Task("quick", i) for i in range(300)])
    async with running(make_worker(router, concurrency=2)) as worker:
        await eventually(lambda: worker.counters.completed == 300, what="every job to complete")
    statuses = {(await client.get_job(r.id)).status for r in results}
    assert statuses == {JobStatus.COMPLETED}
