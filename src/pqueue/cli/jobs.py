"""``pqueue jobs list`` and ``pqueue jobs show ID``: find jobs and look at one closely."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pqueue.cli._admin import (
    add_limit,
    command_parser,
    console,
    count,
    emit_json,
    job_ids,
    open_client,
    queue_filter,
    rich_module,
    when,
)
from pqueue.job import Job, JobStatus
from pqueue.spec import validate_job_type


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "jobs", help="list jobs, or show one job in full", description="List jobs, or show one job in full."
    )
    commands = parser.add_subparsers(dest="jobs_command", metavar="COMMAND", required=True)
    listing = command_parser(
        commands,
        "list",
        help="jobs by status, queue and type",
        description="""
            Jobs in one status (or in every status, in the order pending, scheduled, active,
            retry, completed, dead, cancelled), oldest first, optionally of one queue and one type.
        """,
        examples=[
            "pqueue jobs list --status dead --queue emails",
            "pqueue jobs list --type email:send --limit 100 --json",
        ],
    )
    listing.add_argument("--status", choices=[s.value for s in JobStatus], help="only jobs in this status")
    listing.add_argument("--queue", help="only jobs of this queue")
    listing.add_argument("--type", help="only jobs of this type")
    add_limit(listing)
    listing.set_defaults(func=run_list)
    show = command_parser(
        commands,
        "show",
        help="one job: payload, attempts, errors with traceback, timings, result",
        description="Everything stored about one job: payload, attempts and recoveries, every "
        "error (the last with its traceback), timings and result.",
        examples=[
            "pqueue jobs show 0190f6d2-8c3e-7b1a-9f00-3c5d2e1a4b77",
            "pqueue jobs show ID --json | jq .result",
        ],
    )
    show.add_argument("id", help="the job id")
    show.set_defaults(func=run_show)


def run_list(args: argparse.Namespace) -> int:
    queue = queue_filter(args.queue)
    job_type = None if args.type is None else validate_job_type(args.type)
    limit = count(args.limit, "--limit")
    statuses = list(JobStatus) if args.status is None else [JobStatus(args.status)]
    jobs: list[Job] = []
    more = False
    with open_client(args) as client:
        for status in statuses:
            page = client.list_jobs(status, queue=queue, type=job_type, limit=max(limit - len(jobs), 1))
            if len(jobs) == limit:  # full: this page only tells whether more jobs match
                more = bool(page.jobs)
            else:
                jobs.extend(page.jobs)
                more = page.next_offset is not None
            if more:
                break
    show_jobs(jobs, more, as_json=args.json)
    return 0


def show_jobs(jobs: list[Job], more: bool, *, as_json: bool, dead: bool = False) -> None:
    """A listing's answer: ``{"jobs": [...], "more": bool}``, or the table and a note when
    more jobs match than were shown."""
    if as_json:
        emit_json({"jobs": [job.to_dict() for job in jobs], "more": more})
        return
    out = console()
    out.print(job_table(jobs, dead=dead))
    if more:
        out.print(f"showing the first {len(jobs)}; more match (raise --limit or narrow the filters)")


def job_table(jobs: list[Job], *, dead: bool = False) -> Any:
    """Jobs as a rich table, one row each; ``dead`` for the dead-letter listing (when they died)."""
    table = rich_module("rich.table").Table()
    names = ["id", "type", "queue", "priority", "attempt", "died" if dead else "created", "last error"]
    if not dead:
        names.insert(3, "status")
    for name in names:
        table.add_column(name, no_wrap=name != "last error", min_width=20 if name == "last error" else None)
    for job in jobs:
        error = job.last_error
        cells = [
            job.id,
            job.type,
            job.queue,
            str(job.priority),
            f"{job.attempt}/{job.max_retries + 1}",
            when(job.finished_at if dead else job.created_at),
            "-" if error is None else str(error)[:120],
        ]
        if not dead:
            cells.insert(3, job.status.value)
        table.add_row(*cells)
    if not jobs:
        table.caption = "no jobs match"
    return table


def run_show(args: argparse.Namespace) -> int:
    [job_id] = job_ids([args.id])
    with open_client(args) as client:
        job = client.get_job(job_id)
    if args.json:
        emit_json(job.to_dict())
        return 0
    out = console()
    out.print(detail_table(job))
    for error in job.errors[:-1]:
        out.print(f"earlier error (attempt {error.attempt}, {when(error.at)}): {error}")
    last = job.last_error
    if last is not None:
        out.print(f"last error (attempt {last.attempt}, {when(last.at)}): {last}")
        if last.traceback:
            out.print(last.traceback.rstrip(), markup=False, highlight=False)
    return 0


def detail_table(job: Job) -> Any:
    """One job's fields, a row each."""
    table = rich_module("rich.table").Table(show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    rows = [
        ("id", job.id),
        ("type", job.type),
        ("queue", job.queue),
        ("status", job.status.value),
        ("priority", str(job.priority)),
        ("attempts", f"{job.attempt} of {job.max_retries + 1}"),
        ("recoveries", f"{job.recoveries} of {job.max_recoveries}"),
        ("created", when(job.created_at)),
        ("run at", when(job.run_at)),
        ("started", when(job.started_at)),
        ("finished", when(job.finished_at)),
        ("timeout", "-" if job.timeout is None else f"{job.timeout:g}s"),
        ("unique key", job.unique_key or "-"),
        ("idempotency key", job.idempotency_key or "-"),
        ("meta", json.dumps(dict(job.meta)) if job.meta else "-"),
        ("payload", json.dumps(job.payload, indent=2)),
        ("result", "-" if job.result is None else json.dumps(job.result, indent=2)),
    ]
    for name, value in rows:
        table.add_row(name, rich_module("rich.text").Text(value))
    return table
