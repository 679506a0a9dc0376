"""Per-job timeouts: async handlers are cancelled, sync ones interrupted in their thread."""

from __future__ import annotations

import asyncio
import threading
import time

from pqueue import AsyncClient, Job, JobStatus, Router
from tests.worker.conftest import MakeWorker, eventually, running, settled


async def test_async_handler_past_its_timeout_is_cancelled_and_retried(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    cancelled: list[int] = []

    @router.task("hang:async", timeout=0.2, max_retries=1)
    async def hang(job: Job) -> str:
        if job.attempt == 2:
            return "second time lucky"
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(job.attempt)
            raise
        return "unreachable"

    job_id = (await client.enqueue_task(hang.task())).id
    async with running(make_worker(router)) as worker:
        job = await settled(client, job_id, JobStatus.RETRY, JobStatus.COMPLETED)
        assert job.last_error is not None and job.last_error.kind == "JobTimeout"
        assert "timeout of 0.2s" in job.last_error.message
    assert cancelled == [1] and worker.counters.timeouts == 1


async def test_sync_handler_past_its_timeout_is_interrupted(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    interrupted = threading.Event()

    @router.task("spin:sync", max_retries=0)
    def spin(job: Job) -> None:
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # pure Python: interruptible at any bytecode
                pass
        finally:
            interrupted.set()

    job_id = (await client.enqueue_task(spin.task(timeout=0.3))).id
    async with running(make_worker(router)) as worker:
        job = await settled(client, job_id)
        await eventually(interrupted.is_set, timeout=10, what="the handler thread to be interrupted")
    assert job.status is JobStatus.DEAD and worker.counters.timeouts == 1
    error = job.last_error
    assert error is not None and error.kind == "JobTimeout"
    assert "in spin" in error.traceback  # the thread's stack at the timeout says where it was stuck


async def test_enqueue_time_timeout_overrides_the_handler_default(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()

    @router.task("nap", timeout=0.05, max_retries=0)
    async def nap(job: Job) -> str:
        await asyncio.sleep(0.3)
        return "rested"

    short = (await client.enqueue_task(nap.task())).id
    long = (await client.enqueue_task(nap.task(timeout=30))).id
    async with running(make_worker(router)):
        assert (await settled(client, short)).status is JobStatus.DEAD
        assert (await settled(client, long)).result == "rested"
