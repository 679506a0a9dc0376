"""What per-job priority costs: the enqueue and the claim, before and after, interleaved.

Issue 26 allows jobs at the default priority at most 5 % more on enqueue and drain, and
asks prioritized jobs to drain at least 0.7x as fast as plain ones. This times, batch by
batch in turn on the same server and schema/prefix, three variants of the same operation:
  baseline   the statement (Postgres ``enqueue_plain``, ``claim``) or script (Redis
             ``enqueue.lua``, ``claim.lua``) as it was at ``--baseline`` (``git show``),
             on jobs without a priority (on Postgres in a schema built by that ref's
             migrations, whose indexes its statements were written for);
  plain      this tree's, on jobs without a priority;
  priority   this tree's, on jobs with priorities spread over -100..100.
Each variant has a queue of its own, so a claim only ever meets its own jobs. A busy
machine slows all three alike; the medians per batch are printed with the ratios.

    python bench/priority_cost.py --redis redis://127.0.0.1:6379/3 \\
        --postgres postgresql://postgres@127.0.0.1:5432/pqueue_bench --jobs 20000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

import pqueue
from pqueue.brokers.postgres.codec import column_arrays
from pqueue.brokers.postgres.migrate import migrate
from pqueue.brokers.postgres.sql import parse_named, queries_for, render
from pqueue.brokers.redis import calls
from pqueue.job import JobSpec
from pqueue.spec import build_spec

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("baseline", "plain", "priority")
Times = dict[str, dict[str, list[float]]]


def baseline(ref: str, path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def batch_of(variant: str, n: int, start: int) -> list[JobSpec]:
    spread = variant == "priority"
    return [
        build_spec("bench:noop", i, queue=variant, priority=(i * 37) % 201 - 100 if spread else 0)
        for i in range(start, start + n)
    ]


def report(backend: str, times: Times, batch: int) -> None:
    for operation, per in times.items():
        medians = {v: statistics.median(per[v][5:]) * 1000 for v in VARIANTS}
        base = medians["baseline"]
        print(
            f"{backend} {operation} of {batch} jobs, median ms: baseline {base:.3f}, "
            f"plain {medians['plain']:.3f} ({medians['plain'] / base:.3f}x), "
            f"priority {medians['priority']:.3f} ({medians['priority'] / base:.3f}x); "
            f"{len(per['plain'])} batches each"
        )


def timed(times: list[float], conn: psycopg.Connection[Any], text: Any, params: dict[str, Any]) -> Any:
    start = time.perf_counter()
    out = conn.execute(text, params, prepare=True).fetchall()
    times.append(time.perf_counter() - start)
    return out


def baseline_schema(conn: psycopg.Connection[Any], ref: str, schema: str) -> None:
    """A schema as ``ref``'s migrations left it (applied in order, unrecorded)."""
    folder = "src/pqueue/brokers/postgres/migrations/"
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", ref, folder], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    conn.execute(render("CREATE SCHEMA {schema}", schema))
    for name in sorted(names):
        conn.execute(render(baseline(ref, name), schema))


