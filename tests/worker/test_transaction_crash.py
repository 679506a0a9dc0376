"""Exactly-once database effects under SIGKILL, with real worker processes (Postgres, SQLite).

Each job inserts a row keyed by its id and completes in the same transaction
(``job.transaction()``). Worker processes are killed with SIGKILL at random moments, and
one is killed for certain while it holds an uncommitted insert (the job whose first run
hangs there). Every job must end completed with exactly one row: none with zero, none
with two (the effects table has no unique key, so a double write would show). On SQLite
the open block holds the file's writer lock, so jobs complete one at a time: shorter holds
keep the run about as long as on Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
from psycopg import sql

from pqueue import AsyncClient, JobStatus, Task
from tests.conftest import only_backends, service_url
from tests.records import record_lines
from tests.worker.conftest import eventually

ROOT = Path(__file__).resolve().parents[2]
JOBS = 300
KILLS = 5


def start_worker(dsn: str, record: Path, table: str, app: str) -> subprocess.Popen[bytes]:
    flags = ["--queues", "default", "--concurrency", "4", "--lease", "1", "--log-level", "ERROR"]
    return subprocess.Popen(
        [sys.executable, "-m", "pqueue", "worker", app, "--dsn", dsn, *flags],
        cwd=ROOT,
        env={**os.environ, "PQUEUE_TEST_RECORD": str(record), "PQUEUE_TEST_EFFECTS": table},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def rows_per_job(url: str, table: str) -> Counter[str]:
    schema, name = table.split(".")
    query = sql.SQL("SELECT job_id::text FROM {}").format(sql.Identifier(schema, name))
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        return Counter(str(row[0]) for row in await (await conn.execute(query)).fetchall())


def sqlite_file(dsn: str) -> str:
    return dsn.removeprefix("sqlite://")


@only_backends("postgres")
async def test_sigkilled_workers_leave_exactly_one_row_per_completed_job(
    backend_dsn: str, namespace: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    url = service_url("postgres")
    assert url is not None
    table = f"{namespace}.effects"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        ddl = sql.SQL("CREATE TABLE {} (job_id uuid NOT NULL, pid int NOT NULL)")
        await conn.execute(ddl.format(sql.Identifier(namespace, "effects")))
    app = "tests.worker.apps.txn_app:router"
    await kill_and_count(
        backend_dsn,
        tmp_path,
        table=table,
        app=app,
        rows_now=lambda: rows_per_job(url, table),
        holds=(0.02, 0.15),
    )


@only_backends("sqlite")
async def test_sigkilled_sqlite_workers_leave_exactly_one_row_per_completed_job(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    path = sqlite_file(backend_dsn)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE effects (job_id TEXT NOT NULL, pid INTEGER NOT NULL)")

    async def rows() -> Counter[str]:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            return Counter(str(row[0]) for row in conn.execute("SELECT job_id FROM effects"))

    app = "tests.worker.apps.txn_sqlite_app:router"
    await kill_and_count(backend_dsn, tmp_path, table="effects", app=app, rows_now=rows, holds=(0.005, 0.03))


async def kill_and_count(
    backend_dsn: str,
    tmp_path: Path,
    *,
    table: str,
    app: str,
    rows_now: Callable[[], Awaitable[Counter[str]]],
    holds: tuple[float, float],
) -> None:
    """Run JOBS jobs on two worker processes of ``app``, kill them as the module says, and
    check every job completed with exactly one row."""
    record = tmp_path / "runs.log"
    rng = random.Random(os.environ.get("PQUEUE_TEST_SEED", "29"))
    async with AsyncClient(backend_dsn) as client:
        hung = (await client.enqueue("txn:effect", {"hold": holds[0], "hang": True})).id
        tasks = [Task("txn:effect", {"hold": rng.uniform(*holds)}) for _ in range(JOBS - 1)]
        ids = [hung, *(r.id for r in await client.enqueue_many(tasks))]
        workers = [start_worker(backend_dsn, record, table, app) for _ in range(2)]
        try:
            # The hung job's worker is killed with its insert uncommitted, for certain.
            def hung_inserted() -> list[int]:
                return [int(pid) for e, job, pid in record_lines(record) if e == "inserted" and job == hung]

            [pid] = await eventually(hung_inserted, timeout=30, what="the hanging job's insert")
            victim = next(w for w in workers if w.pid == pid)
            victim.send_signal(signal.SIGKILL)
            await asyncio.to_thread(victim.wait, 10)
            workers = [w for w in workers if w is not victim] + [
                start_worker(backend_dsn, record, table, app)
            ]
            # Then at random moments, most of which fall between an insert and its commit.
            for _ in range(KILLS):
                await asyncio.sleep(rng.uniform(0.3, 1.0))
                victim = workers.pop(rng.randrange(len(workers)))
                victim.send_signal(signal.SIGKILL)
                await asyncio.to_thread(victim.wait, 10)
                workers.append(start_worker(backend_dsn, record, table, app))

            async def all_completed() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == JOBS

            await eventually(all_completed, timeout=45, interval=0.1, what="every job to complete")
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGKILL)
                await asyncio.to_thread(worker.wait, 10)
        jobs = [await client.get_job(job_id) for job_id in ids]
    rows = await rows_now()
    assert all(job.status is JobStatus.COMPLETED for job in jobs)
    assert {job_id: rows[job_id] for job_id in ids if rows[job_id] != 1} == {}
    assert sum(rows.values()) == JOBS
    inserts = Counter(job for e, job, _ in record_lines(record) if e == "inserted")
    assert inserts[hung] >= 2 and rows[hung] == 1  # its first insert was rolled back by the kill
    rolled_back = sum(inserts.values()) - JOBS
    recovered = sum(1 for job in jobs if job.recoveries)
    print(f"{rolled_back} inserts rolled back by kills; {recovered} jobs recovered")
