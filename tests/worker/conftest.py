"""Fixtures for worker-level tests: each runs once per backend, like the contract suite.

``client`` and ``make_worker`` reach this test's own namespace (``backend_dsn``) with
the test's :class:`ManualClock`; workers poll and promote every few milliseconds so a
``clock.advance`` is noticed at once. ``running(worker)`` serves a worker for the
body of an ``async with`` and drains it afterwards.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import pytest_asyncio

from pqueue import AsyncClient, Router, Worker
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import Job, JobStatus

FAST = {"poll_interval": 0.01, "promote_interval": 0.01, "recover_interval": 0.02}
"""Worker intervals for tests: react to clock moves within milliseconds."""

MakeWorker = Callable[..., Worker]


@pytest_asyncio.fixture
async def client(broker: FullBroker, backend_dsn: str, clock: ManualClock) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(backend_dsn, clock=clock) as c:
        yield c


@pytest.fixture
def make_worker(backend_dsn: str, clock: ManualClock, broker: FullBroker) -> MakeWorker:
    def make(router: Router, **options: Any) -> Worker:
        settings: dict[str, Any] = {
            "queues": ["default"],
            "concurrency": 4,
            "shutdown_timeout": 10.0,
            "clock": clock,
            **FAST,
        }
        settings.update(options)
        return Worker(backend_dsn, router, **settings)

    return make


@asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[Worker]:
    """Serve ``worker`` in the background; stop and drain it when the block ends."""
    task = asyncio.create_task(worker.serve())
    try:
        await eventually(lambda: task.done() or worker.is_running, timeout=30, what="worker start")
        if task.done():
            task.result()  # startup failed: raise it
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 60)


async def eventually(
    predicate: Callable[[], Any], *, timeout: float = 20.0, interval: float = 0.005, what: str = ""
) -> Any:
    """Wait until ``predicate()`` (sync or async) is truthy; fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what or getattr(predicate, '__name__', 'condition')}")
        await asyncio.sleep(interval)


async def settled(client: AsyncClient, job_id: str, *statuses: JobStatus, timeout: float = 20.0) -> Job:
    """Wait until the job is in one of ``statuses`` (default: any final status) and return it."""
    wanted = set(statuses) or {s for s in JobStatus if s.is_final}

    async def check() -> Job | None:
        job = await client.get_job(job_id)
        return job if job.status in wanted else None

    job: Job = await eventually(check, timeout=timeout, what=f"job {job_id} to reach {sorted(wanted)}")
    return job


def count_broker_enqueues(client: AsyncClient) -> list[int]:
    """Wrap ``client``'s broker so each enqueue call appends its batch size to the list returned."""
    calls: list[int] = []
    real = client.broker.enqueue

    async def counting(specs):  # type: ignore[no-untyped-def]
        calls.append(len(specs))
        return await real(specs)

    client.broker.enqueue = counting  # type: ignore[method-assign]
    return calls
