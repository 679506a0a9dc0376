"""Enqueue on the caller's transaction: visible (and waking workers) only if it commits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
import pytest_asyncio
import sqlalchemy
from psycopg import sql
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from pqueue.brokers.postgres import PostgresBroker, enqueue_in, enqueue_in_sync
from pqueue.errors import JobNotFound, SchemaError
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg

LEASE = 30.0


def _specs(n: int = 2, **options: object) -> list:  # type: ignore[type-arg]
    return [build_spec("tx:job", i, **options) for i in range(n)]  # type: ignore[arg-type]


async def _claim_all(broker: PostgresBroker) -> list[str]:
    leases = await broker.claim(["default"], worker_id="w", limit=100, lease_for=LEASE)
    return [lease.job.id for lease in leases]


async def _left_no_trace(broker: PostgresBroker, job_ids: list[str]) -> None:
    """After a rollback: no job, no queue, and the unique keys are free again."""
    assert await _claim_all(broker) == []
    for job_id in job_ids:
        with pytest.raises(JobNotFound):
            await broker.get_job(job_id)
    assert await broker.list_queues() == []
    assert await broker.counts() == {}


@pytest.fixture
def engine(pg_url: str) -> Iterator[sqlalchemy.Engine]:
    engine = sqlalchemy.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    yield engine
    engine.dispose()


@pytest_asyncio.fixture
async def async_engine(pg_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    yield engine
    await engine.dispose()


async def test_psycopg_async_commit_makes_jobs_visible_and_wakes_workers(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    broker = await open_pg()
    waiter = asyncio.create_task(broker.wait_for_jobs(["default"], timeout=30))
    await asyncio.sleep(0.2)  # let the waiter park
    specs = _specs(2)
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        results = await enqueue_in(conn, specs, schema=schema_name)
        assert [r.created for r in results] == [True, True]
        assert await _claim_all(broker) == []  # not visible before commit
        await asyncio.sleep(0.2)
        assert not waiter.done()  # NOTIFY is held until commit
        await conn.commit()
    assert await asyncio.wait_for(waiter, 10) is True
    assert await _claim_all(broker) == [s.id for s in specs]


async def test_psycopg_async_rollback_leaves_no_trace(open_pg: OpenPg, pg_url: str, schema_name: str) -> None:
    broker = await open_pg()
    specs = _specs(2, unique_key="once", unique_for=3600)
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        results = await enqueue_in(conn, specs, schema=schema_name)
        assert [r.created for r in results] == [True, False]
        await conn.rollback()
    await _left_no_trace(broker, [s.id for s in specs])
    [again] = await broker.enqueue([build_spec("tx:job", unique_key="once", unique_for=3600)])
    assert again.created  # the key was released with the rollback


async def test_psycopg_sync_commits_app_rows_and_jobs_together(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    broker = await open_pg()
    table = sql.Identifier(schema_name, "orders")
    with psycopg.connect(pg_url) as conn:
        conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY)").format(table))
        conn.commit()
        conn.execute(sql.SQL("INSERT INTO {} VALUES (1)").format(table))
        [kept] = broker.enqueue_in_sync(conn, _specs(1))
        conn.commit()
        conn.execute(sql.SQL("INSERT INTO {} VALUES (2)").format(table))
        [dropped] = broker.enqueue_in_sync(conn, _specs(1))
        conn.rollback()
        orders = conn.execute(sql.SQL("SELECT id FROM {}").format(table)).fetchall()
    assert orders == [(1,)]
    assert await _claim_all(broker) == [kept.id]
    with pytest.raises(JobNotFound):
        await broker.get_job(dropped.id)


async def test_psycopg_sync_rollback_leaves_no_trace(open_pg: OpenPg, pg_url: str, schema_name: str) -> None:
    broker = await open_pg()
    specs = _specs(3)
    with psycopg.connect(pg_url) as conn:
        enqueue_in_sync(conn, specs, schema=schema_name)
        conn.rollback()
    await _left_no_trace(broker, [s.id for s in specs])


async def test_sqlalchemy_connection_commit_and_rollback(
    open_pg: OpenPg, engine: sqlalchemy.Engine, schema_name: str
) -> None:
    broker = await open_pg()
    rolled_back, committed = _specs(2), _specs(2)
    with engine.connect() as conn:
        assert all(r.created for r in enqueue_in_sync(conn, rolled_back, schema=schema_name))
        conn.rollback()
    await _left_no_trace(broker, [s.id for s in rolled_back])
    with engine.begin() as conn:
        enqueue_in_sync(conn, committed, schema=schema_name)
    assert await _claim_all(broker) == [s.id for s in committed]


async def test_sqlalchemy_session_commit_and_rollback(
    open_pg: OpenPg, engine: sqlalchemy.Engine, schema_name: str
) -> None:
    broker = await open_pg()
    rolled_back, committed = _specs(2), _specs(2)
    with Session(engine) as session:
        broker.enqueue_in_sync(session, rolled_back)
        session.rollback()
    await _left_no_trace(broker, [s.id for s in rolled_back])
    with Session(engine) as session:
        broker.enqueue_in_sync(session, committed)
        session.commit()
    assert await _claim_all(broker) == [s.id for s in committed]
    job = await broker.get_job(committed[0].id)
    assert job.status is JobStatus.ACTIVE and job.payload == 0


async def test_sqlalchemy_async_session_commit_and_rollback(
    open_pg: OpenPg, async_engine: AsyncEngine
) -> None:
    broker = await open_pg()
    rolled_back, committed = _specs(2), _specs(2)
    async with AsyncSession(async_engine) as session:
        await broker.enqueue_in(session, rolled_back)
        await session.rollback()
    await _left_no_trace(broker, [s.id for s in rolled_back])
    async with AsyncSession(async_engine) as session:
        await broker.enqueue_in(session, committed)
        await session.commit()
    assert await _claim_all(broker) == [s.id for s in committed]


async def test_enqueue_in_refuses_what_it_cannot_use(pg_url: str, schema_name: str) -> None:
    with pytest.raises(TypeError, match="psycopg or SQLAlchemy"):
        await enqueue_in(object(), _specs(1), schema=schema_name)
    async with await psycopg.AsyncConnection.connect(pg_url) as aconn:
        with pytest.raises(TypeError, match="await enqueue_in"):
            enqueue_in_sync(aconn, _specs(1), schema=schema_name)
    with psycopg.connect(pg_url) as conn, pytest.raises(SchemaError, match="pqueue migrate"):
        enqueue_in_sync(conn, _specs(1), schema=schema_name)  # this test's schema is not migrated
