"""``pqueue stats``: jobs per queue and status, throughput, the oldest waiting job, live workers
and the periodic schedules with their next run."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from pqueue.broker_schedules import ScheduleInfo
from pqueue.cli._admin import command_parser, console, emit_json, open_client, queue_filter, rich_module
from pqueue.cli._stats_text import limit_lines, table
from pqueue.cli.schedules import render as render_schedules
from pqueue.client import Stats
from pqueue.durations import parse_duration
from pqueue.errors import ConfigError, InvalidRequest


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "stats",
        help="jobs per queue and status, jobs/s, oldest pending job, live workers, schedules",
        description="""
            Per queue: waiting, pending, scheduled, active, retry, completed, dead and
            cancelled jobs (completed and cancelled within retention), jobs done per second
            over the last minute, and how long the oldest due job has waited; then the live
            workers and the periodic schedules with their next run. --watch redraws it in
            place until Ctrl-C.
        """,
        examples=[
            "pqueue stats --dsn redis://127.0.0.1:6379/0",
            "pqueue stats --queue emails --watch 2",
            "PQUEUE_DSN=postgresql://app@db/app pqueue stats --json | jq .totals",
        ],
    )
    parser.add_argument("--queue", help="only this queue (and the workers serving it)")
    parser.add_argument(
        "--watch", metavar="SECONDS", help="refresh every SECONDS (30s, 2m, ...) until Ctrl-C"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    queue = queue_filter(args.queue)
    interval = None if args.watch is None else parse_duration(args.watch)
    if interval is not None and interval <= 0:
        raise InvalidRequest(f"--watch must be more than 0 seconds, got {args.watch!r}")
    if interval is not None and args.json:
        raise ConfigError("--watch redraws a table; --json prints one document: choose one")
    with open_client(args) as client:

        def snapshot() -> tuple[Stats, list[ScheduleInfo]]:
            stats, schedules = client.stats(), client.schedules()
            if queue is None:
                return stats, schedules
            return stats.only(queue), [s for s in schedules if s.queue == queue]

        if args.json:
            stats, schedules = snapshot()
            emit_json({**stats.to_dict(), "schedules": [s.to_dict() for s in schedules]})
        elif interval is None:
            console().print(render(*snapshot()))
        else:
            watch(snapshot, interval)
    return 0


def watch(snapshot: Any, interval: float) -> None:
    """Redraw the stats every ``interval`` seconds in place (rich Live) until Ctrl-C."""
    live = rich_module("rich.live").Live(render(*snapshot()), console=console(), auto_refresh=False)
    try:
        with live:
            while True:
                time.sleep(interval)
                live.update(render(*snapshot()), refresh=True)
    except KeyboardInterrupt:
        return


def render(stats: Stats, schedules: Sequence[ScheduleInfo] = ()) -> Any:
    """The queue table, the limit groups, the worker line and the schedules (if any), as one
    rich renderable: the cells of :mod:`pqueue.cli._stats_text`, drawn by rich."""
    table_cls = rich_module("rich.table").Table
    header, rows = table(stats)
    grid = table_cls()
    grid.add_column(header[0], no_wrap=True)
    for name in header[1:]:
        grid.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        grid.add_row(*row)
    if not rows:
        grid.caption = "no queue has held a job yet"
    workers = ", ".join(f"{w.id} ({w.host} pid {w.pid})" for w in stats.workers)
    line = f"live workers: {len(stats.workers)}" + (f" - {workers}" if workers else "")
    parts = [grid, *limit_lines(stats), line, *([render_schedules(schedules)] if schedules else [])]
    return rich_module("rich.console").Group(*parts)
