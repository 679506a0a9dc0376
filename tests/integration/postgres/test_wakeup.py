"""LISTEN/NOTIFY: idle claimers wake on another connection's enqueue, not on a poll."""

from __future__ import annotations

import asyncio

import psycopg

from pqueue.brokers.postgres import enqueue_in
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg
from tests.integration.postgres.pg_activity import listeners

POLL = 60.0  # far longer than any bound below: a wake-up within it is a push


async def test_idle_claimer_gets_a_job_enqueued_by_a_plain_connection(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    worker = await open_pg()
    waiter = asyncio.create_task(worker.wait_for_jobs(["default"], timeout=POLL))
    await asyncio.sleep(0.2)
    assert not waiter.done()
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        [result] = await enqueue_in(conn, [build_spec("wake:job")], schema=schema_name)
    assert await asyncio.wait_for(waiter, 10) is True
    [lease] = await worker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    assert lease.job.id == result.id


async def test_only_the_waited_queues_wake_a_claimer(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = asyncio.create_task(worker.wait_for_jobs(["mail"], timeout=POLL))
    await asyncio.sleep(0.2)
    await producer.enqueue([build_spec("wake:job", queue="reports")])
    await asyncio.sleep(0.3)
    assert not waiter.done()
    await producer.enqueue([build_spec("wake:job", queue="mail")])
    assert await asyncio.wait_for(waiter, 10) is True


async def test_a_scheduled_job_wakes_the_claimer_when_it_comes_due(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = asyncio.create_task(worker.wait_for_jobs(["default"], timeout=POLL))
    await asyncio.sleep(0.2)
    [result] = await producer.enqueue([build_spec("wake:job", delay=0.5)])
    assert await asyncio.wait_for(waiter, 10) is True
    # woken for the due time, not early: the job is claimable now
    [lease] = await worker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    assert lease.job.id == result.id


async def test_a_waiter_sleeps_until_the_earliest_scheduled_job(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    [result] = await producer.enqueue([build_spec("wake:job", delay=0.5)])
    assert await asyncio.wait_for(worker.wait_for_jobs(["default"], timeout=POLL), 10) is True
    [lease] = await worker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    assert lease.job.id == result.id


async def test_one_listening_connection_per_broker(open_pg: OpenPg, pg_url: str, schema_name: str) -> None:
    worker = await open_pg()
    waiters = [asyncio.create_task(worker.wait_for_jobs([f"q{i}"], timeout=POLL)) for i in range(8)]
    await asyncio.sleep(0.3)
    assert len(listeners(pg_url, schema_name)) == 1
    producer = await open_pg()
    await producer.enqueue([build_spec("wake:job", queue=f"q{i}") for i in range(8)])
    assert await asyncio.wait_for(asyncio.gather(*waiters), 10) == [True] * 8
    assert len(listeners(pg_url, schema_name)) == 1  # producers never listen
