"""``job.transaction()`` on SQLite: the handler's rows and its job's completion commit together.

The handler writes on a ``sqlite3.Connection`` to a table in the queue's own file; the
ack runs in the same ``BEGIN IMMEDIATE`` transaction (ADR 0151, pqueue.brokers.sqlite.completion).
The crash proof with real processes is tests/worker/test_transaction_crash.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import pqueue
from pqueue import AsyncClient, Job, JobStatus, LeaseLost, Router
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from tests.conftest import only_backends
from tests.worker.conftest import MakeWorker, eventually, running, settled

INSERT = "INSERT INTO effects (job_id, note) VALUES (?, ?)"


def _path(broker: FullBroker) -> str:
    return str(broker.config.path)  # type: ignore[attr-defined]


@pytest.fixture
def effects(broker: FullBroker) -> Iterator[str]:
    """A table ``effects`` in the queue's file (no unique key: a double write would show);
    yields the file's path."""
    path = _path(broker)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE effects (job_id TEXT NOT NULL, note TEXT NOT NULL)")
    yield path


def rows_of(path: str) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [(str(a), str(b)) for a, b in conn.execute("SELECT job_id, note FROM effects ORDER BY note")]


@only_backends("sqlite")
async def test_the_handlers_row_and_the_completion_commit_together(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    router = Router()

    @router.task("write")
    async def write(job: Job) -> str:
        tx = job.transaction()
        async with tx as conn:
            assert isinstance(conn, sqlite3.Connection) and conn.in_transaction
            conn.execute(INSERT, [job.id, "async"])
            tx.result = {"wrote": 1}
        return "ignored: the job is completed already"

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("write", {})).id
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED and job.result == {"wrote": 1}
    assert rows_of(effects) == [(job_id, "async")]
    assert worker.counters.completed == 1 and worker.counters.lost == 0


@only_backends("sqlite")
async def test_a_raise_in_the_block_rolls_the_row_back_and_the_job_retries(
    client: AsyncClient, make_worker: MakeWorker, effects: str, clock: ManualClock
) -> None:
    router = Router()
    runs: list[int] = []

    @router.task("flaky", max_retries=1)
    async def flaky(job: Job) -> None:
        runs.append(job.attempt)
        async with job.transaction() as conn:
            conn.execute(INSERT, [job.id, f"run {job.attempt}"])
            if job.attempt == 1:
                raise RuntimeError("after the insert")

    async with running(make_worker(router)):
        job_id = (await client.enqueue("flaky", {})).id
        job = await settled(client, job_id, JobStatus.RETRY)
        assert rows_of(effects) == []
        assert job.last_error is not None and job.last_error.message == "after the insert"
        clock.advance(3600)
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED and runs == [1, 2]
    assert rows_of(effects) == [(job_id, "run 2")]


@only_backends("sqlite")
async def test_a_sync_handler_completes_in_its_transaction(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    router = Router()

    @router.task("write_sync")
    def write_sync(job: Job) -> None:
        with job.transaction() as conn:
            conn.execute(INSERT, [job.id, "sync"])

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("write_sync", {})).id
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED
    assert rows_of(effects) == [(job_id, "sync")]
    assert worker.counters.completed == 1


