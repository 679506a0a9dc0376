"""Count the server connections one worker process holds, on Postgres and Redis.

A worker (concurrency 4) is served in this process against a fresh schema/prefix, one
job runs, and a second later, with the claim loop parked and the cancel listener in
place, the connections are counted from the server's own view: ``pg_stat_activity`` by
application_name, ``CLIENT LIST`` by client name. Notification connections (LISTEN,
pub/sub) are exact; the pools' share varies with how far they grew, so each backend
runs ``--runs`` times and the range is printed.

    PQUEUE_TEST_POSTGRES_URL=... PQUEUE_TEST_REDIS_URL=... python bench/worker_connections.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from collections.abc import Callable

import psycopg
import redis
from psycopg import sql

from pqueue import AsyncClient, Router, Worker
from pqueue.brokers.postgres import migrate

Count = tuple[int, int]
"""(all connections, notification connections)."""


async def _count_while_serving(dsn: str, count: Callable[[], Count]) -> Count:
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
    await asyncio.sleep(1.0)  # the claim loop is parked again; the client has gone
    counted = count()
    worker.stop()
    await asyncio.wait_for(task, 30)
    return counted


def _postgres(pg_url: str, schema: str) -> Count:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT query FROM pg_stat_activity WHERE application_name = %s", [f"pqueue/{schema}"]
        ).fetchall()
    listening = [q for (q,) in rows if q.startswith("-- pqueue:listen") or q.lstrip().startswith("LISTEN")]
    return len(rows), len(listening)


def _redis(url: str, prefix: str) -> Count:
    r = redis.Redis.from_url(url, decode_responses=True)
    try:
        mine = [c for c in r.client_list() if c.get("name", "").startswith(f"pqueue:{prefix}:")]
    finally:
        r.close()
    return len(mine), sum(1 for c in mine if int(c.get("sub", 0)) or int(c.get("psub", 0)))


async def _postgres_run(pg_url: str) -> Count:
    schema = f"cw{uuid.uuid4().hex[:10]}"
    dsn = f"{pg_url}?schema={schema}"
    migrate(dsn)
    try:
        return await _count_while_serving(dsn, lambda: _postgres(pg_url, schema))
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


async def _redis_run(url: str) -> Count:
    prefix = f"cw{uuid.uuid4().hex[:10]}"
    try:
        return await _count_while_serving(f"{url}?prefix={prefix}", lambda: _redis(url, prefix))
    finally:
        r = redis.Redis.from_url(url)
        keys = list(r.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            r.delete(*keys)
        r.close()


def _report(name: str, counts: list[Count]) -> None:
    totals = sorted(total for total, _ in counts)
    notify = sorted({n for _, n in counts})
    print(f"{name}: {totals[0]}-{totals[-1]} connections, notification connections {notify}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    _report("postgres", [await _postgres_run(os.environ["PQUEUE_TEST_POSTGRES_URL"]) for _ in range(runs)])
    _report("redis", [await _redis_run(os.environ["PQUEUE_TEST_REDIS_URL"]) for _ in range(runs)])


if __name__ == "__main__":
    asyncio.run(main())
