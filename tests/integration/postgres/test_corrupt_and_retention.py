"""Malformed rows give CorruptJob and are dead-lettered, never crash-looped; pruning is bounded."""

from __future__ import annotations

import dataclasses

import psycopg
import pytest
from psycopg import sql

from pqueue.broker import WorkerInfo
from pqueue.clock import ManualClock
from pqueue.errors import BrokerUnavailable, CorruptJob
from pqueue.job import UNREADABLE_TYPE, ErrorInfo, JobStatus
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg


def _execute(pg_url: str, schema: str, template: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(pg_url) as conn:
        cur = conn.execute(sql.SQL(template).format(s=sql.Identifier(schema)), args)
        return cur.fetchall() if cur.description else []


@pytest.mark.parametrize(
    ("column", "value"), [("meta", "[1]"), ("payload", "[" * 5000 + "]" * 5000)], ids=["meta", "too-deep"]
)
async def test_a_corrupt_row_is_reported_and_dead_lettered(
    open_pg: OpenPg, pg_url: str, schema_name: str, column: str, value: str
) -> None:
    broker = await open_pg()
    bad, good = (r.id for r in await broker.enqueue([build_spec("c:job", 1), build_spec("c:job", 2)]))
    _execute(pg_url, schema_name, f"UPDATE {{s}}.jobs SET {column} = %s::json WHERE id = %s", value, bad)
    with pytest.raises(CorruptJob, match=bad):
        await broker.get_job(bad)
    leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
    assert [lease.job.id for lease in leases] == [good]
    [(status, errors)] = _execute(
        pg_url, schema_name, "SELECT status, errors FROM {s}.jobs WHERE id = %s", bad
    )
    assert status == "dead" and errors[0]["kind"] == "CorruptJob"  # type: ignore[index]
    assert await broker.claim(["default"], worker_id="w", limit=10, lease_for=30) == []
    # The dead-letter listing still works and shows a stand-in that can be purged by id.
    [listed] = (await broker.list_jobs(JobStatus.DEAD)).jobs
    assert (listed.id, listed.type, listed.status) == (bad, UNREADABLE_TYPE, JobStatus.DEAD)
    assert await broker.purge_dead(job_ids=[bad]) == 1


async def test_prune_deletes_in_bounded_batches_and_frees_expired_keys(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    clock = ManualClock()
    broker = await open_pg(clock=clock, retention=60)
    specs = [build_spec("p:job", i, unique_key=f"k{i}", unique_for=30) for i in range(250)]
    await broker.enqueue(specs)
    while leases := await broker.claim(["default"], worker_id="w", limit=100, lease_for=30):
        assert all(await broker.ack(leases))
    clock.advance(61)
    assert [await broker.prune(limit=100) for _ in range(4)] == [100, 100, 50, 0]
    assert await broker.counts() == {"default": dict.fromkeys(JobStatus, 0)}
    [(keys,)] = _execute(pg_url, schema_name, "SELECT count(*) FROM {s}.unique_keys")
    assert keys == 0


async def test_an_error_message_with_nul_characters_is_still_recorded(open_pg: OpenPg) -> None:
    broker = await open_pg()
    [created] = await broker.enqueue([build_spec("c:job")])
    [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    error = ErrorInfo("ValueError", "bad byte \x00 here", traceback="Traceback\x00...")
    assert await broker.fail(lease, error, retry_in=None) is True
    job = await broker.get_job(created.id)
    assert job.status is JobStatus.DEAD
    assert job.last_error is not None and job.last_error.message == "bad byte \ufffd here"


async def test_a_malformed_worker_row_is_dropped_from_the_listing(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    broker = await open_pg()
    good = WorkerInfo(id="w-good", host="h", pid=1, queues=("default",), concurrency=2, started_at=0.0)
    await broker.register_worker(good, ttl=60)
    await broker.register_worker(dataclasses.replace(good, id="w-bad"), ttl=60)
    _execute(pg_url, schema_name, "UPDATE {s}.workers SET meta = '[1, 2]' WHERE id = 'w-bad'")
    assert [w.id for w in await broker.list_workers()] == ["w-good"]


async def test_a_failed_dead_lettering_keeps_the_claims_other_jobs(
    open_pg: OpenPg, pg_url: str, schema_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = await open_pg()
    bad, good = (r.id for r in await broker.enqueue([build_spec("c:job", 1), build_spec("c:job", 2)]))
    _execute(pg_url, schema_name, "UPDATE {s}.jobs SET meta = '[1]' WHERE id = %s", bad)
    real_rows = broker.db.rows

    async def rows(query: object, *args: object, **kwargs: object) -> object:
        if query is broker._q["fail"]:
            raise BrokerUnavailable("connection lost while burying")
        return await real_rows(query, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(broker.db, "rows", rows)
    leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
    assert [lease.job.id for lease in leases] == [good]  # not lost over the bad one
    [(status,)] = _execute(pg_url, schema_name, "SELECT status FROM {s}.jobs WHERE id = %s", bad)
    assert status == "active"  # left to lease expiry; recovery brings it back to be buried
