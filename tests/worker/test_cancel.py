"""Cancel of a running job: the worker hears it, stops the handler and reports CANCELLED;
the job ends ``cancelled``, never retried or dead-lettered (docs/control.md, ADR 0106)."""

from __future__ import annotations

import asyncio
import signal
import threading
import time

from pqueue import AsyncClient, Job, JobStatus, Router
from pqueue.broker import FullBroker, WorkerInfo
from pqueue.broker_control import CANCEL_KIND
from pqueue.spec import build_spec
from pqueue.worker.heartbeat import Heartbeat
from pqueue.worker.leases import LeaseBook
from tests.conftest import only_backends
from tests.worker.conftest import MakeWorker, eventually, running
from tests.worker.test_drain import _read_until, _spawn

CANCEL_WITHIN = 2.0
"""Seconds within which a cancel must have stopped the handler (the issue's bound)."""


def _ended_clean(worker_counters: dict[str, int]) -> bool:
    return all(worker_counters[k] == 0 for k in ("retried", "dead", "lost", "completed"))


async def _cancelled_job(client: AsyncClient, job_id: str) -> Job:
    job = await client.get_job(job_id)
    assert job.status is JobStatus.CANCELLED and job.attempt == 1
    assert job.last_error is not None and job.last_error.kind == CANCEL_KIND
    return job


async def test_cancel_of_a_running_async_job_cancels_its_task(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    started = asyncio.Event()
    seen: list[bool] = []

    @router.task("hang:async")
    async def hang(job: Job) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append(job.cancelled())
            raise
        return "unreachable"

    job_id = (await client.enqueue_task(hang.task())).id
    async with running(make_worker(router)) as worker:
        await eventually(started.is_set, what="the handler to start")
        assert await client.cancel(job_id) is True
        await eventually(lambda: worker.counters.cancelled == 1, timeout=CANCEL_WITHIN, what="cancel")
        await _cancelled_job(client, job_id)
        assert worker.held == 0
    assert seen == [True] and _ended_clean(worker.counters.as_dict())
    assert await client.cancel(job_id) is False  # finished: nothing changes


async def test_cancel_of_a_running_sync_job_turns_job_cancelled_true(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    started = threading.Event()
    stopped: list[bool] = []

    @router.task("poll:sync")
    def poll(job: Job) -> str:
        started.set()
        deadline = time.monotonic() + 30
        while not job.cancelled() and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped.append(job.cancelled())
        return "stopped"

    job_id = (await client.enqueue_task(poll.task())).id
    async with running(make_worker(router)) as worker:
        await eventually(started.is_set, what="the handler to start")
        assert await client.cancel(job_id) is True
        await eventually(lambda: worker.counters.cancelled == 1, timeout=CANCEL_WITHIN, what="cancel")
        job = await _cancelled_job(client, job_id)
    assert stopped == [True] and job.result is None and _ended_clean(worker.counters.as_dict())


async def test_a_sync_handler_that_ignores_the_cancel_is_abandoned_after_the_grace(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    started, interrupted = threading.Event(), threading.Event()

    @router.task("spin:sync")
    def spin(job: Job) -> None:
        started.set()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # never looks at job.cancelled()
                pass
        finally:
            interrupted.set()

    job_id = (await client.enqueue_task(spin.task())).id
    async with running(make_worker(router, cancel_grace=0.2)) as worker:
        await eventually(started.is_set, what="the handler to start")
        assert await client.cancel(job_id) is True
        await eventually(lambda: worker.counters.cancelled == 1, timeout=10, what="the backstop")
        await eventually(interrupted.is_set, timeout=10, what="the handler thread to be interrupted")
        await _cancelled_job(client, job_id)
    assert _ended_clean(worker.counters.as_dict())


async def test_other_jobs_run_on(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()
    gate = asyncio.Event()
    started: list[int] = []

    @router.task("work")
    async def work(job: Job) -> int:
        started.append(int(job.payload))
        await gate.wait()
        return int(job.payload)

    first, second = await client.enqueue_many([work.task(1), work.task(2)])
    async with running(make_worker(router, concurrency=2)) as worker:
        await eventually(lambda: len(started) == 2, what="both jobs to start")
        assert await client.cancel(first.id) is True
        await eventually(lambda: worker.counters.cancelled == 1, timeout=CANCEL_WITHIN, what="cancel")
        gate.set()
        await eventually(lambda: worker.counters.completed == 1, what="the other job")
    assert (await client.get_job(second.id)).status is JobStatus.COMPLETED
    assert (await client.get_job(first.id)).status is JobStatus.CANCELLED


async def test_the_heartbeat_notices_a_cancel_whose_push_message_was_lost(broker: FullBroker) -> None:
    [result] = await broker.enqueue([build_spec("t", None)])
    [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    book = LeaseBook()
    book.add([lease])
    heard: list[list[str]] = []
    lost: list[object] = []
    info = WorkerInfo("w", "host", 1, ("default",), 1, 0.0)
    beat = Heartbeat(broker, book, info, lease=30, on_lost=lost.append, on_cancel=heard.append)
    assert await broker.cancel_active(result.id) is True  # nobody listens: the message is lost
    await beat.beat()
    assert heard == [[result.id]] and lost == []
    assert (await broker.get_job(result.id)).status is JobStatus.CANCELLED


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_cancel_reaches_a_worker_in_another_process(backend_dsn: str, broker: FullBroker) -> None:
    async with AsyncClient(backend_dsn) as client:  # the server's clock, as the worker process's
        await _cancel_across_processes(client, backend_dsn)


async def _cancel_across_processes(client: AsyncClient, backend_dsn: str) -> None:
    asleep = (await client.enqueue("cancel:async")).id
    polling = (await client.enqueue("cancel:sync")).id
    proc = _spawn(["-m", "tests.worker.apps.cancel_app", backend_dsn])
    try:
        await asyncio.to_thread(_read_until, proc, lambda ls: sum(x.startswith("started") for x in ls) == 2)
        assert await client.cancel(asleep) and await client.cancel(polling)
        lines = await asyncio.to_thread(
            _read_until, proc, lambda ls: sum(x.startswith("stopped") for x in ls) == 2, CANCEL_WITHIN + 3
        )
        assert f"stopped {asleep} cancelled-error" in lines
        assert f"stopped {polling} cancelled-flag" in lines
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 0, err
    for job_id in (asleep, polling):
        assert (await client.get_job(job_id)).status is JobStatus.CANCELLED
