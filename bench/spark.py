"""pqueue on Spark: bulk enqueue through ``format("pqueue")`` and the report over exported jobs.

Scenarios (each timed after Spark has started and the data source has been used once):
  spark_write     N rows (``spark.range`` + two columns, ``--partitions`` partitions) written
                  with ``df.write.format("pqueue")`` and ids from the row key
  spark_rewrite   the same DataFrame again: every id exists, 0 jobs added (the retry cost)
  enqueue_many    the same N jobs (ids from the same keys) from one process through
                  ``pqueue.Client.enqueue_many`` in batches of 5,000: the baseline
  report          ``pqueue.spark.report`` over N synthetic exported jobs in Parquet, every
                  table collected (``--report-rows``)

    python bench/spark.py --redis redis://127.0.0.1:6379/3 --postgres postgresql://postgres@127.0.0.1/test

Each backend runs in a namespace of its own (a Redis key prefix, a Postgres schema) that is
removed afterwards. Figures go to docs/benchmarks.md, "Spark".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import pqueue.spark
from pqueue.ids import key_id
from pqueue.sync import Client
from pqueue.task import Task

QUEUE, TYPE = "bench", "bench.noop"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def namespaced(kind: str, url: str) -> tuple[str, Callable[[], None]]:
    """A DSN on a fresh namespace, and the function that removes it."""
    name = f"pqbs{uuid.uuid4().hex[:10]}"
    sep = "&" if "?" in url else "?"
    if kind == "redis":
        import redis

        def drop_redis() -> None:
            client = redis.Redis.from_url(url)
            for keys in _chunks(list(client.scan_iter(match=f"{name}:*", count=5000)), 5000):
                client.unlink(*keys)
            client.close()

        return f"{url}{sep}prefix={name}", drop_redis
    import psycopg

    from pqueue.brokers.postgres import migrate

    dsn = f"{url}{sep}schema={name}"
    migrate(dsn)

    def drop_postgres() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

    return dsn, drop_postgres


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def bench_enqueue(spark: Any, kind: str, url: str, rows: int, partitions: int) -> dict[str, float]:
    frame = spark.range(0, rows, 1, partitions).selectExpr("id AS user_id", "concat('user-', id) AS name")
    options = {"type": TYPE, "queue": QUEUE, "idColumn": "user_id"}
    out: dict[str, float] = {}
    dsn, drop = namespaced(kind, url)
    try:
        pqueue.spark.enqueue(spark.range(10), dsn=dsn, type="warm", queue="warm", idColumn="id")
        seconds, counts = timed(lambda: pqueue.spark.enqueue(frame, dsn=dsn, **options))
        assert counts.inserted == rows, counts
        out["spark_write"] = rows / seconds
        seconds, counts = timed(lambda: pqueue.spark.enqueue(frame, dsn=dsn, **options))
        assert counts.inserted == 0 and counts.present == rows, counts
        out["spark_rewrite"] = rows / seconds
    finally:
        drop()
    dsn, drop = namespaced(kind, url)
    try:
        with Client(dsn) as client:

            def baseline() -> int:
                made = 0
                for start in range(0, rows, 5000):
                    tasks = [
                        Task(
                            TYPE,
                            {"user_id": i, "name": f"user-{i}"},
                            queue=QUEUE,
                            job_id=key_id(QUEUE, TYPE, str(i)),
                        )
                        for i in range(start, min(start + 5000, rows))
                    ]
                    made += sum(r.created for r in client.enqueue_many(tasks))
                return made

            seconds, made = timed(baseline)
            assert made == rows
            out["enqueue_many"] = rows / seconds
    finally:
        drop()
    return out


def synthetic_export(folder: str, rows: int) -> None:
    """``rows`` finished jobs: 4 queues x 5 types over 6 hours; 92 % completed, 6 % completed
    after a retry, 2 % dead; wait ~ Exp(mean 2 s), run ~ Exp(mean 0.5 s)."""
    u1, u2, u3 = (pc.random(rows) for _ in range(3))
    index = pa.array(range(rows), pa.int64())
    wait = pc.multiply(pc.ln(pc.subtract(1.0, u1)), -2.0)
    run = pc.multiply(pc.ln(pc.subtract(1.0, u2)), -0.5)
    base = 1_780_000_000_000_000  # micros
    enqueued = pc.add(pc.multiply(index, 21_600_000_000 // rows), base)
    started = pc.add(enqueued, pc.cast(pc.multiply(wait, 1e6), pa.int64(), safe=False))
    finished = pc.add(started, pc.cast(pc.multiply(run, 1e6), pa.int64(), safe=False))
    dead = pc.less(u3, 0.02)
    retried = pc.and_(pc.greater_equal(u3, 0.02), pc.less(u3, 0.08))
    status = pc.if_else(dead, "dead", "completed")
    error_kind = pc.if_else(
        dead, "KeyError", pc.if_else(retried, "TimeoutError", pa.scalar(None, pa.string()))
    )
    names = [f"q{i % 4}" for i in range(rows)]
    types = [f"t{i % 5}" for i in range(rows)]
    ts = pa.timestamp("us", tz="UTC")
    table = pa.table(
        {
            "id": pc.cast(index, pa.string()),
            "type": types,
            "queue": names,
            "status": status,
            "attempt": pc.cast(pc.if_else(retried, 2, 1), pa.int32()),
            "recoveries": pa.array([0] * rows, pa.int32()),
            "enqueued_at": pc.cast(enqueued, ts),
            "started_at": pc.cast(started, ts),
            "finished_at": pc.cast(finished, ts),
            "wait_s": wait,
            "run_s": run,
            "last_error_kind": error_kind,
            "last_error_message": pc.if_else(dead, "no such user", pa.scalar(None, pa.string())),
            "payload": pa.array(["{}"] * rows),
        }
    )
    pq.write_table(table, os.path.join(folder, "part-0.parquet"), compression="zstd")


def bench_report(spark: Any, rows: int) -> dict[str, float]:
    from pqueue.spark.report import collect, report

    folder = tempfile.mkdtemp(prefix="pqueue-bench-report-")
    try:
        synthetic_export(folder, rows)
        jobs = spark.read.parquet(folder)
        runs = []
        for _ in range(3):
            tables = report(jobs)
            seconds, _ = timed(lambda t=tables: {n: collect(getattr(t, n)) for n in t.__dataclass_fields__})
            jobs.unpersist()
            runs.append(seconds)
        latency = collect(report(jobs).latency)
        q0 = next(r for r in latency if r["queue"] == "q0" and r["type"] == "t0")
        expected = -2 * math.log(0.5)  # median of Exp(mean 2)
        print(f"# check: q0/t0 wait p50 {q0['wait_p50_s']:.3f} s (Exp(2) median {expected:.3f})")
        return {"report_seconds": statistics.median(runs), "report_rows": rows}
    finally:
        shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--redis", help="Redis URL (a key prefix is added)")
    parser.add_argument("--postgres", help="Postgres URL (a schema is added)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--report-rows", type=int, default=1_000_000, help="0 skips the report")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    from pqueue.spark.session import spark_session

    started, spark = timed(lambda: spark_session(args.master, app="pqueue-bench"))
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "spark_start_s": started,
        "rows": args.rows,
        "partitions": args.partitions,
    }
    for kind, url in (("redis", args.redis), ("postgres", args.postgres)):
        if url:
            for name, rate in bench_enqueue(spark, kind, url, args.rows, args.partitions).items():
                results[f"{kind}_{name}_jobs_per_s"] = round(rate)
                print(f"{kind:9} {name:14} {rate:>10,.0f} jobs/s", flush=True)
    if args.report_rows:
        results.update(bench_report(spark, args.report_rows))
        print(f"report over {args.report_rows:,} jobs: {results['report_seconds']:.2f} s")
    results["load_after"] = os.getloadavg()[0]
    print(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    main()
