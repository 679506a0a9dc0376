"""``job.transaction()``: a handler's writes and its job's completion commit together.

On Postgres (``Capability.TRANSACTIONAL_COMPLETION``) the handler's row and the ack land
in one transaction; a raise rolls both back and the job retries; the worker settles
nothing more after the commit. Memory and Redis refuse with ``NotSupported`` naming the
capability. The crash proof with real processes is tests/worker/test_transaction_crash.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from psycopg import sql

from pqueue import AsyncClient, Capability, Job, JobStatus, LeaseLost, NotSupported, Router
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from tests.conftest import only_backends, service_url
from tests.worker.conftest import MakeWorker, eventually, running, settled


@pytest_asyncio.fixture
async def effects(namespace: str, broker: FullBroker) -> AsyncIterator[str]:
    """A table ``<namespace>.effects`` the handlers write to (no unique key: a double
    write would show as two rows); dropped with the namespace's schema."""
    url = service_url("postgres")
    assert url is not None
    table = f"{namespace}.effects"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("CREATE TABLE {} (job_id uuid NOT NULL, note text)").format(
                sql.Identifier(namespace, "effects")
            )
        )
    yield table


async def rows_of(table: str) -> list[tuple[str, str]]:
    url = service_url("postgres")
    assert url is not None
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        schema, name = table.split(".")
        table_id = sql.Identifier(schema, name)
        query = sql.SQL("SELECT job_id::text, note FROM {} ORDER BY note").format(table_id)
        return [(str(a), str(b)) for a, b in await (await conn.execute(query)).fetchall()]


def insert(table: str) -> sql.Composed:
    schema, name = table.split(".")
    return sql.SQL("INSERT INTO {} (job_id, note) VALUES (%s, %s)").format(sql.Identifier(schema, name))


@only_backends("postgres")
async def test_the_handlers_row_and_the_completion_commit_together(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    router = Router()

    @router.task("write")
    async def write(job: Job) -> str:
        tx = job.transaction()
        async with tx as conn:
            await conn.execute(insert(effects), [job.id, "async"])
            tx.result = {"wrote": 1}
        return "ignored: the job is completed already"

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("write", {})).id
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED and job.result == {"wrote": 1}
    assert await rows_of(effects) == [(job_id, "async")]
    assert worker.counters.completed == 1 and worker.counters.lost == 0


@only_backends("postgres")
async def test_a_raise_in_the_block_rolls_the_row_back_and_the_job_retries(
    client: AsyncClient, make_worker: MakeWorker, effects: str, clock: ManualClock
) -> None:
    router = Router()
    runs: list[int] = []

    @router.task("flaky", max_retries=1)
    async def flaky(job: Job) -> None:
        runs.append(job.attempt)
        async with job.transaction() as conn:
            await conn.execute(insert(effects), [job.id, f"run {job.attempt}"])
            if job.attempt == 1:
                raise RuntimeError("after the insert")

    async with running(make_worker(router)):
        job_id = (await client.enqueue("flaky", {})).id
        job = await settled(client, job_id, JobStatus.RETRY)
        assert await rows_of(effects) == []
        assert job.last_error is not None and job.last_error.message == "after the insert"
        clock.advance(3600)
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED and runs == [1, 2]
    assert await rows_of(effects) == [(job_id, "run 2")]


@only_backends("postgres")
async def test_a_sync_handler_completes_in_its_transaction(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    router = Router()

    @router.task("write_sync")
    def write_sync(job: Job) -> None:
        with job.transaction() as conn:
            conn.execute(insert(effects), [job.id, "sync"])

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("write_sync", {})).id
        job = await settled(client, job_id)
    assert job.status is JobStatus.COMPLETED
    assert await rows_of(effects) == [(job_id, "sync")]
    assert worker.counters.completed == 1


