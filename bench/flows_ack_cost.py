"""What dependencies and result waiters cost jobs that use neither: the ack, before and after.

Issue 16 allows at most 5 % on ack/fail for jobs without dependants or waiters. This times
acks of batches of ``--batch`` claimed jobs with this tree's statement (Postgres
``ack_results``) or script (Redis ``ack.lua``), interleaved batch by batch with the same
operation as it was at ``--baseline`` (read with ``git show``), on the same schema/prefix
and server, so load on a shared machine hits both alike. Prints the median time per batch.

    python bench/flows_ack_cost.py --redis redis://127.0.0.1:6379/3 \\
        --postgres postgresql://postgres@127.0.0.1:5432/test --jobs 30000 [--baseline f4297ac]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
import uuid
from importlib.resources import files
from pathlib import Path
from typing import Any

import psycopg

import pqueue
from pqueue.brokers.postgres.migrate import migrate
from pqueue.brokers.postgres.sql import parse_named, queries_for, render
from pqueue.brokers.redis import calls
from pqueue.spec import build_spec

ROOT = Path(__file__).resolve().parents[1]


def baseline(ref: str, path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def report(name: str, times: dict[str, list[float]], batch: int) -> None:
    old, new = (statistics.median(times[k][10:]) * 1000 for k in ("baseline", "this tree"))
    change = (new / old - 1) * 100
    print(
        f"{name}: ack of {batch} jobs, median ms: baseline {old:.3f}, this tree {new:.3f} ({change:+.1f} %)"
    )


def postgres(url: str, jobs: int, batch: int, ref: str) -> None:
    schema = "pqbench" + uuid.uuid4().hex[:8]
    migrate(f"{url}?schema={schema}")
    q = queries_for(schema)
    old_text = parse_named(baseline(ref, "src/pqueue/brokers/postgres/queries.sql"))["ack_results"]
    statements = {"baseline": render(old_text, schema), "this tree": q["ack_results"]}
    times: dict[str, list[float]] = {"baseline": [], "this tree": []}
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute(
                render(
                    "INSERT INTO {schema}.jobs (id, queue, type, status, payload, run_at, created_at, "
                    "max_retries, max_recoveries) "
                    "SELECT u, 'default', 't', 'pending', '1', now(), now(), 3, 5 "
                    "FROM unnest(%(ids)s::uuid[]) AS u",
                    schema,
                ),
                {"ids": [str(uuid.uuid4()) for _ in range(jobs)]},
            )
            claim = {
                "now": None,
                "queues": ["default"],
                "limit": batch,
                "lease_for": 60,
                "worker_id": "w",
                "unpark": False,
            }
            for i in range(jobs // batch):
                rows = conn.execute(q["claim"], claim, prepare=True).fetchall()
                which = "baseline" if i % 2 else "this tree"
                params: dict[str, Any] = {
                    "now": None,
                    "id": [r[4] for r in rows],
                    "token": [r[2] for r in rows],
                }
                params["result"] = ["1"] * len(rows)
                start = time.perf_counter()
                done = conn.execute(statements[which], params, prepare=True).fetchall()
                times[which].append(time.perf_counter() - start)
                assert len(done) == len(rows)
        finally:
            conn.execute(render("DROP SCHEMA {schema} CASCADE", schema))
    report("postgres", times, batch)


async def redis(url: str, jobs: int, batch: int, ref: str) -> None:
    prefix = "pqbench" + uuid.uuid4().hex[:8]
    broker: Any = pqueue.connect(f"{url}?prefix={prefix}")
    await broker.open()
    try:
        lib = (files("pqueue.brokers.redis") / "lua" / "_lib.lua").read_text()
        old_sha = await broker.client.script_load(
            lib + "\n" + baseline(ref, "src/pqueue/brokers/redis/lua/ack.lua")
        )
        await broker.enqueue([build_spec("t", i) for i in range(jobs)])
        times: dict[str, list[float]] = {"baseline": [], "this tree": []}
        k = broker.queue("default")
        for i in range(jobs // batch):
            leases = await broker.claim(["default"], worker_id="w", limit=batch, lease_for=60)
            call = calls.ack(
                k, "", 0, leases, ["1"] * len(leases), results_channel=broker.keys.results_channel
            )
            which = "baseline" if i % 2 else "this tree"
            start = time.perf_counter()
            if which == "baseline":  # the old script: two keys, four arguments
                out = await broker.client.execute_command(
                    "EVALSHA", old_sha, 2, *call.keys[:2], *call.args[:4]
                )
            else:
                out = await broker.run(call)
            times[which].append(time.perf_counter() - start)
            assert all(o == 1 for o in out)
        report("redis", times, batch)
    finally:
        keys = [key async for key in broker.client.scan_iter(match=f"{prefix}:*", count=1000)]
        for i in range(0, len(keys), 500):
            await broker.client.delete(*keys[i : i + 500])
        await broker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=30000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--baseline", default="f4297ac", help="git ref of the tree before issue 16")
    args = parser.parse_args()
    postgres(args.postgres, args.jobs, args.batch, args.baseline)
    asyncio.run(redis(args.redis, args.jobs, args.batch, args.baseline))


if __name__ == "__main__":
    main()
