"""Periodic jobs through a real Worker (no ``broker`` fixture: its manual clock would
become the memory store's): its side thread runs the scheduler (on the real
clock here: ticks every second), and a worker without schedules starts no scheduler."""

from __future__ import annotations

import pytest

from pqueue import AsyncClient, Job, Router, Worker
from pqueue.worker import sidecar
from pqueue.worker.schedules import META_TICK
from tests.worker.conftest import FAST, eventually, running


async def test_two_workers_run_each_tick_once(backend_dsn: str) -> None:
    router = Router()
    ran: list[str] = []

    @router.periodic(every=1, name="beat")
    @router.task("beat", queue="periodic")
    def beat(job: Job) -> None:
        ran.append(job.meta[META_TICK])

    workers = [Worker(backend_dsn, router, queues=["periodic"], **FAST) for _ in range(2)]
    async with running(workers[0]), running(workers[1]), AsyncClient(backend_dsn) as client:
        await eventually(lambda: len(ran) >= 3, timeout=20, what="three ticks")
        [listed] = await client.schedules()
    assert (listed.name, listed.type, listed.queue, listed.every) == ("beat", "beat", "periodic", 1.0)
    assert listed.last_run_at is not None and listed.next_run_at > listed.last_run_at
    assert len(ran) == len(set(ran))  # each tick ran once, whichever worker enqueued it


async def test_a_worker_without_schedules_starts_no_scheduler(
    backend_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a scheduler was made for a router without schedules")

    monkeypatch.setattr(sidecar, "Scheduler", refuse)
    router = Router()

    @router.task("plain")
    def plain(job: Job) -> None: ...

    async with running(Worker(backend_dsn, router, **FAST)) as worker:
        assert worker.is_running
    async with AsyncClient(backend_dsn) as client:
        assert await client.schedules() == []
