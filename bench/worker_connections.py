"""Count the server connections one worker process holds, on Postgres and Redis.

A worker is served in this process against a fresh schema/prefix, a job runs (so the
claim loop has parked on its notification connection), then a cancel listener is in
place (the worker subscribes before it claims): the count is taken from the server's
own view (``pg_stat_activity`` by application_name, ``CLIENT LIST`` by client name).

    PQUEUE_TEST_POSTGRES_URL=... PQUEUE_TEST_REDIS_URL=... python bench/worker_connections.py
"""

from __future__ import annotations

import asyncio
import os
import uuid

import psycopg
import redis
from psycopg import sql

from pqueue import AsyncClient, Router, Worker
from pqueue.brokers.postgres import migrate


async def _count_while_serving(dsn: str, count: object) -> tuple[int, int]:
    """(connections while idle after one job, connections while a result waiter waits)."""
    router = Router()

    @router.task("cw:noop")
    async def noop(_: object = None) -> None:
        return None

    worker = Worker(dsn, router, queues=["default"], concurrency=4)
    task = asyncio.create_task(worker.serve())
    while not worker.is_running:
        await asyncio.sleep(0.01)
    async with AsyncClient(dsn) as client:
        job = await client.enqueue("cw:noop")
        await client.wait_job(job.id, timeout=10)
    await asyncio.sleep(1.0)  # the claim loop is parked again; the pool holds what it grew to
    idle = count()  # type: ignore[operator]
    worker.stop()
    await asyncio.wait_for(task, 30)
    return idle, 0


def _pg_count(pg_url: str, schema: str) -> int:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [f"pqueue/{schema}"]
        ).fetchone()
    return int(row[0]) if row else 0


def _pg_listeners(pg_url: str, schema: str) -> int:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND query LIKE 'LISTEN%%'"
            " OR application_name = %s AND query LIKE '-- pqueue:listen%%'",
            [f"pqueue/{schema}", f"pqueue/{schema}"],
        ).fetchone()
    return int(row[0]) if row else 0


def _redis_clients(url: str, prefix: str) -> tuple[int, int]:
    """(connections named for ``prefix`` from this process, of which subscribed)."""
    r = redis.Redis.from_url(url, decode_responses=True)
    name = f"pqueue:{prefix}:"
    mine = [c for c in r.client_list() if c.get("name", "").startswith(name)]
    subscribed = [c for c in mine if int(c.get("sub", 0)) or int(c.get("psub", 0))]
    r.close()
    return len(mine), len(subscribed)


async def main() -> None:
    pg_url = os.environ["PQUEUE_TEST_POSTGRES_URL"]
    schema = f"cw{uuid.uuid4().hex[:10]}"
    dsn = f"{pg_url}?schema={schema}"
    migrate(dsn)
    try:
        seen: dict[str, int] = {}

        def pg() -> int:
            seen["listen"] = _pg_listeners(pg_url, schema)
            return _pg_count(pg_url, schema)

        total, _ = await _count_while_serving(dsn, pg)
        print(f"postgres: {total} connections, {seen['listen']} of them LISTEN connections")
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))

    redis_url = os.environ["PQUEUE_TEST_REDIS_URL"]
    prefix = f"cw{uuid.uuid4().hex[:10]}"
    rdsn = f"{redis_url}?prefix={prefix}"
    seen_r: dict[str, int] = {}

    def rd() -> int:
        total, subs = _redis_clients(redis_url, prefix)
        seen_r["sub"] = subs
        return total

    total, _ = await _count_while_serving(rdsn, rd)
    print(f"redis: {total} connections, {seen_r['sub']} of them subscribed (pub/sub)")
    r = redis.Redis.from_url(redis_url)
    keys = list(r.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        r.delete(*keys)


if __name__ == "__main__":
    asyncio.run(main())
