"""Does history slow the hot path? Postgres claim + ack with millions of retained jobs.

Migrates two throw-away schemas in ``--dsn``'s database: ``<prefix>_empty`` and
``<prefix>_history``. The second is filled server-side (``generate_series``, not through
the API) with ``--retained`` completed jobs finished within the retention window (kept,
not yet prunable), then vacuumed and analysed, as autovacuum would. Then, ``--repeat``
times and alternating between the two schemas:

- ``claim_ack``: ``--n`` jobs enqueued (untimed), then claimed ``--claim-batch`` at a
  time and acked, one broker, timed from the first claim to the last ack; with
  ``--running K``, K jobs of another queue are held leased (active) meanwhile in both
  schemas, as long jobs of other workers are (an ack must not read them, ADR 0131);

and once, on the history schema: ``EXPLAIN (ANALYZE, BUFFERS)`` of the claim and the ack
with generic plans (what the broker's prepared statements run), which must read the
partial indexes, not the table's history; ``prune`` of ``--expired`` completed jobs past
retention in batches of ``--prune-batch``; and claim + ack again while another broker
prunes. Both schemas are dropped at the end (``--keep`` keeps them).

    python bench/retention_postgres.py --dsn postgresql://postgres@127.0.0.1:5432/test \\
        --retained 5000000 --n 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from typing import Any

import psycopg

import pqueue
from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.sql import queries_for
from pqueue.worker.maintenance import BATCH, Maintenance

QUEUE = "bench"
LEASE = 60.0

FILL = """
INSERT INTO {s}.jobs (id, queue, type, status, payload, run_at, created_at, started_at,
                      finished_at, attempt, max_retries, max_recoveries)
SELECT gen_random_uuid(), %(queue)s, 'bench:noop', 'completed', json_build_object('i', g),
       t, t, t, t + interval '1 ms', 1, 3, 5
FROM generate_series(1, %(n)s) AS g,
     LATERAL (SELECT now() - make_interval(secs => %(ago)s + %(spread)s * (1 - g::float8 / %(n)s)) AS t) AS at
"""


def dsn_for(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def sql(base: str, statement: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(base, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def fill(
    base: str, schema: str, n: int, *, ago: float = 0.0, spread: float = 3000.0, queue: str = QUEUE
) -> float:
    """Write ``n`` completed jobs, finished over ``spread`` seconds up to ``ago`` seconds ago,
    and vacuum; returns the seconds it took."""
    started = time.perf_counter()
    chunk = 1_000_000
    for offset in range(0, n, chunk):
        params = {"queue": queue, "n": min(chunk, n - offset), "ago": ago, "spread": spread}
        sql(base, FILL.format(s=schema), params)
    queries = queries_for(schema)
    if "fold_counts" in queries.names():  # the rows' counter deltas (ADR 0139), as a prune would
        sql(base, queries["fold_counts"], {"lock": f"pqueue.fold:{schema}"})
        sql(base, f"VACUUM ANALYZE {schema}.finished_deltas")  # as autovacuum soon would
    sql(base, f"VACUUM ANALYZE {schema}.jobs")
    return time.perf_counter() - started


async def enqueue_noops(broker: pqueue.Broker, job_type: str, queue: str, n: int) -> None:
    """Enqueue ``n`` jobs of ``job_type`` in ``queue``, 1,000 per call (untimed set-up)."""
    specs = [pqueue.build_spec(job_type, {"i": i}, queue=queue) for i in range(n)]
    for i in range(0, n, 1000):
        await broker.enqueue(specs[i : i + 1000])


async def claim_ack(dsn: str, n: int, batch: int) -> float:
    broker = pqueue.connect(dsn)
    await broker.open()
    try:
        await enqueue_noops(broker, "bench:noop", QUEUE, n)
        start = time.perf_counter()
        done = 0
        while done < n:
            leases = await broker.claim([QUEUE], worker_id="bench", limit=batch, lease_for=LEASE)
            if not leases:
                raise RuntimeError(f"claim_ack: only {done} of {n} jobs came back")
            await broker.ack(leases)
            done += len(leases)
        return n / (time.perf_counter() - start)
    finally:
        await broker.close()


LITERALS = {
    "queues": f"'{{{QUEUE}}}'::text[]",
    "limit": "100",
    "lease_for": str(LEASE),
    "worker_id": "'w'",
    "now": "NULL",
    "unpark": "false",
    "id": "ARRAY[gen_random_uuid()]",
    "token": "ARRAY[1::bigint]",
}


EXAMPLE: dict[str, object] = {
    "queues": [QUEUE], "limit": 100, "lease_for": LEASE, "worker_id": "w", "now": None,
    "unpark": False, "id": [uuid.uuid4()], "token": [1],
}  # fmt: skip
"""Values of the broker's types for LITERALS' parameters (only their types are used)."""


def _type_name(conn: psycopg.Connection[Any], oid: int) -> str:
    """A dumped parameter's type as PREPARE takes it; a None (oid 0) is left to the server."""
    if not oid:
        return "unknown"
    info = conn.adapters.types[oid]
    return f"{info.regtype}[]" if oid == info.array_oid else info.regtype


def explain(base: str, schema: str) -> str:
    """Generic plans (as the broker's prepared statements run them) of the claim, with
    nothing due, and of the ack of one lease that matches nothing: what they read."""
    from psycopg._queries import PostgresQuery

    out = []
    with psycopg.connect(base, autocommit=True) as conn, conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        for name in ("claim", "ack"):
            converted = PostgresQuery(psycopg.adapt.Transformer(conn))
            converted.convert(queries_for(schema)[name], EXAMPLE)
            converted.dump(EXAMPLE)  # the parameter types the broker's statement is prepared with
            types = ", ".join(_type_name(conn, oid) for oid in converted.types)
            conn.execute(f"PREPARE plan_{name} ({types}) AS ".encode() + converted.query)
            values = ", ".join(LITERALS[key] for key in converted._order or [])
            rows = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE plan_{name}({values})")
            out.append(f"{name}:\n" + "\n".join(row[0] for row in rows))
    return "\n\n".join(out)


