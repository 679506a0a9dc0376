"""``pqueue schedules``: the periodic schedules workers run, with their next and last run."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pqueue.broker_schedules import ScheduleInfo
from pqueue.cli._admin import command_parser, console, emit_json, open_client, rich_module, when
from pqueue.durations import format_duration


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "schedules",
        help="periodic schedules: name, job type, queue, cron or every, next run, last run",
        description="""
            The schedules of periodic jobs, as running workers publish them (no app code is
            imported): when each runs next, when it last ran, and what happens to ticks
            missed while no worker ran. A schedule removed from the code disappears about a
            minute after the last worker that had it stopped.
        """,
        examples=["pqueue schedules", "pqueue schedules --json | jq '.schedules[].next_run_at'"],
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        schedules = client.schedules()
    if args.json:
        emit_json({"schedules": [s.to_dict() for s in schedules]})
        return 0
    console().print(render(schedules))
    return 0


def timing(schedule: ScheduleInfo) -> str:
    """``*/5 * * * * (Europe/Berlin)`` or ``every 30s``."""
    if schedule.cron is not None:
        return f"{schedule.cron} ({schedule.tz})"
    return f"every {format_duration(schedule.every or 0.0)}"


def missed(schedule: ScheduleInfo) -> str:
    return f"catch up {schedule.catch_up}" if schedule.missed == "catch_up" else "skip"


def render(schedules: Sequence[ScheduleInfo]) -> Any:
    """The schedules as a rich table (also shown by ``pqueue stats``)."""
    table = rich_module("rich.table").Table(title="schedules" if schedules else None)
    for name in ("schedule", "type", "queue", "when", "next run", "last run", "missed"):
        table.add_column(name, no_wrap=name != "when")
    for s in schedules:
        table.add_row(s.name, s.type, s.queue, timing(s), when(s.next_run_at), when(s.last_run_at), missed(s))
    if not schedules:
        table.caption = "no schedules: no live worker runs periodic jobs"
    return table
