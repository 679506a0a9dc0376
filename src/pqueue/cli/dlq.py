"""``pqueue dlq list|requeue|purge``: look at the dead-letter queue, give jobs another
chance, or delete them (asking first on a terminal)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pqueue.cli._admin import (
    add_limit,
    command_parser,
    count,
    emit_json,
    job_ids,
    open_client,
    progress,
    queue_filter,
    rich_module,
)
from pqueue.cli.jobs import show_jobs
from pqueue.durations import format_duration, parse_duration
from pqueue.errors import ConfigError, InvalidRequest
from pqueue.job import JobStatus
from pqueue.sync import Client

ID_BATCH = 500
"""Job ids requeued per client call (the progress bar moves once per batch)."""


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dlq",
        help="dead-letter queue: list, requeue, purge",
        description="The dead-letter queue: jobs that failed for good.",
    )
    commands = parser.add_subparsers(dest="dlq_command", metavar="COMMAND", required=True)
    listing = command_parser(
        commands,
        "list",
        help="dead jobs with their last error",
        description="Dead jobs, oldest first, with their last error.",
        examples=["pqueue dlq list", "pqueue dlq list --queue emails --limit 100 --json"],
    )
    listing.add_argument("--queue", help="only this queue")
    add_limit(listing)
    listing.set_defaults(func=run_list)

    requeue = command_parser(
        commands,
        "requeue",
        help="move dead jobs back to pending with a fresh retry budget",
        description="""
            Move dead jobs back to pending with a fresh retry budget: the jobs named, or --all
            (of --queue, or of every queue). Named jobs are checked first: if one is unknown or
            not dead, nothing is requeued.
        """,
        examples=[
            "pqueue dlq requeue 0190f6d2-8c3e-7b1a-9f00-3c5d2e1a4b77",
            "pqueue dlq requeue --all --queue emails",
        ],
    )
    requeue.add_argument("ids", nargs="*", metavar="ID", help="dead jobs to requeue")
    requeue.add_argument("--all", action="store_true", help="every dead job (of --queue, if given)")
    requeue.add_argument("--queue", help="with --all: only this queue")
    requeue.set_defaults(func=run_requeue)

    purge = command_parser(
        commands,
        "purge",
        help="delete dead jobs (asks first)",
        description="""
            Delete dead jobs for good: all of them, of --queue, or those dead for longer than
            --older-than (30s, 10m, 2h, 7d or seconds). Asks before deleting on a terminal;
            elsewhere (scripts, cron) it refuses unless --yes is given.
        """,
        examples=[
            "pqueue dlq purge --queue emails --older-than 7d",
            "pqueue dlq purge --older-than 30d --yes   # from cron",
        ],
    )
    purge.add_argument("--queue", help="only this queue")
    purge.add_argument("--older-than", metavar="DURATION", help="only jobs dead for at least this long")
    purge.add_argument("--yes", action="store_true", help="do not ask; needed when stdin is not a terminal")
    purge.set_defaults(func=run_purge)


def run_list(args: argparse.Namespace) -> int:
    queue = queue_filter(args.queue)
    limit = count(args.limit, "--limit")
    with open_client(args) as client:
        page = client.dead_jobs(queue=queue, limit=limit)
    show_jobs(list(page.jobs), page.next_offset is not None, as_json=args.json, dead=True)
    return 0


def run_requeue(args: argparse.Namespace) -> int:
    queue = queue_filter(args.queue)
    ids = job_ids(args.ids)
    if bool(ids) == bool(args.all):
        raise ConfigError("name the dead jobs to requeue, or pass --all (not both)")
    if ids and queue is not None:
        raise ConfigError("--queue goes with --all; named jobs are requeued wherever they are")
    with open_client(args) as client:
        if ids:
            _check_dead(client, ids)
            moved = _in_steps(ids, lambda batch: client.requeue_dead(job_ids=batch), "requeueing", args.json)
        else:
            moved = _per_queue(client, queue, lambda q: client.requeue_dead(queue=q), "requeueing", args.json)
    if args.json:
        emit_json({"requeued": moved})
    else:
        print(f"requeued {moved} job{'s' if moved != 1 else ''}")
    return 0


def run_purge(args: argparse.Namespace) -> int:
    queue = queue_filter(args.queue)
    older_than = None if args.older_than is None else parse_duration(args.older_than)
    if not args.yes and not sys.stdin.isatty():
        raise ConfigError("refusing to purge without --yes: stdin is not a terminal to ask on")
    with open_client(args) as client:
        dead = client.stats().total(JobStatus.DEAD, queue)
        if not args.yes and not _confirm(dead, queue, older_than):
            print("nothing purged", file=sys.stderr)
            return 1
        purged = _per_queue(
            client, queue, lambda q: client.purge_dead(queue=q, older_than=older_than), "purging", args.json
        )
    if args.json:
        emit_json({"purged": purged})
    else:
        print(f"purged {purged} job{'s' if purged != 1 else ''}")
    return 0


def _confirm(dead: int, queue: str | None, older_than: float | None) -> bool:
    where = "every queue" if queue is None else f"queue {queue!r}"
    age = "" if older_than is None else f" dead for at least {format_duration(older_than)}"
    which = f"the {dead} dead job(s)" if older_than is None else f"the dead jobs (of {dead})"
    question = f"Delete {which} of {where}{age}? This cannot be undone"
    return bool(rich_module("rich.prompt").Confirm.ask(question, default=False))


def _check_dead(client: Client, ids: Sequence[str]) -> None:
    """Every named job exists and is dead, or nothing is done (JobNotFound names the unknown one)."""
    for job_id in ids:
        job = client.get_job(job_id)
        if job.status is not JobStatus.DEAD:
            raise InvalidRequest(f"job {job_id} is {job.status.value}, not dead: nothing requeued")


def _in_steps(ids: list[str], act: Callable[[list[str]], int], what: str, quiet: bool) -> int:
    done = 0
    with progress(what, len(ids), show=not quiet) as advance:
        for start in range(0, len(ids), ID_BATCH):
            batch = ids[start : start + ID_BATCH]
            done += act(batch)
            advance(len(batch))
    return done


def _per_queue(client: Client, queue: str | None, act: Callable[[str], int], what: str, quiet: bool) -> int:
    """Run ``act`` on each queue holding dead jobs (or on ``queue``), a progress step per dead job."""
    stats = client.stats()
    queues = [queue] if queue is not None else [q for q in stats.queues if stats.total(JobStatus.DEAD, q)]
    done = 0
    with progress(what, stats.total(JobStatus.DEAD, queue), show=not quiet) as advance:
        for name in queues:
            n = act(name)
            done += n
            advance(stats.total(JobStatus.DEAD, name))
    return done
