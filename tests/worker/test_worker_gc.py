"""A worker that owns its process keeps its start-up heap out of the garbage collector."""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import Iterator

import pytest

from pqueue import AsyncClient, Job, Router, Worker


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # later tests see the collector as they always did


async def _frozen_during_a_job(*, freeze: bool) -> int:
    """Serve one job and return gc.get_freeze_count() as its handler saw it."""
    dsn = f"memory://gc-{uuid.uuid4().hex}"
    router, seen = Router(), asyncio.get_running_loop().create_future()

    @router.task("probe")
    async def probe(job: Job) -> None:
        seen.set_result(gc.get_freeze_count())

    worker = Worker(dsn, router, poll_interval=0.01)
    serving = asyncio.create_task(worker.serve(freeze=freeze))
    async with AsyncClient(dsn) as client:
        await client.enqueue("probe", None)
        count = await asyncio.wait_for(seen, 10)
    worker.stop()
    await asyncio.wait_for(serving, 10)
    return count


async def test_run_freezes_what_start_up_allocated() -> None:
    assert await _frozen_during_a_job(freeze=True) > 1000  # modules, the app, the driver


async def test_an_embedded_worker_leaves_the_collector_alone() -> None:
    assert await _frozen_during_a_job(freeze=False) == 0  # the host process owns that choice
