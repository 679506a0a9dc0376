"""``pqueue report``: throughput, wait/run percentiles, failure rates and top errors.

Reads exported Parquet (``--input DIR``, from ``pqueue export``) or the broker itself
(``--dsn``, through the ``pqueue`` Spark data source), computes the tables of
:mod:`pqueue.spark.report` on Spark (``--spark-master``, default ``local[*]``), prints
them and, with ``--html FILE``, writes one self-contained HTML page with charts.
Needs ``pip install "pqueue-jobs[spark]"``; docs/spark.md.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pqueue.errors import ConfigError
from pqueue.extras import install_hint


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="job throughput, latency percentiles, failure rates and top errors (Spark)",
        description=(
            "Compute per queue and type: jobs per minute, wait and run p50/p95/p99, failure, dead, "
            "retry and recovery rates, and the top errors, from exported Parquet or a broker."
        ),
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", type=Path, help="folder written by pqueue export")
    source.add_argument("--dsn", default=None, help="read the broker instead (env PQUEUE_DSN)")
    parser.add_argument(
        "--since", help="only jobs finished (or enqueued) at or after: ISO time, epoch, 7d/12h"
    )
    parser.add_argument("--spark-master", default="local[*]", help="Spark master URL (default local[*])")
    parser.add_argument("--window", default="1 minute", help="time bucket of the charts (default '1 minute')")
    parser.add_argument("--html", type=Path, help="also write a self-contained HTML report here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    dsn = args.dsn or (None if args.input else os.environ.get("PQUEUE_DSN"))
    if args.input is None and not dsn:
        raise ConfigError("pqueue report: pass --input DIR (from pqueue export) or --dsn (or set PQUEUE_DSN)")
    try:
        from pqueue.spark.report import collect, report
        from pqueue.spark.session import spark_session
    except ImportError as exc:
        raise ConfigError(f"pqueue report needs PySpark ({exc}): {install_hint('spark')}") from exc
    from pqueue.spark.options import parse_since
    from pqueue.spark.render import html_report, print_tables

    since = None if args.since is None else parse_since(args.since)
    spark = spark_session(args.spark_master, app="pqueue-report")
    if args.input is not None:
        if not args.input.is_dir():
            raise ConfigError(f"pqueue report: {args.input} is not a folder written by pqueue export")
        jobs = spark.read.parquet(str(args.input))
        if since is not None:
            from pyspark.sql import functions as F  # noqa: N812

            moment = F.coalesce("finished_at", "enqueued_at").cast("double")
            jobs = jobs.where(moment >= since)
    else:
        reader = spark.read.format("pqueue").option("dsn", dsn)
        jobs = (reader if since is None else reader.option("since", str(since))).load()
    tables = report(jobs, window=args.window)
    collected = {name: collect(getattr(tables, name)) for name in tables.__dataclass_fields__}
    print_tables(collected)
    if args.html is not None:
        args.html.write_text(html_report(collected), encoding="utf-8")
        print(f"wrote {args.html}")
    return 0
