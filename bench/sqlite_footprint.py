"""The SQLite file's size per 100,000 retained jobs, and whether pruning keeps it bounded.

Fills a fresh file with ``--jobs`` completed jobs (enqueued in batches, claimed and acked),
checkpoints the WAL and reports the file's size; then prunes them all (retention 0) and
does it again, twice: a file whose size stops growing after the first round is bounded by
pruning alone (SQLite reuses the freed pages; ADR 0149).

    python bench/sqlite_footprint.py --jobs 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import tempfile
from contextlib import closing

import pqueue
from pqueue.spec import build_specs

BATCH = 1000


def size(path: str) -> int:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0)


async def fill(dsn: str, jobs: int) -> None:
    async with pqueue.connect(dsn, synchronous="normal") as broker:
        for start in range(0, jobs, BATCH):
            payloads = [{"n": i, "day": "2026-11-27"} for i in range(start, start + BATCH)]
            specs = build_specs("bench:job", payloads)
            await broker.enqueue(specs)
            leases = await broker.claim(["default"], worker_id="w", limit=BATCH, lease_for=60)
            await broker.ack(leases, ['{"ok": true}'] * len(leases))


async def prune_all(dsn: str) -> int:
    removed = 0
    async with pqueue.connect(dsn, retention=0) as broker:
        while n := await broker.prune(limit=10_000):
            removed += n
    return removed


async def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "footprint.db")
        dsn = f"sqlite:///{path}"
        for round_ in (1, 2, 3):
            await fill(dsn, args.jobs)
            retained = size(path)
            pruned = await prune_all(dsn)
            print(json.dumps({"round": round_, "jobs": args.jobs, "bytes_retained": retained,
                              "mb_per_100k": round(retained / args.jobs * 100_000 / 1e6, 1),
                              "pruned": pruned, "bytes_after_prune": size(path)}), flush=True)  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
