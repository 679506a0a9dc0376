"""A broker error retrying cannot heal stops the worker: one ERROR, a failing probe, exit 3.

A damaged SQLite file or a schema dropped under a running worker is not an outage: the
worker used to log ``claim failed (...); retrying`` once a second, forever, while
``pqueue stats`` showed it dead. Now the first such error (:class:`BrokerUnusable`) logs
one ERROR naming what to do, fails the liveness probe, and the worker drains and exits
with code 3; ``pqueue health`` fails on the same file, naming the problem. Outages (a
refused connection, a stopped server, a busy file) are still retried and logged once:
tests/integration/*/test_restart.py keep proving it (ADR 0158).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pqueue import AsyncClient, BrokerUnusable, Job, JobStatus, Router, SchemaError, Task
from pqueue.broker import FullBroker
from tests.conftest import only_backends, service_url
from tests.worker.conftest import MakeWorker, eventually, running, settled
from tests.worker.test_crash import ROOT

DAMAGE = textwrap.dedent(
    """
    # Another process damages the file: the test's own process holds SQLite connections to
    # it, and must never open() it (ADR 0155). Pages first..last (1-based; <= 0 counts from
    # the end: 0 is the last page) become garbage.
    import sqlite3, sys, time
    path, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    conn = sqlite3.connect(path, timeout=30)
    for _ in range(200):  # every page into the file itself, none left in the WAL
        if conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
            break
        time.sleep(0.05)
    else:
        raise SystemExit("the WAL could not be checkpointed")
    conn.close()
    with open(path, "r+b") as file:
        size = int.from_bytes(file.read(100)[16:18], "big") or 65536
        pages = file.seek(0, 2) // size
        first, last = (n if n > 0 else pages + n for n in (first, last))
        for page in range(first, last + 1):
            file.seek((page - 1) * size)
            file.write(bytes.fromhex("deadbeef") * (size // 4))
    print(pages)
    """
)


def damage(path: str, first: int, last: int) -> int:
    """Overwrite pages ``first`` to ``last`` (1-based; <= 0 counts from the end: 0 is the last
    page) with garbage, from a separate process; returns how many pages the file has."""
    done = subprocess.run(
        [sys.executable, "-c", DAMAGE, path, str(first), str(last)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pqueue", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


def start_worker(dsn: str, record: Path) -> subprocess.Popen[str]:
    """``pqueue worker`` on the crash app, its log on a pipe."""
    return subprocess.Popen(
        [
            sys.executable, "-m", "pqueue", "worker", "tests.worker.apps.crash_app:router",
            "--dsn", dsn, "--queues", "default", "--lease", "5", "--shutdown-timeout", "5",
        ],
        cwd=ROOT,
        env={**os.environ, "PQUEUE_TEST_RECORD": str(record)},
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def path_of(dsn: str) -> str:
    return dsn.removeprefix("sqlite:///")


@only_backends("sqlite")
async def test_a_worker_whose_file_is_damaged_logs_one_error_and_exits_3(
    backend_dsn: str, tmp_path: Path
) -> None:
    path = path_of(backend_dsn)
    worker = start_worker(backend_dsn, tmp_path / "record")
    try:
        async with AsyncClient(backend_dsn) as client:
            jobs = await client.enqueue_many([Task("crash:record", 0.0) for _ in range(50)])
            for job in jobs:  # the worker runs: it has read the file
                await settled(client, job.id, timeout=60)
        pages = damage(path, 2, -1)  # every page but the first (the header) and the last
        assert pages > 3
        code = await asyncio.to_thread(worker.wait, 60)
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
    log = worker.stderr.read() if worker.stderr is not None else ""
    lines = log.splitlines()
    errors = [line for line in lines if " ERROR " in line]
    assert code == 3, log
    assert len(errors) == 1, log
    assert "is damaged (database disk image is malformed)" in errors[0] and ".recover" in errors[0], log
    assert not [line for line in lines if "retrying" in line], log

    health = cli("health", "--dsn", backend_dsn)
    assert health.returncode == 1
    assert "is damaged" in health.stderr and len(health.stderr.strip().splitlines()) == 1, health.stderr


@only_backends("sqlite")
async def test_health_reads_every_page_of_the_file(backend_dsn: str) -> None:
    """A damaged page that the schema check never reads (the newest jobs) still fails
    ``pqueue health``: it runs SQLite's ``quick_check``."""
    async with AsyncClient(backend_dsn) as client:
        await client.enqueue_many([Task("anything", {"pad": "x" * 500}) for _ in range(400)])
    assert cli("health", "--dsn", backend_dsn).returncode == 0
    damage(path_of(backend_dsn), -2, 0)  # the last three pages: rows and index entries of the newest jobs
    health = cli("health", "--dsn", backend_dsn)
    assert health.returncode == 1, health.stdout
    assert "is damaged" in health.stderr and len(health.stderr.strip().splitlines()) == 1, health.stderr


async def _drop_storage(backend_name: str, namespace: str, broker: FullBroker) -> None:
    """Remove the queue's tables from under the workers (an operator's mistake)."""
    if backend_name == "postgres":
        url = service_url("postgres")
        assert url is not None
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(namespace)))
        return
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(str(broker.config.path), timeout=30)) as conn:  # type: ignore[attr-defined]
        conn.execute("DROP TABLE jobs")


