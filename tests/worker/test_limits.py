"""Rate and concurrency limits with real workers (ADR 0110, docs/limits.md).

Memory runs its workers in this process; Redis and Postgres run ``pqueue worker``
processes. Every handler run is recorded (tests/worker/apps/limits_app.py), then checked:
no more than 2 of a key's jobs ever active at once across 4 busy workers, and 20/s across
2 processes within one token per second over 10 s.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from pqueue import AsyncClient, JobStatus, Task, Worker
from pqueue.broker import FullBroker
from tests.conftest import only_backends
from tests.records import record_lines
from tests.worker.apps import limits_app
from tests.worker.conftest import eventually, running

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.worker.apps.limits_app:router"


def start_process(
    dsn: str, record: Path, *, concurrency: int = 4, lease: float = 30
) -> subprocess.Popen[bytes]:
    flags = ["--queues", "default", "--concurrency", str(concurrency), "--lease", str(lease)]
    return subprocess.Popen(
        [sys.executable, "-m", "pqueue", "worker", APP, "--dsn", dsn, *flags, "--log-level", "WARNING"],
        cwd=ROOT,
        env={**os.environ, "PQUEUE_TEST_RECORD": str(record)},
    )


@asynccontextmanager
async def workers(backend_name: str, dsn: str, record: Path, n: int, **options: Any) -> AsyncIterator[None]:
    """``n`` workers serving ``dsn``: in this process for memory, else ``pqueue worker`` processes."""
    if backend_name == "memory":
        async with AsyncExitStack() as stack:
            for _ in range(n):
                worker = Worker(
                    dsn, limits_app.router, queues=["default"], concurrency=options.get("concurrency", 4)
                )
                await stack.enter_async_context(running(worker))
            yield
        return
    procs = [start_process(dsn, record, **options) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(30)


def runs(record: Path) -> list[tuple[str, str, str, float, int]]:
    return [(event, job, key, float(at), int(pid)) for event, job, key, at, pid in record_lines(record)]


def most_at_once(record: Path, key: str) -> int:
    """The largest number of ``key``'s recorded runs that overlapped in time."""
    edges = sorted(
        (at, 1 if event == "start" else -1) for event, _, k, at, _ in runs(record) if k == key
    )  # at equal times an end (-1) sorts before a start: touching runs do not overlap
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


async def all_done(client: AsyncClient, n: int) -> bool:
    return (await client.stats()).total(JobStatus.COMPLETED) == n


async def test_concurrency_2_on_a_key_holds_across_4_busy_workers(
    backend_name: str,
    backend_dsn: str,
    pqueue_open_broker: object,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    record = tmp_path / "runs.log"
    monkeypatch.setenv("PQUEUE_TEST_RECORD", str(record))  # for in-process workers
    async with AsyncClient(backend_dsn, router=limits_app.router) as client:
        tasks = [Task("limits:tenant", {"tenant": "acme", "sleep": 0.05}) for _ in range(24)]
        tasks += [Task("limits:tenant", {"tenant": "globex", "sleep": 0.05}) for _ in range(8)]
        await client.enqueue_many(tasks)
        async with workers(backend_name, backend_dsn, record, 4):
            await eventually(lambda: all_done(client, 32), timeout=90, what="all jobs done")
        assert most_at_once(record, "acme") == 2  # reached, never passed
        assert most_at_once(record, "globex") == 2
        mixed = [(e, k) for e, _, k, _, _ in runs(record)]
        first_globex = mixed.index(("start", "globex"))
        assert ("start", "acme") in mixed[first_globex:]  # one busy key did not block the other


@pytest.mark.slow
async def test_rate_20_per_second_across_2_workers_holds_over_10_seconds(
    backend_name: str,
    backend_dsn: str,
    pqueue_open_broker: object,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    record = tmp_path / "runs.log"
    monkeypatch.setenv("PQUEUE_TEST_RECORD", str(record))  # for in-process workers
    async with AsyncClient(backend_dsn, router=limits_app.router) as client:
        await client.enqueue_many([Task("limits:rated", None) for _ in range(260)])
        async with workers(backend_name, backend_dsn, record, 2):
            await eventually(lambda: len(runs(record)) >= 230, timeout=60, what="12 s of runs")
        starts = sorted(at for _, _, _, at, _ in runs(record))
        pids = {pid for _, _, _, _, pid in runs(record)}
    window = [at for at in starts if starts[0] <= at < starts[0] + 10.0]
    assert 190 <= len(window) <= 210, f"{len(window)} starts in 10 s at 20/s"
    if backend_name != "memory":
        assert len(pids) == 2  # both processes took part


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_killed_workers_slot_returns_with_its_lease(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    async with AsyncClient(backend_dsn, router=limits_app.router) as client:
        slow = [Task("limits:tenant", {"tenant": "solo", "sleep": 30}, max_retries=0) for _ in range(2)]
        await client.enqueue_many(slow)
        first = start_process(backend_dsn, record, lease=1)
        try:
            await eventually(lambda: len(runs(record)) >= 2, timeout=60, what="both slots taken")
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        quick = await client.enqueue_many(
            [Task("limits:tenant", {"tenant": "solo", "sleep": 0.01}) for _ in range(3)]
        )
        second = start_process(backend_dsn, record, lease=1)
        try:
            for result in quick:  # the killed worker's two slots came back when its leases expired
                await eventually(
                    lambda r=result: _completed(client, r.id), timeout=60, what="a job behind the dead slots"
                )
        finally:
            second.send_signal(signal.SIGKILL)
            second.wait(30)


async def _completed(client: AsyncClient, job_id: str) -> bool:
    return (await client.get_job(job_id)).status is JobStatus.COMPLETED


async def test_a_held_back_worker_does_not_spin(
    backend_name: str,
    backend_dsn: str,
    pqueue_open_broker: object,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    record = tmp_path / "runs.log"
    os.environ["PQUEUE_TEST_RECORD"] = str(record)
    async with AsyncClient(backend_dsn, router=limits_app.router) as client:
        await client.enqueue_many([Task("limits:tenant", {"tenant": "busy", "sleep": 2.0}) for _ in range(4)])
        claims = 0
        real: Callable[..., Any] = type(client.broker).claim

        async def counting(self: FullBroker, *args: Any, **kwargs: Any) -> Any:
            nonlocal claims
            claims += 1
            return await real(self, *args, **kwargs)

        monkeypatch.setattr(type(client.broker), "claim", counting)
        worker = Worker(backend_dsn, limits_app.router, queues=["default"], concurrency=8, poll_interval=0.5)
        async with running(worker):
            await eventually(lambda: len(runs(record)) >= 2, what="both slots taken")
            before, started = claims, time.monotonic()
            await asyncio.sleep(1.5)  # two jobs run, two wait for a slot the whole time
            during = claims - before
            assert len(runs(record)) == 2
        assert during <= 1.5 / 0.5 + 2, (
            f"{during} claims in {time.monotonic() - started:.1f} s while held back"
        )