@only_backends("postgres")
async def test_a_sqlalchemy_session_completes_with_its_statements(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    url = service_url("postgres")
    assert url is not None
    engine = create_async_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    router = Router()

    @router.task("orm")
    async def orm(job: Job) -> None:
        async with AsyncSession(engine) as session, job.transaction(session) as same:
            assert same is session
            await session.execute(
                text(f"INSERT INTO {effects} (job_id, note) VALUES (:id, 'orm')"), {"id": job.id}
            )

    worker = make_worker(router)
    try:
        async with running(worker):
            job_id = (await client.enqueue("orm", {})).id
            job = await settled(client, job_id)
    finally:
        await engine.dispose()
    assert job.status is JobStatus.COMPLETED
    assert await rows_of(effects) == [(job_id, "orm")]


async def test_a_backend_without_the_capability_says_which_one_it_lacks(
    client: AsyncClient, make_worker: MakeWorker, broker: FullBroker
) -> None:
    if Capability.TRANSACTIONAL_COMPLETION in broker.capabilities:
        pytest.skip("this backend has transactional completion")
    router = Router()
    seen: list[Any] = []

    @router.task("write")
    async def write(job: Job) -> None:
        try:
            job.transaction()
        except NotSupported as exc:
            seen.append(exc)
            raise

    async with running(make_worker(router)):
        job = await settled(client, (await client.enqueue("write", {}, max_retries=0)).id)
    assert job.status is JobStatus.DEAD and job.last_error is not None
    assert job.last_error.kind == "NotSupported" and "transactional_completion" in job.last_error.message
    assert seen[0].capability == "transactional_completion"


async def test_outside_its_handler_a_job_has_no_transaction(client: AsyncClient) -> None:
    job = await client.get_job((await client.enqueue("write", {})).id)
    with pytest.raises(RuntimeError, match="only inside the handler"):
        job.transaction()


@only_backends("postgres")
async def test_a_sync_handler_completes_with_its_own_sqlalchemy_session(
    client: AsyncClient, make_worker: MakeWorker, effects: str
) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session

    url = service_url("postgres")
    assert url is not None
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    router = Router()

    @router.task("orm_sync")
    def orm_sync(job: Job) -> None:
        with Session(engine) as session, job.transaction(session):
            session.execute(
                text(f"INSERT INTO {effects} (job_id, note) VALUES (:id, 'orm sync')"), {"id": job.id}
            )

    try:
        async with running(make_worker(router)):
            job = await settled(client, (await client.enqueue("orm_sync", {})).id)
    finally:
        engine.dispose()
    assert job.status is JobStatus.COMPLETED
    assert await rows_of(effects) == [(job.id, "orm sync")]


@only_backends("postgres")
async def test_a_lost_lease_rolls_the_handlers_rows_back(
    client: AsyncClient, make_worker: MakeWorker, effects: str, broker: FullBroker, clock: ManualClock
) -> None:
    """A zombie: its lease is taken back while it is in the block; the ack finds a new
    token, the block raises LeaseLost and its insert never lands."""
    router = Router()
    inside = asyncio.Event()
    go_on = asyncio.Event()
    raised: list[BaseException] = []

    @router.task("zombie")
    async def zombie(job: Job) -> None:
        try:
            async with job.transaction() as conn:
                await conn.execute(insert(effects), [job.id, f"run {job.recoveries}"])
                if job.recoveries == 0:
                    inside.set()
                    await go_on.wait()
        except LeaseLost as exc:
            raised.append(exc)
            raise

    async with running(make_worker(router, lease=30)):
        job_id = (await client.enqueue("zombie", {})).id
        await asyncio.wait_for(inside.wait(), 20)
        clock.advance(31)  # the lease expires: recovered, and claimed again by this worker
        await broker.recover()  # or the worker's own maintenance does it first
        job = await settled(client, job_id, JobStatus.COMPLETED)
        go_on.set()
        await eventually(lambda: raised, what="the zombie's LeaseLost")
    assert job.recoveries == 1
    assert await rows_of(effects) == [(job_id, "run 1")]


@only_backends("postgres")
async def test_after_the_commit_the_worker_neither_acks_nor_fails_the_job(
    client: AsyncClient, make_worker: MakeWorker, effects: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pqueue.brokers.postgres import PostgresBroker

    settled_ids: list[tuple[str, str]] = []
    real_ack, real_fail = PostgresBroker.ack, PostgresBroker.fail

    async def ack(self: PostgresBroker, leases: Any, results_json: Any = None) -> list[bool]:
        settled_ids.extend(("ack", lease.job.id) for lease in leases)
        return await real_ack(self, leases, results_json)

    async def fail(self: PostgresBroker, lease: Any, error: Any, *, retry_in: float | None) -> bool:
        settled_ids.append(("fail", lease.job.id))
        return await real_fail(self, lease, error, retry_in=retry_in)

    monkeypatch.setattr(PostgresBroker, "ack", ack)
    monkeypatch.setattr(PostgresBroker, "fail", fail)
    router = Router()

    @router.task("then_raise")
    async def then_raise(job: Job) -> None:
        async with job.transaction() as conn:
            await conn.execute(insert(effects), [job.id, "committed"])
        raise RuntimeError("after the commit")

    worker = make_worker(router)
    async with running(worker):
        job = await settled(client, (await client.enqueue("then_raise", {})).id)
    assert job.status is JobStatus.COMPLETED and job.errors == ()
    assert settled_ids == []  # the transaction settled it: no second ack, no failure
    assert worker.counters.completed == 1 and worker.counters.retried == 0
    assert await rows_of(effects) == [(job.id, "committed")]


@only_backends("postgres")
async def test_an_async_handler_must_use_async_with(client: AsyncClient, make_worker: MakeWorker) -> None:
    router = Router()

    @router.task("blocking")
    async def blocking(job: Job) -> None:
        with job.transaction():  # would block the event loop: refused
            pass

    async with running(make_worker(router)):
        job = await settled(client, (await client.enqueue("blocking", {}, max_retries=0)).id)
    assert job.status is JobStatus.DEAD and job.last_error is not None
    assert job.last_error.kind == "TypeError" and "async with" in job.last_error.message
