"""Postgres hand-off to parked claimers (ADR 0054): the edges the contract does not reach —
FIFO, dead and stale claimers, big and future jobs, malformed and corrupt messages, close."""

from __future__ import annotations

import asyncio
import json

import psycopg
import pytest
from psycopg import sql

from pqueue.broker import Claimer, FullBroker
from pqueue.brokers import handoff as shared_handoff
from pqueue.brokers.postgres import PostgresBroker
from pqueue.brokers.postgres import broker as postgres_broker
from pqueue.brokers.postgres.handoff import HANDOFF_BYTES, HeldLease, fits_handoff
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import waiting_claimer
from tests.integration.postgres.conftest import OpenPg

CLAIMER = Claimer("w1", limit=4, lease_for=30)


async def _park(broker: FullBroker, claimer: Claimer = CLAIMER, timeout: float = 30) -> asyncio.Task[bool]:
    """A wait that has parked ``claimer`` on "default" (nothing due there)."""
    return await waiting_claimer(broker, claimer, timeout=timeout, settle=0.3)


async def _status(broker: FullBroker, job_id: str) -> tuple[JobStatus, int]:
    job = await broker.get_job(job_id)
    return job.status, job.attempt


def _parked(pg_url: str, schema: str) -> list[tuple[str, str]]:
    with psycopg.connect(pg_url) as conn:
        query = sql.SQL("SELECT queue, worker_id FROM {}.parked ORDER BY 1, 2").format(sql.Identifier(schema))
        return [(q, w) for q, w in conn.execute(query).fetchall()]


