"""``pqueue export``: copy finished jobs (completed, dead, cancelled) to Parquet, by day.

The broker keeps finished jobs for its retention window only (``?retention=`` seconds,
a day by default); export keeps them for good, in the columns of the Spark reader, under
``OUT/day=YYYY-MM-DD/``. Re-running over an overlapping window adds no duplicate rows.
Needs pyarrow (``pip install "pqueue-jobs[spark]"``); docs/spark.md.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pqueue.errors import ConfigError
from pqueue.extras import install_hint


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write finished jobs to Parquet, partitioned by day",
        description=(
            "Write completed, dead and cancelled jobs with their timings to Parquet files under "
            "OUT/day=YYYY-MM-DD/ (the day each job finished, UTC). Safe to re-run: rows already "
            "exported are not written again."
        ),
    )
    parser.add_argument("--dsn", default=os.environ.get("PQUEUE_DSN"), help="broker DSN (env PQUEUE_DSN)")
    parser.add_argument(
        "--since",
        help="only jobs finished at or after this: ISO time (UTC unless given), epoch seconds, or 7d/12h/30m",
    )
    parser.add_argument("--queue", help="only this queue")
    parser.add_argument("--out", required=True, type=Path, help="folder of the Parquet dataset")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.dsn:
        raise ConfigError("pqueue export: pass --dsn or set PQUEUE_DSN")
    try:
        from pqueue.spark.export import export
    except ImportError as exc:
        raise ConfigError(f"pqueue export needs pyarrow ({exc}): {install_hint('spark')}") from exc
    from pqueue.spark.options import parse_since
    from pqueue.spec import validate_queue_name

    since = None if args.since is None else parse_since(args.since)
    queue = None if args.queue is None else validate_queue_name(args.queue)
    summary = export(args.dsn, args.out, since=since, queue=queue)
    days = ", ".join(summary.days) or "none"
    print(
        f"exported {summary.written} new rows to {args.out} ({summary.already_there} already there); "
        f"days written: {days}"
    )
    return 0
