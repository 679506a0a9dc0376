"""``pqueue migrate`` on a file that workers are using is safe: it finds nothing to do, takes
the writer lock only for a moment, and the workers finish every job meanwhile."""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pqueue import AsyncClient, Job, JobStatus, Router, Task
from pqueue.brokers.sqlite import migrate, sql
from pqueue.testing.burst import run_until_empty_async
from tests.worker.conftest import eventually

ROOT = Path(__file__).resolve().parents[3]
# the module: the package's own `migrate` is the function
migrate_module = importlib.import_module("pqueue.brokers.sqlite.migrate")
JOBS = 30


def _run(*args: str, record: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record), "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "pqueue", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE)


async def test_a_second_migrate_while_workers_run_is_safe(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path}/jobs.db"
    record = tmp_path / "runs.log"
    assert migrate(dsn) == [m.version for m in sql.migrations()]
    worker = _run(
        "worker", "tests.worker.apps.crash_app:router", "--dsn", dsn, "--concurrency", "4", record=record
    )
    try:
        async with AsyncClient(dsn) as client:
            await client.enqueue_many([Task("crash:record", 0.05) for _ in range(JOBS)])
            migrators = [_run("migrate", "--dsn", dsn, record=record) for _ in range(2)]
            outputs = [await asyncio.to_thread(m.communicate, timeout=60) for m in migrators]
            assert [m.returncode for m in migrators] == [0, 0], outputs
            assert all(b"nothing to do" in out for out, _ in outputs)

            async def all_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == JOBS

            await eventually(all_done, timeout=60, what="every job to complete")
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(worker.communicate, timeout=60)
    assert worker.returncode == 0, err.decode()


async def test_a_version_1_file_is_upgraded_and_keeps_its_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file made before 0002_unique_until_done: ``migrate`` applies 0002 and what
    followed, the job stored before it is still there, and a key held until done is freed
    by its ack."""
    dsn = f"sqlite:///{tmp_path}/old.db"
    with monkeypatch.context() as old:
        old.setattr(migrate_module, "migrations", lambda: sql.migrations()[:1])
        old.setattr(migrate_module, "latest_version", lambda: 1)
        assert migrate(dsn) == [1]
        with sqlite3.connect(tmp_path / "old.db") as conn:
            conn.execute(
                "INSERT INTO unique_keys (queue, key, job_id, expires_at) VALUES ('q', 'k', 'j', 1e12)"
            )
    assert migrate(dsn) == [m.version for m in sql.migrations()[1:]]
    async with AsyncClient(dsn) as client:
        first = await client.enqueue("crm:sync", {}, unique_key="crm", unique_for=3600, unique_until="done")
        assert first.created
        [lease] = await client.broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
        assert await client.broker.ack([lease]) == [True]
        again = await client.enqueue("crm:sync", {}, unique_key="crm", unique_for=3600, unique_until="done")
        assert again.created and again.id != first.id
    with sqlite3.connect(tmp_path / "old.db") as conn:
        assert conn.execute("SELECT job_id, until_done FROM unique_keys WHERE key = 'k'").fetchall() == [
            ("j", 0)
        ]


async def test_jobs_stored_before_unset_options_keep_their_stored_max_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file at the version before ``unset_options`` holding a job as that pqueue stored
    it: after ``migrate`` the job keeps its stored max_retries (it has no record of what
    was left unset), while a new job left unset takes its handler's (ADR 0157)."""
    dsn = f"sqlite:///{tmp_path}/v2.db"
    old_job = "01a21846-6f63-71c7-8a07-71f988ac9100"
    [mine] = [m.version for m in sql.migrations() if m.name == "unset_options"]
    with monkeypatch.context() as old:
        old.setattr(migrate_module, "migrations", lambda: sql.migrations()[: mine - 1])
        old.setattr(migrate_module, "latest_version", lambda: mine - 1)
        assert migrate(dsn) == list(range(1, mine))
        with sqlite3.connect(tmp_path / "v2.db") as conn:
            conn.execute(
                "INSERT INTO jobs (id, seq, status, queue, type, payload, run_at, created_at, "
                "max_retries, max_recoveries) VALUES (?, 1, 'pending', 'default', 'charge:card', "
                "'{}', 0, 0, 3, 5)",
                [old_job],
            )
    assert migrate(dsn) == [m.version for m in sql.migrations()[mine - 1 :]]
    router = Router()

    @router.task("charge:card", max_retries=1, retry=lambda attempt, error, job: 0.0)
    async def charge(job: Job) -> None:
        raise RuntimeError("declined")

    async with AsyncClient(dsn) as client:
        old_stored = await client.get_job(old_job)
        assert (old_stored.max_retries, old_stored.unset) == (3, frozenset())
        new = await client.enqueue("charge:card")
        ran = await run_until_empty_async(client, router)
    assert Counter(report.job.id for report in ran) == {old_job: 4, new.id: 2}