def postgres(url: str, jobs: int, batch: int, ref: str) -> None:
    schema = "pqprio" + uuid.uuid4().hex[:8]
    old_schema, prio_schema = schema + "base", schema + "prio"  # a table per variant
    migrate(f"{url}?schema={schema}")
    migrate(f"{url}?schema={prio_schema}")
    q, qp = queries_for(schema), queries_for(prio_schema)
    old = parse_named(baseline(ref, "src/pqueue/brokers/postgres/queries.sql"))
    enqueue = {"baseline": render(old["enqueue_plain"], old_schema), "plain": q["enqueue_plain"]}
    enqueue["priority"] = qp["enqueue_plain"]
    # {job_columns} renders as this tree's, which ends with the new column: not in the old schema
    old_claim = render(old["claim"], old_schema).replace(", t.priority", "")
    claim = {"baseline": old_claim, "plain": q["claim"], "priority": qp["claim"]}
    times: Times = {"enqueue": {v: [] for v in VARIANTS}, "claim": {v: [] for v in VARIANTS}}
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            baseline_schema(conn, ref, old_schema)
            for i, start in enumerate(range(0, jobs, batch)):
                for variant in VARIANTS[i % 3 :] + VARIANTS[: i % 3]:
                    specs = batch_of(variant, batch, start)
                    params: dict[str, Any] = {"now": None, **column_arrays(specs, [s.id for s in specs])}
                    if variant == "baseline":
                        del params["priority"]
                    timed(times["enqueue"][variant], conn, enqueue[variant], params)
            for i in range(jobs // batch):
                for variant in VARIANTS[i % 3 :] + VARIANTS[: i % 3]:
                    claimed = {
                        "now": None,
                        "queues": [variant],
                        "limit": batch,
                        "lease_for": 60,
                        "worker_id": "w",
                        "unpark": False,
                    }
                    rows = timed(times["claim"][variant], conn, claim[variant], claimed)
                    assert len(rows) == batch, (variant, len(rows))
        finally:
            for name in (schema, old_schema, prio_schema):
                conn.execute(render("DROP SCHEMA IF EXISTS {schema} CASCADE", name))
    report("postgres", times, batch)


async def redis(url: str, jobs: int, batch: int, ref: str) -> None:
    prefix = "pqprio" + uuid.uuid4().hex[:8]
    broker: Any = pqueue.connect(f"{url}?prefix={prefix}")
    await broker.open()
    lua = "src/pqueue/brokers/redis/lua/"
    lib = baseline(ref, lua + "_lib.lua")
    old = {
        "enqueue": await broker.client.script_load(lib + "\n" + baseline(ref, lua + "enqueue.lua")),
        "claim": await broker.client.script_load(
            lib + "\n" + baseline(ref, lua + "_limits.lua") + "\n" + baseline(ref, lua + "claim.lua")
        ),
    }
    times: Times = {"enqueue": {v: [] for v in VARIANTS}, "claim": {v: [] for v in VARIANTS}}
    now = ""

    async def run(variant: str, call: Any) -> Any:
        if variant == "baseline":
            return await broker.client.execute_command(
                "EVALSHA", old[call.name], len(call.keys), *call.keys, *call.args
            )
        return await broker.run(call)

    async def timed_async(sink: list[float], variant: str, call: Any) -> Any:
        start = time.perf_counter()
        out = await run(variant, call)
        sink.append(time.perf_counter() - start)
        return out

    try:
        for variant in VARIANTS:  # register each queue once, as a broker's first enqueue does
            await broker.enqueue(batch_of(variant, 1, jobs))
            await broker.claim([variant], worker_id="w", limit=1, lease_for=60)
        for i, start in enumerate(range(0, jobs, batch)):
            for variant in VARIANTS[i % 3 :] + VARIANTS[: i % 3]:
                k = broker.queue(variant)
                call = calls.enqueue(k, batch_of(variant, batch, start), now, "none", "none:")
                await timed_async(times["enqueue"][variant], variant, call)
        for i in range(jobs // batch):
            for variant in VARIANTS[i % 3 :] + VARIANTS[: i % 3]:
                k = broker.queue(variant)
                call = calls.claim(k, now, batch, 60_000, "w", parking="none w")
                _, leased = await timed_async(times["claim"][variant], variant, call)
                assert len(leased) == batch, (variant, len(leased))
        report("redis", times, batch)
    finally:
        keys = [key async for key in broker.client.scan_iter(match=f"{prefix}:*", count=1000)]
        for i in range(0, len(keys), 500):
            await broker.client.delete(*keys[i : i + 500])
        await broker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/pqueue_bench")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per variant")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--baseline", default="298f3c5", help="git ref of the tree before issue 26")
    parser.add_argument("--only", choices=("redis", "postgres"), default=None)
    args = parser.parse_args()
    if args.only in (None, "postgres"):
        postgres(args.postgres, args.jobs, args.batch, args.baseline)
    if args.only in (None, "redis"):
        asyncio.run(redis(args.redis, args.jobs, args.batch, args.baseline))


if __name__ == "__main__":
    main()
