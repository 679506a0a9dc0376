"""``pqueue demo``: watch a worker pool run a few thousand jobs of every kind, then check them."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from pqueue.cli._options import add_flag, resolve
from pqueue.cli.worker import log_level, positive_int
from pqueue.logs import configure_logging

DESCRIPTION = """\
Run a pool of workers over a realistic mix of jobs: fast and slow, sync and async,
flaky ones that succeed after retries, poison ones that end in the dead-letter queue,
delayed ones, unique duplicates refused at enqueue, and a charge delivered twice under
one idempotency key. Shows progress on stderr (a live bar on a terminal, a line a second
elsewhere; --no-progress: none), then a table of outcomes and timings, and
exits 0 only if every job ended in its expected state. Runs on memory:// by default;
--dsn points it at Redis or Postgres (it uses its own demo.* queues). Each run's unique
and idempotency keys carry its run id, so runs on the same broker never meet.
"""


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="run a worker pool over a realistic mix of jobs and show the outcome",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dsn", default="memory://demo", help="broker DSN (default: memory://demo)")
    parser.add_argument("--jobs", type=positive_int, default=3000, help="about how many jobs (default: 3000)")
    parser.add_argument("--workers", type=positive_int, default=2, help="workers in the pool (default: 2)")
    parser.add_argument("--concurrency", type=positive_int, default=32, help="slots per worker (default: 32)")
    parser.add_argument("--timeout", type=float, default=120.0, help="give up after this many seconds")
    parser.add_argument("--seed", type=int, default=None, help="make the mix reproducible")
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress on stderr: neither the live bar nor, off a terminal, a line a second",
    )
    add_flag(parser, "--log-level", type=log_level, default="ERROR", help="log level while it runs")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pqueue.brokers import redact
    from pqueue.demo import new_run_id, run_demo
    from pqueue.demo.display import render_table

    resolve(args)
    configure_logging(args.log_level)
    logging.getLogger("pqueue").setLevel(args.log_level)
    run_id = new_run_id()
    print(
        f"pqueue demo run {run_id}: about {args.jobs} jobs on {redact(args.dsn)}, "
        f"{args.workers} workers x {args.concurrency}"
    )
    live = sys.stderr.isatty()
    result = asyncio.run(
        run_demo(
            args.dsn,
            jobs=args.jobs,
            workers=args.workers,
            concurrency=args.concurrency,
            timeout=args.timeout,
            seed=args.seed,
            run_id=run_id,
            out=None if args.no_progress else sys.stderr,
            live=live,
        )
    )
    print(render_table(result))
    return 0 if result.ok else 1
