"""Graceful drain: stop claiming at once, let running jobs finish, hand back the rest, exit 0."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest

from pqueue import AsyncClient, Job, JobStatus, Router, Task
from tests.worker.conftest import MakeWorker, eventually


async def test_drain_lets_running_jobs_finish_and_claims_nothing_new(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    gate = asyncio.Event()
    started: list[str] = []

    @router.task("work")
    async def work(job: Job) -> int:
        started.append(job.id)
        await gate.wait()
        return int(job.payload)

    results = await client.enqueue_many([Task("work", i) for i in range(6)])
    worker = make_worker(router, concurrency=2)
    serving = asyncio.create_task(worker.serve())
    await eventually(lambda: len(started) == 2)
    worker.stop()
    await eventually(lambda: not worker.is_running)
    await asyncio.sleep(0.05)  # a claim loop that kept going would take more jobs now
    assert not serving.done() and len(started) == 2 and worker.counters.claimed == 2
    gate.set()
    await asyncio.wait_for(serving, 30)
    jobs = {r.id: await client.get_job(r.id) for r in results}
    assert {jobs[i].status for i in started} == {JobStatus.COMPLETED}
    rest = [job for job_id, job in jobs.items() if job_id not in started]
    assert [(j.status, j.attempt) for j in rest] == [(JobStatus.PENDING, 0)] * 4


async def test_a_job_enqueued_as_an_idle_worker_stops_is_left_for_others_unrun(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    """An idle worker may still be parked (Redis hand-off) when it stops: a job leased to
    it then is given back at close, never run and never left active."""
    router = Router()
    ran: list[str] = []

    @router.task("work")
    async def work(job: Job) -> None:
        ran.append(job.id)

    worker = make_worker(router, concurrency=2, poll_interval=5.0)  # long waits: stays parked
    serving = asyncio.create_task(worker.serve())
    await eventually(lambda: worker.is_running)
    await asyncio.sleep(0.3)  # idle, waiting for work
    worker.stop()
    result = await client.enqueue("work", 1)
    await asyncio.wait_for(serving, 30)
    job = await client.get_job(result.id)
    if ran:  # claimed before the stop took effect: then it ran to the end
        assert (job.status, ran) == (JobStatus.COMPLETED, [result.id])
    else:  # pending again, with no attempt spent, and claimable by the next worker
        assert (job.status, job.attempt) == (JobStatus.PENDING, 0)
        [lease] = await client.broker.claim(["default"], worker_id="next", limit=1, lease_for=30)
        assert lease.job.id == result.id


async def test_drain_past_the_timeout_hands_back_unfinished_jobs(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    never = asyncio.Event()
    release_thread = threading.Event()
    started: list[str] = []
    cancelled: list[str] = []

    @router.task("stuck:async")
    async def stuck_async(job: Job) -> None:
        started.append(job.id)
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise

    @router.task("stuck:sync")
    def stuck_sync(job: Job) -> None:
        started.append(job.id)
        release_thread.wait(30)  # blocked in C: only the lease can be handed back

    a = (await client.enqueue("stuck:async", max_retries=0)).id
    s = (await client.enqueue("stuck:sync", max_retries=0)).id
    worker = make_worker(router, concurrency=2, shutdown_timeout=0.3)
    serving = asyncio.create_task(worker.serve())
    try:
        await eventually(lambda: len(started) == 2)
        worker.stop()
        await asyncio.wait_for(serving, 30)
    finally:
        release_thread.set()
    for job_id in (a, s):
        job = await client.get_job(job_id)
        assert (job.status, job.attempt, job.recoveries, job.errors) == (JobStatus.PENDING, 0, 0, ())
    assert cancelled == [a] and (worker.counters.cancelled, worker.counters.released) == (2, 0)


async def test_a_job_handed_back_at_the_shutdown_timeout_is_logged_with_its_run_time(
    client: AsyncClient, make_worker: MakeWorker, caplog: pytest.LogCaptureFixture
) -> None:
    """The log says how long the handler ran before the drain gave up on it (not 0.000s)."""
    router = Router()
    never = asyncio.Event()
    started: list[str] = []

    @router.task("stuck")
    async def stuck(job: Job) -> None:
        started.append(job.id)
        await never.wait()

    job_id = (await client.enqueue("stuck")).id
    worker = make_worker(router, concurrency=1, shutdown_timeout=0.3)
    with caplog.at_level(logging.INFO, logger="pqueue.job"):
        serving = asyncio.create_task(worker.serve())
        await eventually(lambda: started == [job_id])
        worker.stop()
        await asyncio.wait_for(serving, 30)
    [record] = [r for r in caplog.records if r.name == "pqueue.job"]
    assert (record.job_id, record.outcome, record.reason) == (job_id, "cancelled", "shutdown timeout")  # type: ignore[attr-defined]
    # It ran from before the stop until the drain's timeout ran out: at least that long.
    assert record.duration >= 0.3  # type: ignore[attr-defined]
    assert f"after {record.duration:.3f}s (shutdown timeout)" in record.getMessage()  # type: ignore[attr-defined]


# -- the real process: SIGTERM, drain, exit code ------------------------------------------


def _spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )


def _read_until(
    proc: subprocess.Popen[str], done: Callable[[list[str]], bool], timeout: float = 60
) -> list[str]:
    """Collect stdout lines until ``done(lines)``; fail with stderr if the process ends first."""
    lines: list[str] = []
    result: list[str] = []

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.strip())
            if done(lines):
                result.append("ok")
                return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        proc.kill()
        pytest.fail(f"process output never satisfied the test; stdout={lines} stderr={proc.communicate()[1]}")
    return lines


@pytest.mark.parametrize("deliveries", [1, 2], ids=["once", "twice-at-once"])
def test_sigterm_drains_and_exits_zero(backend_dsn: str, pqueue_open_broker: object, deliveries: int) -> None:
    """Twice at once is how `timeout` and a process-group kill deliver one stop request."""
    proc = _spawn(["-m", "tests.worker.apps.drain_app", backend_dsn])
    _read_until(proc, lambda lines: sum(line.startswith("started") for line in lines) == 3)
    for _ in range(deliveries):
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    states = json.loads(out.strip().splitlines()[-1])
    assert states["quick"] == [["completed", 1]] * 2  # in flight at SIGTERM: finished
    assert states["long"] == [["pending", 0]]  # past shutdown_timeout: handed back unburnt
    assert states["queued"] == [["pending", 0]] * 3  # never claimed after the signal