async def prune_rate(dsn: str, batch: int) -> tuple[int, float]:
    cleaner = pqueue.connect(dsn, retention=3600)
    await cleaner.open()
    try:
        start, gone = time.perf_counter(), 0
        while removed := await cleaner.prune(limit=batch):
            gone += removed
        return gone, time.perf_counter() - start
    finally:
        await cleaner.close()


async def claim_ack_while_pruning(dsn: str, n: int, batch: int, *, paced: bool) -> tuple[float, int]:
    """Claim + ack while another broker prunes expired history: batch after batch
    (``paced=False``), or as a worker's housekeeping does, resting between batches."""
    stop = asyncio.Event()
    gone = 0

    async def pruner() -> None:
        nonlocal gone
        cleaner = pqueue.connect(dsn, retention=3600)
        await cleaner.open()
        try:
            if paced:
                gone = await Maintenance(cleaner, stop=stop).prune()
            else:
                while not stop.is_set():
                    gone += await cleaner.prune(limit=BATCH)
        finally:
            await cleaner.close()

    task = asyncio.create_task(pruner())
    try:
        rate = await claim_ack(dsn, n, batch)
    finally:
        stop.set()
        await task
    return rate, gone


async def hold_running(dsn: str, k: int) -> None:
    """Lease ``k`` jobs of the queue ``running`` for an hour and leave them active."""
    broker = pqueue.connect(dsn)
    await broker.open()
    try:
        await enqueue_noops(broker, "bench:long", "running", k)
        held = 0
        while held < k:
            leases = await broker.claim(["running"], worker_id="other", limit=1000, lease_for=3600.0)
            if not leases:
                raise RuntimeError(f"hold_running: only {held} of {k} jobs came back")
            held += len(leases)
    finally:
        await broker.close()


def size(base: str, schema: str) -> str:
    rows = sql(
        base, f"SELECT pg_size_pretty(pg_total_relation_size('{schema}.jobs')), count(*) FROM {schema}.jobs"
    )
    return f"{rows[0][1]:,} rows, {rows[0][0]} with indexes"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True, help="database URL without ?schema=")
    parser.add_argument("--prefix", default="pqret")
    parser.add_argument("--retained", type=int, default=5_000_000)
    parser.add_argument("--expired", type=int, default=1_000_000, help="jobs past retention, for prune")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--claim-batch", type=int, default=100)
    parser.add_argument("--prune-batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--running", type=int, default=0, help="jobs held active meanwhile")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    empty, history = f"{args.prefix}_empty", f"{args.prefix}_history"
    schemas = {"empty": empty, "history": history}
    for schema in schemas.values():
        sql(args.dsn, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        migrate(dsn_for(args.dsn, schema))
    try:
        took = fill(args.dsn, history, args.retained)  # the last 50 min: within the 1-day retention
        print(f"filled {history}: {size(args.dsn, history)} in {took:.0f} s")
        sql(args.dsn, f"VACUUM ANALYZE {empty}.jobs")
        if args.running:
            for schema in schemas.values():
                asyncio.run(hold_running(dsn_for(args.dsn, schema), args.running))
            print(f"holding {args.running:,} jobs active in each schema")
        rates: dict[str, list[float]] = {"empty": [], "history": []}
        for _ in range(args.repeat):
            for name, schema in schemas.items():
                rates[name].append(
                    asyncio.run(claim_ack(dsn_for(args.dsn, schema), args.n, args.claim_batch))
                )
                print(f"  claim_ack {name}: {rates[name][-1]:,.0f} jobs/s", flush=True)
        medians = {name: statistics.median(runs) for name, runs in rates.items()}
        for name, runs in rates.items():
            print(f"claim_ack {name}: median {medians[name]:,.0f} jobs/s "
                  f"(runs {', '.join(f'{r:,.0f}' for r in runs)})")  # fmt: skip
        print(f"history / empty: {medians['history'] / medians['empty']:.2f}")
        print(explain(args.dsn, history))
        # Prune: expired history (finished two days ago) beside the retained one.
        fill(args.dsn, history, args.expired, ago=2 * 86400.0, queue="old")
        gone, seconds = asyncio.run(prune_rate(dsn_for(args.dsn, history), args.prune_batch))
        print(f"prune: {gone:,} expired jobs in {seconds:.1f} s = {gone / seconds:,.0f} rows/s "
              f"(batches of {args.prune_batch}); left {size(args.dsn, history)}")  # fmt: skip
        for paced in (False, True):
            fill(args.dsn, history, args.expired, ago=2 * 86400.0, queue="old")
            rate, gone = asyncio.run(
                claim_ack_while_pruning(dsn_for(args.dsn, history), args.n, args.claim_batch, paced=paced)
            )
            how = "resting between batches (a worker's pass)" if paced else "batch after batch"
            print(f"claim_ack history while another broker prunes {how}: {rate:,.0f} jobs/s "
                  f"({gone:,} rows pruned meanwhile)")  # fmt: skip
            sql(args.dsn, f"DELETE FROM {history}.jobs WHERE queue = 'old'")
    finally:
        if not args.keep:
            for schema in schemas.values():
                sql(args.dsn, f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