@only_backends("sqlite")
async def test_the_handlers_own_connection_completes_with_its_statements(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    router = Router()

    @router.task("own")
    def own(job: Job) -> None:
        conn = sqlite3.connect(effects, timeout=10)
        try:
            conn.execute(INSERT, [job.id, "before the block"])  # its implicit transaction joins
            with job.transaction(conn) as same:
                assert same is conn
                conn.execute(INSERT, [job.id, "in the block"])
        finally:
            conn.close()

    async with running(make_worker(router)):
        job = await settled(client, (await client.enqueue("own", {})).id)
    assert job.status is JobStatus.COMPLETED
    assert rows_of(effects) == [(job.id, "before the block"), (job.id, "in the block")]


@only_backends("sqlite")
async def test_a_connection_on_another_file_is_refused_and_writes_nothing(
    client: AsyncClient, make_worker: MakeWorker, effects: str, tmp_path: Path
) -> None:
    other = str(tmp_path / "other.db")
    router = Router()

    @router.task("elsewhere")
    def elsewhere(job: Job) -> None:
        conn = sqlite3.connect(other)
        try:
            with job.transaction(conn):
                pass
        finally:
            conn.close()

    async with running(make_worker(router)):
        job = await settled(client, (await client.enqueue("elsewhere", {}, max_retries=0)).id)
    assert job.status is JobStatus.DEAD and job.last_error is not None
    assert job.last_error.kind == "InvalidRequest" and "other.db" in job.last_error.message


@only_backends("sqlite")
async def test_a_lease_lost_before_the_block_rolls_the_handlers_row_back(
    client: AsyncClient, make_worker: MakeWorker, effects: str, broker: FullBroker, clock: ManualClock
) -> None:
    """A zombie: its lease is taken back before its block (inside, the block holds the
    file's writer lock, so nothing can take it then); the ack finds a new token, the block
    raises LeaseLost and the insert never lands."""
    router = Router()
    waiting = asyncio.Event()
    go_on = asyncio.Event()
    raised: list[BaseException] = []

    @router.task("zombie")
    async def zombie(job: Job) -> None:
        if job.recoveries == 0:
            waiting.set()
            await go_on.wait()
        try:
            async with job.transaction() as conn:
                conn.execute(INSERT, [job.id, f"run {job.recoveries}"])
        except LeaseLost as exc:
            raised.append(exc)
            raise

    async with running(make_worker(router, lease=30)):
        job_id = (await client.enqueue("zombie", {})).id
        await asyncio.wait_for(waiting.wait(), 20)
        clock.advance(31)  # the lease expires: recovered, and claimed again by this worker
        await broker.recover()
        job = await settled(client, job_id, JobStatus.COMPLETED)
        go_on.set()
        await eventually(lambda: raised, what="the zombie's LeaseLost")
    assert job.recoveries == 1
    assert rows_of(effects) == [(job_id, "run 1")]


@only_backends("sqlite")
async def test_async_blocks_waiting_for_the_lock_do_not_stall_the_loop(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    """Several async handlers open blocks at once on one worker: each waits for the file's
    writer lock off the event loop, so the block holding it (which needs the loop to get to
    its commit) finishes, and every job completes without an error."""
    router = Router()
    entered: list[str] = []

    @router.task("turns")
    async def turns(job: Job) -> None:
        async with job.transaction() as conn:
            entered.append(job.id)
            conn.execute(INSERT, [job.id, "turns"])
            await asyncio.sleep(0.05)  # the loop must run for this block to reach its commit

    async with running(make_worker(router, concurrency=4)):
        ids = [r.id for r in await client.enqueue_many([pqueue.Task("turns", {}) for _ in range(4)])]
        jobs = [await settled(client, job_id) for job_id in ids]
    assert [job.status for job in jobs] == [JobStatus.COMPLETED] * 4
    assert all(job.errors == () for job in jobs) and sorted(entered) == sorted(ids)
    assert sorted(job_id for job_id, _ in rows_of(effects)) == sorted(ids)


@only_backends("sqlite")
async def test_async_blocks_on_their_own_connections_wait_off_the_loop(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    """The same with connections the async handlers made (on the loop's thread): the wait
    for the lock used to block the loop, so the block holding the lock could not reach its
    commit until the waiter's own sqlite3 timeout ran out, and that job failed."""
    router = Router()

    @router.task("own-turns")
    async def own_turns(job: Job) -> None:
        conn = sqlite3.connect(effects, isolation_level=None, timeout=5)
        try:
            async with job.transaction(conn):
                conn.execute(INSERT, [job.id, "own turns"])
                await asyncio.sleep(0.3)  # the loop must run for this block to reach its commit
        finally:
            conn.close()

    async with running(make_worker(router, concurrency=3)):
        started = asyncio.get_running_loop().time()
        ids = [r.id for r in await client.enqueue_many([pqueue.Task("own-turns", {}) for _ in range(3)])]
        jobs = [await settled(client, job_id) for job_id in ids]
        took = asyncio.get_running_loop().time() - started
    assert [job.status for job in jobs] == [JobStatus.COMPLETED] * 3
    assert all(job.errors == () for job in jobs), [job.errors for job in jobs]
    assert sorted(job_id for job_id, _ in rows_of(effects)) == sorted(ids)
    assert took < 4.5  # three 0.3 s blocks in turn; a blocked loop waits out 5 s timeouts