@only_backends("postgres", "sqlite")
async def test_storage_dropped_under_a_worker_stops_it_with_one_error(
    backend_name: str,
    namespace: str,
    broker: FullBroker,
    *,
    client: AsyncClient,
    make_worker: MakeWorker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The worker stops on the first error, fails its liveness probe while it drains (a job
    still runs), and ``serve`` raises the error afterwards."""
    router = Router()
    running_job = asyncio.Event()
    finish = asyncio.Event()

    @router.task("hold")
    async def hold(job: Job) -> None:
        running_job.set()
        await finish.wait()

    worker = make_worker(router)
    caplog.set_level(logging.DEBUG, logger="pqueue")
    with pytest.raises(BrokerUnusable) as raised:
        async with running(worker):
            await client.enqueue("hold", {})
            await asyncio.wait_for(running_job.wait(), 20)
            assert await asyncio.to_thread(worker.responsive)  # as the metrics port's /healthz asks
            await _drop_storage(backend_name, namespace, broker)
            await eventually(lambda: worker.failure is not None, what="the worker to meet the dropped tables")
            assert not await asyncio.to_thread(worker.responsive)  # /healthz fails while it drains
            finish.set()
    assert isinstance(raised.value, SchemaError) and raised.value is worker.failure
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, caplog.text
    assert "not an outage: the worker stops (exit code 3)" in errors[0].getMessage()
    assert not [r for r in caplog.records if r.levelno == logging.WARNING and "retrying" in r.getMessage()]


async def test_a_backend_error_retrying_can_heal_is_not_fatal(
    client: AsyncClient, make_worker: MakeWorker, broker: FullBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain BrokerError (or an outage) in a claim is still retried: the job then runs."""
    from pqueue import BrokerError, BrokerUnavailable

    router = Router()

    @router.task("fine")
    async def fine(job: Job) -> None:
        return None

    real_claim = type(broker).claim
    failures: list[Exception] = [BrokerError("a hiccup"), BrokerUnavailable("an outage")]

    async def flaky_claim(self: object, *args: object, **kwargs: object) -> object:
        if failures:
            raise failures.pop()
        return await real_claim(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(broker), "claim", flaky_claim)
    job_id = (await client.enqueue("fine")).id
    worker = make_worker(router)
    async with running(worker):
        done = await settled(client, job_id)
    assert done.status is JobStatus.COMPLETED and worker.failure is None


def test_the_backends_translate_what_no_retry_heals_as_unusable() -> None:
    """At the error-translation edge: damage and a missing schema are BrokerUnusable; a busy
    file, a lost connection, a failed login stay errors the worker retries."""
    import sqlite3

    from psycopg import errors as pg_errors

    from pqueue import BrokerError, BrokerUnavailable
    from pqueue.brokers.postgres.connection import translated as pg_translated
    from pqueue.brokers.sqlite.config import SqliteConfig
    from pqueue.brokers.sqlite.connection import translated as sqlite_translated

    def pg(exc: Exception) -> type[BaseException]:
        with pytest.raises(BrokerError) as raised, pg_translated("pqueue"):
            raise exc
        return type(raised.value)

    assert pg(pg_errors.IndexCorrupted("index 'jobs_live' contains unexpected zero page")) is BrokerUnusable
    assert pg(pg_errors.DataCorrupted("invalid page in block 7")) is BrokerUnusable
    assert pg(pg_errors.UndefinedColumn('column "priority" does not exist')) is SchemaError
    assert pg(pg_errors.UndefinedTable('relation "pqueue.jobs" does not exist')) is SchemaError
    assert pg(psycopg.OperationalError("password authentication failed for user 'app'")) is BrokerUnavailable

    def lite(exc: sqlite3.Error, code: int) -> type[BaseException]:
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]  # as sqlite3 sets it
        with pytest.raises(Exception) as raised, sqlite_translated(SqliteConfig(path="/tmp/q.db")):
            raise exc
        return type(raised.value)

    assert (
        lite(sqlite3.DatabaseError("database disk image is malformed"), sqlite3.SQLITE_CORRUPT)
        is BrokerUnusable
    )
    assert lite(sqlite3.DatabaseError("file is not a database"), sqlite3.SQLITE_NOTADB) is SchemaError
    assert lite(sqlite3.OperationalError("database is locked"), sqlite3.SQLITE_BUSY) is BrokerUnavailable
    assert issubclass(SchemaError, BrokerUnusable) and not issubclass(BrokerUnavailable, BrokerUnusable)
