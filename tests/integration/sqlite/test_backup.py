"""A backup taken with ``VACUUM INTO`` while a worker runs is a consistent pqueue database:
it opens at the current version and holds every job, each in one status."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pqueue
from pqueue import AsyncClient, JobStatus, Task
from pqueue.brokers.sqlite import migrate
from tests.worker.conftest import eventually

ROOT = Path(__file__).resolve().parents[3]
JOBS = 40


def _backup(source: Path, target: Path) -> None:
    with closing(sqlite3.connect(source)) as conn:
        conn.execute("VACUUM INTO ?", (str(target),))


def _start_worker(dsn: str, record: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record), "PYTHONPATH": os.pathsep.join(sys.path)}
    app = "tests.worker.apps.crash_app:router"
    command = [sys.executable, "-m", "pqueue", "worker", app, "--dsn", dsn, "--concurrency", "4"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE)


async def test_vacuum_into_while_a_worker_runs(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path}/jobs.db"
    migrate(dsn)
    worker = _start_worker(dsn, tmp_path / "runs.log")
    try:
        async with AsyncClient(dsn) as client:
            await client.enqueue_many([Task("crash:record", 0.05) for _ in range(JOBS)])

            async def some_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) >= 4

            await eventually(some_done, timeout=60, what="some jobs to complete")
            await asyncio.to_thread(_backup, tmp_path / "jobs.db", tmp_path / "copy.db")
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(worker.communicate, timeout=60)
    assert worker.returncode == 0, err.decode()
    async with pqueue.connect(f"sqlite:///{tmp_path}/copy.db") as copy:
        assert "at version" in await copy.check_health()
        counts = (await copy.counts())["default"]
    assert sum(counts.values()) == JOBS
    assert counts[JobStatus.COMPLETED] >= 4
