"""Does ``stats()`` pay JIT compilation on Postgres? ``AsyncClient.stats()`` (what a metrics
scrape, ``pqueue stats`` and every dashboard refresh run) and its parts ``activity()`` and
``counts()``, timed with ``--retained`` finished jobs kept, with ``jit = on`` and ``jit =
off`` in turn (ADR 0156).

A throw-away schema ``--schema`` is migrated by the pqueue on the path and filled
server-side: ``--retained`` completed, cancelled and dead jobs finished over the last 23
hours (inside the default retention), a third of them with a priority in -100..100, then
``--live`` live jobs per queue over ``--queues`` queues (half pending, a third of those
with a priority; scheduled, retrying, running ones), vacuumed and analysed as autovacuum
would; the jobs table's counting triggers are off during the fill and the finished
counters written once after it. Then, ``--rounds`` times, one client per setting (libpq's
``PGOPTIONS=-c jit=...``, so only this process's sessions change) reads each of
``stats()``, ``activity()`` and ``counts()`` ``--repeat`` times after two untimed calls;
the median, 95th percentile and maximum per setting are printed, with the server's own
verdict (whether ``EXPLAIN`` of the ``activity`` query shows a JIT section) and the load
average. The schema is dropped at the end (``--keep`` keeps it).

Before/after: run this file once with the tree to compare first on ``PYTHONPATH`` (it
migrates its own schema with that tree's migrations), once with this one.

    nice python bench/pg_stats_jit.py --dsn postgresql://postgres@127.0.0.1:5432/pqueue_bench \\
        --retained 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from psycopg import sql

import pqueue
from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.sql import queries_for

HISTORY = """
INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, started_at,
                      finished_at, attempt, max_retries, max_recoveries, priority, result)
SELECT gen_random_uuid(), 'q' || (g %% %(queues)s), 'bench:noop',
       CASE WHEN g %% 50 = 0 THEN 'dead' WHEN g %% 20 = 0 THEN 'cancelled' ELSE 'completed' END,
       json_build_object('i', g), t, t, t, t + interval '20 ms', 1, 3, 5,
       CASE WHEN g %% 3 = 0 THEN g %% 201 - 100 ELSE 0 END, 'null'
FROM generate_series(%(first)s, %(last)s) AS g,
     LATERAL (SELECT now() - make_interval(secs => 82800 * (1 - g::float8 / %(n)s)) AS t) AS at
"""
LIVE = """
INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, started_at,
                      lease_token, lease_expires_at, worker_id, attempt, max_retries,
                      max_recoveries, priority)
SELECT gen_random_uuid(), 'q' || (g %% %(queues)s), 'bench:noop', s.status, json_build_object('i', g),
       now() + CASE s.status WHEN 'scheduled' THEN interval '1 hour' * random()
                             WHEN 'retry' THEN interval '30 s' * (random() - 0.5)
                             ELSE -interval '1 min' * random() END,
       now() - interval '1 min', CASE s.status WHEN 'active' THEN now() END,
       CASE s.status WHEN 'active' THEN g END,
       CASE s.status WHEN 'active' THEN now() + interval '1 hour' END,
       CASE s.status WHEN 'active' THEN 'bench' END, CASE s.status WHEN 'active' THEN 1 ELSE 0 END,
       3, 5, CASE WHEN g %% 3 = 0 THEN g %% 201 - 100 ELSE 0 END
FROM generate_series(1, %(n)s) AS g,
     LATERAL (SELECT CASE WHEN g %% 10 < 5 THEN 'pending' WHEN g %% 10 < 7 THEN 'scheduled'
                          WHEN g %% 10 < 9 THEN 'retry' ELSE 'active' END AS status) AS s
