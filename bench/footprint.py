"""Storage per queued job: what 100,000 pending no-op jobs cost the backend.

Measures the backend's own accounting before and after enqueueing ``--n`` jobs with a
small payload (``{"i": n}``), then removes them again:

  memory://     Python heap growth (tracemalloc) of this process
  redis://      ``INFO memory`` used_memory growth
  postgresql:// growth of the schema's tables and indexes (pg_total_relation_size)

    python bench/footprint.py --dsn memory://footprint
    python bench/footprint.py --dsn 'redis://127.0.0.1:6379/3?prefix=pqfoot'
    python bench/footprint.py --dsn 'postgresql://postgres@127.0.0.1/test?schema=pqfoot'  # migrated first
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tracemalloc
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import pqueue
from pqueue.broker import FullBroker
from pqueue.spec import build_spec

QUEUE = "footprint"


def meter_for(dsn: str) -> Callable[[], Awaitable[int]]:
    """A function returning the backend's current size in bytes."""
    scheme = urlsplit(dsn).scheme
    if scheme == "memory":

        async def python_heap() -> int:
            gc.collect()
            return tracemalloc.get_traced_memory()[0]

        tracemalloc.start()
        return python_heap
    if scheme.startswith("redis"):
        import redis.asyncio as aioredis

        server = aioredis.Redis.from_url(dsn.split("?", 1)[0])

        async def redis_memory() -> int:
            return int((await server.info("memory"))["used_memory"])

        return redis_memory
    import psycopg

    from pqueue.brokers.postgres.config import PostgresConfig

    config = PostgresConfig.from_url(dsn)

    async def schema_size() -> int:
        async with await psycopg.AsyncConnection.connect(config.conninfo) as conn:
            row = await (
                await conn.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind = 'r'",
                    [config.schema],
                )
            ).fetchone()
            return int(row[0]) if row else 0

    return schema_size


async def remove(broker: FullBroker, n: int) -> None:
    """Claim, ack and prune the jobs again (through a zero-retention broker)."""
    while leases := await broker.claim([QUEUE], worker_id="footprint", limit=1000, lease_for=60):
        await broker.ack(leases)
    while await broker.prune(limit=10_000):
        pass


async def run(dsn: str, n: int) -> tuple[int, int]:
    meter = meter_for(dsn)
    broker = pqueue.connect(dsn, retention=0)
    await broker.open()
    try:
        await remove(broker, n)
        before = await meter()
        for start in range(0, n, 1000):
            await broker.enqueue(
                [build_spec("bench:noop", {"i": i}, queue=QUEUE) for i in range(start, start + 1000)]
            )
        after = await meter()
        await remove(broker, n)
    finally:
        await broker.close()
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    before, after = asyncio.run(run(args.dsn, args.n))
    grown = after - before
    print(
        f"{urlsplit(args.dsn).scheme}: {args.n:,} pending jobs take {grown / 2**20:,.1f} MiB "
        f"({grown / args.n:,.0f} bytes per job)"
    )


if __name__ == "__main__":
    main()
