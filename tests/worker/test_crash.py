"""Crash test with real processes: SIGKILL a worker mid-job; a fresh one finishes everything.

Needs a backend other processes can reach (Redis, Postgres, SQLite). Every job must complete,
none may be lost, and the only jobs that run twice are those the killed worker held at the
kill. On SQLite, "the killed worker's connections" is its hold on the file's writer lock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
from redis.asyncio import Redis

from pqueue import AsyncClient, JobStatus, Task
from tests.conftest import only_backends, service_url
from tests.records import record_lines
from tests.worker.conftest import eventually

ROOT = Path(__file__).resolve().parents[2]
JOBS = 40


def start_worker(dsn: str, record: Path) -> subprocess.Popen[bytes]:
    app = "tests.worker.apps.crash_app:router"
    flags = [
        "--queues",
        "default",
        "--concurrency",
        "4",
        "--lease",
        "1",
        "--shutdown-timeout",
        "10",
        "--log-level",
        "WARNING",
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "pqueue", "worker", app, "--dsn", dsn, *flags, "--log-level", "WARNING"],
        cwd=ROOT,
        env={**os.environ, "PQUEUE_TEST_RECORD": str(record)},
        stderr=subprocess.PIPE,
    )


def sqlite_lock_held(dsn: str) -> bool:
    """Whether some process holds the SQLite file's writer lock (tried once, never waited for)."""
    conn = sqlite3.connect(dsn.removeprefix("sqlite:///"), timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


async def server_sessions(backend_name: str, name: str) -> int:
    """How many connections named ``name`` the server still has (Redis CLIENT SETNAME,
    Postgres application_name)."""
    url = service_url(backend_name)
    assert url is not None
    if backend_name == "redis":
        redis = Redis.from_url(url)
        try:
            return sum(c.get("name") == name for c in await redis.client_list())
        finally:
            await redis.aclose()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
        row = await (await conn.execute(query, [name])).fetchone()
    assert row is not None
    return int(row[0])


def events(record: Path) -> list[tuple[str, str, int]]:
    return [(e, job, int(pid)) for e, job, pid in record_lines(record)]


@only_backends("redis", "postgres", "sqlite")
async def test_sigkill_mid_job_loses_nothing_and_repeats_only_held_jobs(
    backend_dsn: str, backend_name: str, namespace: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    # The killed worker's connections, by name: its last statements (an ack, say) may still be
    # running on the server after the process is gone. Under load they can finish after we
    # look, so "held" is read only once the server has closed every one of them.
    killed_name = f"pqueue/{namespace}/killed"
    first_dsn = f"{backend_dsn}&application_name={killed_name}" if backend_name == "postgres" else backend_dsn
    async with AsyncClient(backend_dsn) as client:
        ids = [
            r.id
            for r in await client.enqueue_many(
                [Task("crash:record", 0.3, max_retries=0) for _ in range(JOBS)]
            )
        ]
        first = start_worker(first_dsn, record)
        if backend_name == "redis":  # pqueue names its Redis connections after prefix, host and pid
            killed_name = f"pqueue:{namespace}:{socket.gethostname()}:{first.pid}"
        try:
            await eventually(
                lambda: sum(e == "start" for e, _, _ in events(record)) >= 10, timeout=60, what="jobs to run"
            )
            if backend_name != "sqlite":  # no sessions to name: its lock is checked below
                assert await server_sessions(backend_name, killed_name) > 0  # the name finds them
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)

        async def killed_sessions_closed() -> bool:
            if backend_name == "sqlite":  # the kernel let go of the dead process's locks
                return not sqlite_lock_held(backend_dsn)
            return await server_sessions(backend_name, killed_name) == 0

        await eventually(killed_sessions_closed, timeout=30, what="the killed worker's connections to close")
        held = {job.id for job in (await client.list_jobs(JobStatus.ACTIVE, limit=1000)).jobs}
        assert held, "the worker was killed while holding jobs"
        second = start_worker(backend_dsn, record)
        try:

            async def all_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == JOBS

            await eventually(all_done, timeout=120, what="every job to complete")
        finally:
            second.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(second.communicate, timeout=60)
        assert second.returncode == 0, err.decode()
        jobs = {job_id: await client.get_job(job_id) for job_id in ids}
    assert all(job.status is JobStatus.COMPLETED for job in jobs.values())
    starts = Counter(job for e, job, _ in events(record) if e == "start")
    ends = Counter(job for e, job, _ in events(record) if e == "end")
    assert set(ends) == set(ids)  # none lost: every job ran to its end
    repeated = {job for job, n in starts.items() if n > 1}
    assert repeated <= held  # the only repeats were held by the killed worker
    assert {job_id for job_id, job in jobs.items() if job.recoveries} == held
    assert all(jobs[job_id].attempt == 1 for job_id in ids)  # a crash burns no attempt