"""
COUNTERS = """
INSERT INTO {s}.finished_counts (queue, status, n)
SELECT queue, status, count(*) FROM {s}.jobs WHERE status IN ('completed', 'cancelled', 'dead')
GROUP BY queue, status
"""
QUEUES = (
    "INSERT INTO {s}.queues (name, created_at) SELECT 'q' || i, now() FROM generate_series(0, %(last)s) i"
)

READS = ("stats()", "activity()", "counts()")


def dsn_for(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def jit_sessions(jit: str) -> None:
    """Sessions this process opens from now on run with ``jit`` (libpq reads PGOPTIONS at
    connect time; a tree without the DSN's ``options`` fix measures the same way)."""
    os.environ["PGOPTIONS"] = f"-c jit={jit}"


def fill(base: str, schema: str, args: argparse.Namespace) -> None:
    name = sql.Identifier(schema)
    started = time.perf_counter()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(name))
    migrate(dsn_for(base, schema))
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER TABLE {}.jobs DISABLE TRIGGER USER").format(name))
        step = 500_000
        for first in range(1, args.retained + 1, step):
            last = min(first + step - 1, args.retained)
            params = {"queues": args.queues, "first": first, "last": last, "n": args.retained}
            conn.execute(sql.SQL(HISTORY).format(s=name), params)  # type: ignore[arg-type]
        conn.execute(sql.SQL(LIVE).format(s=name), {"queues": args.queues, "n": args.live * args.queues})  # type: ignore[arg-type]
        conn.execute(sql.SQL("ALTER TABLE {}.jobs ENABLE TRIGGER USER").format(name))
        conn.execute(sql.SQL(COUNTERS).format(s=name))
        conn.execute(sql.SQL(QUEUES).format(s=name), {"last": args.queues - 1})  # type: ignore[arg-type]
        conn.execute(sql.SQL("VACUUM ANALYZE {}.jobs").format(name))
    print(f"filled {args.retained:,} finished and {args.live * args.queues:,} live jobs in "
          f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip


def activity_plan(base: str, schema: str, jit: str) -> str:
    """What the server says of the ``activity`` query in a session with ``jit``."""
    jit_sessions(jit)
    with psycopg.connect(base) as conn:
        setting = conn.execute("SHOW jit").fetchone()
        [(plan,)] = conn.execute(
            "EXPLAIN (FORMAT JSON) " + queries_for(schema)["activity"],  # type: ignore[operator]
            {"window": 60.0, "now": None},
        ).fetchall()
    top = plan[0]
    compiled = "JIT compiled" if "JIT" in top else "no JIT"
    return f"jit={setting[0] if setting else '?'}: activity cost {top['Plan']['Total Cost']:,.0f}, {compiled}"


async def times_ms(read: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    for _ in range(2):  # untimed: connections opened, caches warm
        await read()
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        await read()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def round_for(dsn: str, repeat: int) -> dict[str, list[float]]:
    client = pqueue.AsyncClient(dsn)
    await client.open()
    broker = client.broker
    try:
        reads = {"stats()": client.stats, "activity()": broker.activity, "counts()": broker.counts}
        return {name: await times_ms(reads[name], repeat) for name in READS}
    finally:
        await client.close()


def summary(times: list[float]) -> str:
    p95 = statistics.quantiles(times, n=20, method="inclusive")[18] if len(times) >= 2 else times[0]
    return f"median {statistics.median(times):8.2f} ms  p95 {p95:8.2f} ms  max {max(times):8.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True, help="postgresql://... (no ?schema=)")
    parser.add_argument("--schema", default="pqjit")
    parser.add_argument("--retained", type=int, default=1_000_000)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--live", type=int, default=1000, help="live jobs per queue")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of jit on, then off")
    parser.add_argument("--keep", action="store_true", help="keep the schema")
    args = parser.parse_args()
    print(f"pqueue from {os.path.dirname(pqueue.__file__)}; load average {os.getloadavg()}", flush=True)
    fill(args.dsn, args.schema, args)
    try:
        for jit in ("on", "off"):
            print(activity_plan(args.dsn, args.schema, jit), flush=True)
        results: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for jit in ("on", "off"):
                jit_sessions(jit)
                got = asyncio.run(round_for(dsn_for(args.dsn, args.schema), args.repeat))
                for name, times in got.items():
                    results.setdefault((jit, name), []).extend(times)
        for (jit, name), times in results.items():
            print(f"jit={jit:<3} {name:<11} {summary(times)} ({len(times)} runs)", flush=True)
    finally:
        print(f"load average {os.getloadavg()}", flush=True)
        if not args.keep:
            with psycopg.connect(args.dsn, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(args.schema)))


if __name__ == "__main__":
    main()
