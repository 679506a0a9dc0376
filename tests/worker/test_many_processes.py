"""Many processes on one broker: two workers run while short-lived processes (``pqueue
enqueue``, ``pqueue stats``, a sync ``Client``) and ``pqueue serve`` open it, use it and exit.

This is the README Quickstart's own setup. On SQLite it once corrupted the file: opening
the database file with ``open()`` and closing it dropped every POSIX lock the process held
on it, so another process's close deleted the WAL under the workers (ADR 0155). Every job
must complete, the WAL must still be there while the workers run, and the file must pass
``integrity_check`` afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import httpx

from pqueue import AsyncClient, JobStatus
from tests.conftest import only_backends
from tests.web.browser import serving
from tests.web.conftest import ADMIN, bearer
from tests.worker.conftest import eventually
from tests.worker.test_crash import ROOT, start_worker

ROUNDS = 3
CLIENT = """
import sys, pqueue
with pqueue.Client(sys.argv[1]) as client:
    jobs = client.enqueue_many([pqueue.Task("crash:record", 0.01) for _ in range(3)])
    assert all(client.get_job(job.id).status.value for job in jobs)
"""


def run(*args: str) -> str:
    """A short-lived process: it opens the broker, does one thing and exits (0, or fail)."""
    done = subprocess.run(args, check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (args[2:4], done.stderr)
    return done.stdout


def cli(*args: str) -> str:
    return run(sys.executable, "-m", "pqueue", *args)


def has_wal(path: str) -> bool:
    return os.path.exists(path + "-wal")


def integrity(path: str) -> str:
    with closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


async def short_lived_round(dsn: str) -> int:
    """One ``pqueue enqueue``, one ``pqueue stats`` and a sync client enqueuing three jobs,
    each its own process; returns how many jobs were enqueued."""
    await asyncio.to_thread(cli, "enqueue", "crash:record", "--payload", "0.01", "--dsn", dsn)
    await asyncio.to_thread(cli, "stats", "--dsn", dsn, "--json")
    await asyncio.to_thread(run, sys.executable, "-c", CLIENT, dsn)
    return 1 + 3


async def served_round(base: str) -> int:
    """One job posted to ``pqueue serve`` and its ``/stats`` read."""
    posted = await asyncio.to_thread(
        httpx.post,
        base + "jobs",
        json={"type": "crash:record", "payload": 0.01},
        headers=bearer(ADMIN),
        timeout=30,
    )
    assert posted.status_code == 201, posted.text
    assert (await asyncio.to_thread(httpx.get, base + "stats", headers=bearer(ADMIN), timeout=30)).is_success
    return 1


async def workers_alive(client: AsyncClient) -> bool:
    return len(await client.list_workers()) >= 2


@only_backends("sqlite", "redis", "postgres")
async def test_short_lived_processes_beside_running_workers_lose_nothing(
    backend_dsn: str, backend_name: str, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    path = backend_dsn.removeprefix("sqlite:///")
    workers = [start_worker(backend_dsn, record) for _ in range(2)]
    expected = 0
    try:
        async with AsyncClient(backend_dsn) as client:  # closed again: this process keeps nothing open
            await eventually(lambda: workers_alive(client), timeout=60, what="both workers to start")
        # First with nothing else holding the file open (a served process would keep the WAL
        # alive and hide a worker's lost locks), then beside ``pqueue serve``.
        for _ in range(ROUNDS):
            expected += await short_lived_round(backend_dsn)
            if backend_name == "sqlite":  # the others' last close must leave the workers' WAL
                assert has_wal(path)
        with serving(backend_dsn, {"PQUEUE_API_TOKEN": ADMIN}) as base:
            expected += await short_lived_round(backend_dsn) + await served_round(base)
        async with AsyncClient(backend_dsn) as client:

            async def all_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == expected

            await eventually(all_done, timeout=60, what=f"all {expected} jobs to complete")
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        exits = [await asyncio.to_thread(worker.communicate, timeout=60) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], [err.decode()[-2000:] for _, err in exits]
    if backend_name == "sqlite":
        assert integrity(path) == "ok"
