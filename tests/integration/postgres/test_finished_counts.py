"""Finished jobs counted by triggers (migration 0008, ADR 0139) agree with a full count(*)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import psycopg
import pytest
from psycopg import sql

from pqueue.brokers.postgres import PostgresBroker, admin, migrate
from pqueue.brokers.postgres.sql import migrations, queries_for, render
from pqueue.clock import ManualClock
from pqueue.job import ErrorInfo, JobStatus
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg

ERROR = ErrorInfo(kind="RuntimeError", message="boom", traceback="")
FULL_COUNT = "SELECT queue, status, count(*) FROM {}.jobs GROUP BY queue, status"


def full_count(pg_url: str, schema: str) -> Counter[tuple[str, JobStatus]]:
    """What counts() must say, read the slow way: every row grouped."""
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(sql.SQL(FULL_COUNT).format(sql.Identifier(schema))).fetchall()
    return Counter({(queue, JobStatus(status)): n for queue, status, n in rows})


def flat(counts: dict[str, dict[JobStatus, int]]) -> Counter[tuple[str, JobStatus]]:
    return Counter({(q, s): n for q, per in counts.items() for s, n in per.items() if n})


async def test_counts_agree_with_a_full_count_after_concurrent_settles_folds_and_prunes(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    clock = ManualClock()
    brokers = [await open_pg(clock=clock, retention=1.0) for _ in range(3)]
    for queue in ("a", "b"):
        for _ in range(3):
            await brokers[0].enqueue([build_spec("t", i, queue=queue, max_retries=0) for i in range(200)])
    done = asyncio.Event()

    async def worker(n: int) -> None:
        rng, mine, me = random.Random(n), brokers[n % 3], f"w{n}"
        while leases := await mine.claim(["a", "b"], worker_id=me, limit=rng.randint(1, 20), lease_for=60):
            for lease in leases:
                if rng.random() < 0.7:
                    await mine.ack([lease])
                elif rng.random() < 0.5:
                    await mine.fail(lease, ERROR, retry_in=None)
                else:
                    await mine.cancel_active(lease.job.id)
            clock.advance(0.05)  # what finished a second ago is prunable

    async def folder(n: int) -> None:
        mine = brokers[n % 3]
        while not done.is_set():  # folds race each other and the settles
            await mine.fold_counts()
            await mine.prune(limit=5)
            await asyncio.sleep(0)

    folders = [asyncio.create_task(folder(n)) for n in range(3)]
    await asyncio.gather(*(worker(n) for n in range(6)))
    done.set()
    await asyncio.gather(*folders)
    assert flat(await brokers[0].counts()) == full_count(pg_url, schema_name)
    assert 0 < sum(full_count(pg_url, schema_name).values()) < 1200  # some were pruned
    await brokers[0].fold_counts()
    assert flat(await brokers[0].counts()) == full_count(pg_url, schema_name)


async def test_counts_folds_the_deltas_when_many_wait(
    open_pg: OpenPg, pg_url: str, schema_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = await open_pg()
    await broker.enqueue([build_spec("t", i) for i in range(5)])
    await broker.ack(await broker.claim(["default"], worker_id="w", limit=5, lease_for=60))
    monkeypatch.setattr(admin, "FOLD_AT", 5)
    assert (await broker.counts())["default"][JobStatus.COMPLETED] == 5
    with psycopg.connect(pg_url) as conn:
        schema = sql.Identifier(schema_name)
        left = conn.execute(sql.SQL("SELECT count(*) FROM {}.finished_deltas").format(schema)).fetchone()
        totals = conn.execute(sql.SQL("SELECT queue, status, n FROM {}.finished_counts").format(schema))
        assert left == (0,) and totals.fetchall() == [("default", "completed", 5)]
    assert (await broker.counts())["default"][JobStatus.COMPLETED] == 5


SEED = """
INSERT INTO {s}.queues (name, created_at) VALUES ('a', now()), ('b', now());
INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, finished_at,
                      max_retries, max_recoveries)
SELECT gen_random_uuid(), q, 't', s, '1', now(), now(), now(), 0, 0
FROM (VALUES ('a', 'completed', 7), ('a', 'dead', 2), ('b', 'cancelled', 3), ('b', 'completed', 1),
             ('b', 'pending', 4)) AS v(q, s, n),
     generate_series(1, n);
"""


def test_migration_0008_counts_the_jobs_already_there(pg_url: str, dsn: str, schema_name: str) -> None:
    q = queries_for(schema_name)
    with psycopg.connect(pg_url) as conn, conn.transaction():  # a schema at 0007, with history
        conn.execute(q["migrate_create_schema"])
        conn.execute(q["migrate_bootstrap"])
        for m in migrations():
            if m.version < 8:
                conn.execute(render(m.text, schema_name))  # type: ignore[arg-type]
                conn.execute(q["migrate_record"], {"version": m.version, "name": m.name})
        conn.execute(SEED.replace("{s}", schema_name))  # type: ignore[arg-type]
    assert 8 in migrate(dsn)
    expected = full_count(pg_url, schema_name)
    broker_counts = asyncio.run(_counts(dsn))
    assert broker_counts == expected
    [again] = [m for m in migrations() if m.version == 8]
    with psycopg.connect(pg_url) as conn:  # written to run again over its own result
        conn.execute(render(again.text, schema_name))  # type: ignore[arg-type]
    assert asyncio.run(_counts(dsn)) == expected


async def _counts(dsn: str) -> Counter[tuple[str, JobStatus]]:
    async with PostgresBroker.from_url(dsn) as broker:
        return flat(await broker.counts())
