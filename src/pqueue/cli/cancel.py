"""``pqueue cancel ID...``: cancel jobs that have not finished (waiting or running)."""

from __future__ import annotations

import argparse
from typing import Any

from pqueue.cli._admin import command_parser, emit_json, job_ids, open_client


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "cancel",
        help="cancel waiting or running jobs",
        description="""
            Cancel jobs that have not finished: waiting (pending, scheduled or waiting to
            retry) or running. A running job's worker hears of it within a second or two and
            stops its handler; the job is not retried. Every id is looked up first: if one is
            unknown, nothing is cancelled. Exits 1 when a job could not be cancelled because
            it had finished.
        """,
        examples=[
            "pqueue cancel 0190f6d2-8c3e-7b1a-9f00-3c5d2e1a4b77",
            "pqueue jobs list --status scheduled --type report:build --json | jq -r '.jobs[].id' "
            "| xargs pqueue cancel",
        ],
    )
    parser.add_argument("ids", nargs="+", metavar="ID", help="jobs to cancel")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ids = job_ids(args.ids)
    with open_client(args) as client:
        for job_id in ids:
            client.get_job(job_id)  # JobNotFound before anything is cancelled
        cancelled = [job_id for job_id in ids if client.cancel(job_id)]
        kept = {job_id: client.get_job(job_id).status.value for job_id in ids if job_id not in cancelled}
    if args.json:
        emit_json(
            {"cancelled": cancelled, "not_cancelled": [{"id": i, "status": s} for i, s in kept.items()]}
        )
    else:
        for job_id in cancelled:
            print(f"cancelled {job_id}")
        for job_id, status in kept.items():
            print(f"not cancelled {job_id}: it is {status}")
    return 1 if kept else 0