async def test_a_handed_off_job_is_the_claimers_and_its_parking_is_used_up(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    assert _parked(pg_url, schema_name) == [("default", "w1")]
    [first] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    assert await _status(producer, first.id) == (JobStatus.ACTIVE, 1)
    assert _parked(pg_url, schema_name) == []  # one job per parking: the next one waits
    [second] = await producer.enqueue([build_spec("t")])
    assert await _status(producer, second.id) == (JobStatus.PENDING, 0)
    [lease] = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert lease.job.id == first.id and lease.job.attempt == 1
    assert await worker.ack([lease]) == [True]  # the lease the enqueue made is the real one


async def test_an_older_due_job_is_never_overtaken(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    older = await producer.enqueue([build_spec("t"), build_spec("t")])  # batches only wake
    assert await asyncio.wait_for(waiter, 10) is True
    [newer] = await producer.enqueue([build_spec("t")])  # the claimer is still parked
    assert await _status(producer, newer.id) == (JobStatus.PENDING, 0)
    leases = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert [lease.job.id for lease in leases] == [older[0].id, older[1].id, newer.id]


async def test_scheduled_and_oversized_jobs_are_not_handed_off(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker, timeout=3)
    [later] = await producer.enqueue([build_spec("t", delay=60)])
    [big] = await producer.enqueue([build_spec("t", "x" * HANDOFF_BYTES)])
    assert await asyncio.wait_for(waiter, 10) is True  # woken by the big one, as before
    assert await _status(producer, later.id) == (JobStatus.SCHEDULED, 0)
    assert await _status(producer, big.id) == (JobStatus.PENDING, 0)
    [lease] = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert lease.job.id == big.id and lease.job.payload == "x" * HANDOFF_BYTES


async def test_a_claimer_whose_listener_died_is_not_handed_anything(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the worker's LISTEN backend dies
        query = sql.SQL("SELECT pg_terminate_backend(listener_pid) FROM {}.parked").format(
            sql.Identifier(schema_name)
        )
        assert conn.execute(query).fetchall() == [(True,)]
    await asyncio.sleep(0.3)
    [result] = await producer.enqueue([build_spec("t")])
    assert await _status(producer, result.id) == (JobStatus.PENDING, 0)
    assert await asyncio.wait_for(waiter, 10) is True  # the listener came back and woke it
    [lease] = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert lease.job.id == result.id


async def test_a_parking_that_outlived_a_pause_is_handed_nothing(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    """A `look` that started before a pause committed parks after the pause's delete; the
    row left behind must not lease the paused queue's next job (the CI flake of test_pause)."""
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the pause, without its unpark
        query = sql.SQL("INSERT INTO {}.paused_queues (queue, paused_at) VALUES ('default', now())")
        conn.execute(query.format(sql.Identifier(schema_name)))
    assert _parked(pg_url, schema_name) == [("default", "w1")]
    [held] = await producer.enqueue([build_spec("t")])
    assert await _status(producer, held.id) == (JobStatus.PENDING, 0)
    assert await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30) == []
    assert await producer.resume("default") is True
    [lease] = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert lease.job.id == held.id
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)


async def test_leases_left_uncollected_are_given_back_after_a_while(
    open_pg: OpenPg, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_handoff, "STALE_AFTER", 0.3)
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    assert await _status(producer, result.id) == (JobStatus.ACTIVE, 1)
    await asyncio.sleep(1.0)  # never claimed: given back, unrun
    assert await _status(producer, result.id) == (JobStatus.PENDING, 0)
    assert [
        lease.job.id for lease in await producer.claim(["default"], worker_id="x", limit=4, lease_for=30)
    ] == [result.id]


async def _notify_own_channel(broker: PostgresBroker, pg_url: str, payload: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", [broker.handoff_channel, payload])


async def test_a_malformed_message_is_dropped_and_hand_offs_go_on(open_pg: OpenPg, pg_url: str) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    for junk in ["not json", '{"w": "w1"}', json.dumps({"w": "w1", "t": 1, "e": 1.0, "j": [1, 2]})]:
        await _notify_own_channel(worker, pg_url, junk)
    await asyncio.sleep(0.3)
    assert not waiter.done()
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    [lease] = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert lease.job.id == result.id


async def test_a_corrupt_job_handed_off_is_dead_lettered_by_the_claim_that_collects_it(
    open_pg: OpenPg, pg_url: str, schema_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    captured: list[str] = []
    parse = postgres_broker.parse_handoff

    def spoil(payload: str, received: float) -> tuple[str, HeldLease]:  # a status no pqueue writes
        message = json.loads(payload)
        message["j"][4] = "bogus"
        captured.append(payload)
        return parse(json.dumps(message), received)

    monkeypatch.setattr(postgres_broker, "parse_handoff", spoil)
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    assert captured
    assert await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30) == []
    job = await producer.get_job(result.id)
    assert job.status is JobStatus.DEAD and job.errors[-1].kind == "CorruptJob"


async def test_close_gives_back_jobs_handed_off_just_before_it(open_pg: OpenPg) -> None:
    producer = await open_pg()
    for _ in range(10):
        worker = await open_pg()
        waiter = await _park(worker, timeout=5)
        [result] = await producer.enqueue([build_spec("t")])
        await worker.close()  # whether or not the lease has arrived yet
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert await _status(producer, result.id) == (JobStatus.PENDING, 0)
        [lease] = await producer.claim(["default"], worker_id="x", limit=4, lease_for=30)
        assert lease.job.id == result.id
        await producer.ack([lease])


async def test_a_wait_without_a_claimer_parks_nothing(open_pg: OpenPg, pg_url: str, schema_name: str) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = asyncio.create_task(worker.wait_for_jobs(["default"], timeout=30))
    await asyncio.sleep(0.3)
    assert _parked(pg_url, schema_name) == []
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    assert await _status(producer, result.id) == (JobStatus.PENDING, 0)


async def test_the_biggest_job_that_hands_off_fits_a_notification(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker, Claimer("w" * 200, limit=1, lease_for=30))
    meta = {"key": "\x01\u00e9" * 50}  # escaped on the way, counted at the worst case
    size = HANDOFF_BYTES
    while not fits_handoff(spec := build_spec("t", "\u00e9" * size, meta=meta)):
        size -= 1
    payload = "\u00e9" * size
    assert len(spec.payload_json.encode()) > HANDOFF_BYTES // 2
    [result] = await producer.enqueue([spec])  # a notification too big would fail this
    assert await asyncio.wait_for(waiter, 10) is True
    assert await _status(producer, result.id) == (JobStatus.ACTIVE, 1)
    [lease] = await worker.claim(["default"], worker_id="w" * 200, limit=1, lease_for=30)
    assert (lease.job.id, lease.job.payload, dict(lease.job.meta)) == (result.id, payload, meta)


async def test_a_claimer_with_an_overlong_id_is_woken_not_handed_off(open_pg: OpenPg) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker, Claimer("w" * 201, limit=1, lease_for=30))
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    assert await _status(producer, result.id) == (JobStatus.PENDING, 0)


async def test_a_claim_ends_the_claimers_parking(open_pg: OpenPg, pg_url: str, schema_name: str) -> None:
    worker, producer = await open_pg(), await open_pg()
    waiter = await _park(worker)
    waiter.cancel()  # the worker stops waiting: its parking outlives the wait by a margin
    await asyncio.gather(waiter, return_exceptions=True)
    assert _parked(pg_url, schema_name) == [("default", "w1")]
    assert await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30) == []
    assert _parked(pg_url, schema_name) == []
    [result] = await producer.enqueue([build_spec("t")])
    assert await _status(producer, result.id) == (JobStatus.PENDING, 0)  # for whoever claims
