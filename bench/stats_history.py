"""What does a stats read cost with much retained history? ``AsyncClient.stats()`` (what a
metrics scrape, ``pqueue stats`` and every dashboard refresh run) and its slowest parts,
``counts()`` and ``activity()``, timed with ``--retained`` completed jobs kept.

Postgres (``--dsn postgresql://...``): a throw-away schema ``--schema`` is migrated up to
0007, filled server-side (one ``INSERT ... SELECT generate_series`` per million rows,
spread over ``--queues`` queues and the last 50 minutes), then migrated to the newest
version, which is timed (0008 counts the finished jobs once, ADR 0139), vacuumed and
analysed. With a pqueue that has no migration 0008 (the ``before`` figures: run this file
with the old tree first on PYTHONPATH) every migration runs before the fill. Redis and
memory (``redis://``, ``memory://``): the jobs are enqueued, claimed and acked through
the API, 1,000 at a time. Then ``--live`` pending jobs per queue are enqueued and a tenth
of them held active, and each read is timed ``--repeat`` times; medians are printed.
The schema is dropped at the end (Redis: the prefix's keys).

    nice python bench/stats_history.py --dsn postgresql://postgres@127.0.0.1:5432/pqueue_bench \\
        --retained 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from bench.retention_postgres import dsn_for, fill, sql

import pqueue
from pqueue.broker import FullBroker
from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.sql import migrations, queries_for, render

COUNTED_FROM = 8
"""The migration from which finished jobs are counted by triggers (ADR 0139)."""


def migrate_before_counters(base: str, schema: str) -> bool:
    """Apply the migrations older than COUNTED_FROM (as a schema last migrated by an older
    pqueue is); returns False when this pqueue has no newer one (all were applied)."""
    if max(m.version for m in migrations()) < COUNTED_FROM:
        migrate(dsn_for(base, schema))
        return False
    q = queries_for(schema)
    with psycopg.connect(base) as conn, conn.transaction():
        conn.execute(q["migrate_create_schema"])
        conn.execute(q["migrate_bootstrap"])
        for m in migrations():
            if m.version < COUNTED_FROM:
                conn.execute(render(m.text, schema))  # type: ignore[arg-type]
                conn.execute(q["migrate_record"], {"version": m.version, "name": m.name})
    return True


def fill_postgres(base: str, schema: str, retained: int, queues: int) -> None:
    sql(base, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    later = migrate_before_counters(base, schema)
    took = sum(fill(base, schema, retained // queues, queue=f"q{i}") for i in range(queues))
    names = ", ".join(f"('q{i}', now())" for i in range(queues))
    sql(base, f"INSERT INTO {schema}.queues (name, created_at) VALUES {names} ON CONFLICT DO NOTHING")
    print(f"filled {retained:,} completed jobs in {took:.1f} s", flush=True)
    if later:
        started = time.perf_counter()
        applied = migrate(dsn_for(base, schema))
        print(f"migrations {applied} with {retained:,} rows: {time.perf_counter() - started:.2f} s")
        sql(base, f"VACUUM ANALYZE {schema}.jobs")


async def fill_api(broker: FullBroker, retained: int, queues: int) -> None:
    started = time.perf_counter()
    for i in range(queues):
        queue, left = f"q{i}", retained // queues
        while left:
            n = min(1000, left)
            await broker.enqueue([pqueue.build_spec("bench:noop", j, queue=queue) for j in range(n)])
            leases = await broker.claim([queue], worker_id="fill", limit=n, lease_for=600.0)
            await broker.ack(leases)
            left -= len(leases)
    print(f"filled {retained:,} completed jobs in {time.perf_counter() - started:.1f} s", flush=True)


async def add_live(broker: FullBroker, queues: int, live: int) -> None:
    """``live`` pending jobs per queue, a tenth of them then claimed (active)."""
    for i in range(queues):
        queue = f"q{i}"
        await broker.enqueue([pqueue.build_spec("bench:noop", j, queue=queue) for j in range(live)])
        await broker.claim([queue], worker_id="live", limit=live // 10, lease_for=3600.0)


async def median_ms(read: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


async def measure(dsn: str, args: argparse.Namespace) -> None:
    client = pqueue.AsyncClient(dsn)
    await client.open()
    broker = client.broker
    try:
        if not dsn.startswith("postgresql"):
            await fill_api(broker, args.retained, args.queues)
        await add_live(broker, args.queues, args.live)
        await broker.prune()  # a worker's housekeeping (folds the counters' deltas, ADR 0139)
        stats = await client.stats()
        total = sum(n for per in stats.queues.values() for n in per.values())
        print(f"{len(stats.queues)} queues, {total:,} jobs", flush=True)
        for name, read in (
            ("stats()", client.stats),
            ("counts()", broker.counts),
            ("activity()", broker.activity),
        ):
            median, worst = await median_ms(read, args.repeat)
            print(f"{name:<11} median {median:8.2f} ms  max {worst:8.2f} ms ({args.repeat} runs)", flush=True)
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True, help="postgresql://... (no ?schema=), redis://..., memory://")
    parser.add_argument("--schema", default="pqstats", help="Postgres schema / Redis prefix")
    parser.add_argument("--retained", type=int, default=1_000_000)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--live", type=int, default=1000, help="pending jobs per queue")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--keep", action="store_true", help="keep the Postgres schema")
    args = parser.parse_args()
    if args.dsn.startswith("postgresql"):
        dsn = dsn_for(args.dsn, args.schema)
        fill_postgres(args.dsn, args.schema, args.retained, args.queues)
        try:
            asyncio.run(measure(dsn, args))
        finally:
            if not args.keep:
                sql(args.dsn, f"DROP SCHEMA IF EXISTS {args.schema} CASCADE")
    elif args.dsn.startswith("redis"):
        dsn = f"{args.dsn}{'&' if '?' in args.dsn else '?'}prefix={args.schema}"
        try:
            asyncio.run(measure(dsn, args))
        finally:
            asyncio.run(drop_redis(args.dsn, args.schema))
    else:
        asyncio.run(measure(args.dsn, args))


async def drop_redis(url: str, prefix: str) -> None:
    from redis.asyncio import Redis

    redis = Redis.from_url(url)
    try:
        async for key in redis.scan_iter(match=f"{prefix}*", count=10_000):
            await redis.delete(key)
    finally:
        await redis.aclose()


if __name__ == "__main__":
    main()
