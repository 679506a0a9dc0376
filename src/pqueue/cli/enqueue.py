"""``pqueue enqueue TYPE``: put one job on a queue from the shell and print its id."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pqueue.cli._admin import command_parser, emit_json, open_client
from pqueue.durations import parse_duration
from pqueue.errors import ConfigError, InvalidOption, InvalidPayload
from pqueue.job import JSONValue
from pqueue.task import Task


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "enqueue",
        help="enqueue one job and print its id",
        description="""
            Enqueue one job of TYPE and print its id. The payload is JSON, from --payload or a
            file (--payload-file, '-' for stdin). Durations take 30s, 10m, 2h, 7d or seconds.
            The job is checked exactly as Client.enqueue checks it; a refused job stores nothing.
        """,
        examples=[
            """pqueue enqueue email:send --payload '{"to": "ada@example.com"}' --queue emails""",
            "pqueue enqueue report:build --payload-file report.json --delay 10m --max-retries 5",
            "pqueue enqueue sync:crm --unique-for 1h --unique-key crm-nightly --run-at 2026-12-01T02:00:00Z",
            "pqueue enqueue report:export --limit-key acme --concurrency 2 --rate 20/s",
            "pqueue enqueue report:mail --depends-on 01a2...",
        ],
    )
    parser.add_argument("type", help="the job type, e.g. email:send")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--payload", metavar="JSON", help="the payload as JSON text (default: null)")
    source.add_argument("--payload-file", metavar="FILE", help="read the JSON payload from FILE ('-': stdin)")
    parser.add_argument("--queue", help="the queue (default: default)")
    parser.add_argument("--delay", metavar="DURATION", help="run no sooner than this from now")
    parser.add_argument(
        "--run-at", metavar="ISO8601", help="run no sooner than this time (with a zone: Z, +02:00)"
    )
    parser.add_argument("--unique-for", metavar="DURATION", help="refuse equal jobs for this long")
    parser.add_argument("--unique-key", help="the key equal jobs share (default: derived from type+payload)")
    parser.add_argument("--max-retries", metavar="N", help="retries after the first run fails (default: 3)")
    parser.add_argument("--idempotency-key", help="run at most once per key while it is held")
    parser.add_argument("--timeout", metavar="DURATION", help="how long the handler may run")
    limits = parser.add_argument_group("limits (docs/limits.md)")
    limits.add_argument("--limit-key", metavar="KEY", help="the job's limit group in its queue")
    limits.add_argument("--rate", help="the group's rate limit: 100/s, 30/m, 500/h")
    limits.add_argument("--concurrency", metavar="N", help="the most jobs of the group running at once")
    parents = parser.add_argument_group("parents (docs/workflows.md)")
    parents.add_argument(
        "--depends-on",
        metavar="ID",
        action="append",
        help="a job that must complete first (repeat for more); the job waits until then",
    )
    parents.add_argument(
        "--on-parent-failure",
        default="cancel",
        help="when a parent dies or is cancelled: cancel (default) or run this job",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    task = Task(
        args.type,
        read_payload(args.payload, args.payload_file),
        queue=args.queue,
        delay=None if args.delay is None else parse_duration(args.delay),
        run_at=None if args.run_at is None else parse_time(args.run_at),
        max_retries=None if args.max_retries is None else whole(args.max_retries, "--max-retries"),
        unique_for=None if args.unique_for is None else parse_duration(args.unique_for),
        unique_key=args.unique_key,
        idempotency_key=args.idempotency_key,
        timeout=None if args.timeout is None else parse_duration(args.timeout),
        limit_key=args.limit_key,
        rate=args.rate,
        concurrency=None if args.concurrency is None else whole(args.concurrency, "--concurrency"),
        depends_on=tuple(args.depends_on or ()),
        on_parent_failure=args.on_parent_failure,
    )
    task.to_spec()  # every check enqueue makes, before connecting
    with open_client(args) as client:
        result = client.enqueue_task(task)
    if args.json:
        emit_json({"id": result.id, "created": result.created})
    else:
        print(result.id)
        if not result.created:
            print(f"pqueue: not enqueued: job {result.id} holds its unique key or id", file=sys.stderr)
    return 0


def read_payload(text: str | None, path: str | None) -> JSONValue:
    """The payload from ``--payload`` or ``--payload-file``; malformed JSON is refused."""
    if path is not None:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--payload-file {path!r}: {exc}") from None
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        flag = "--payload" if path is None else f"--payload-file {path!r}"
        raise InvalidPayload(f"{flag} is not valid JSON: {exc}") from None


def parse_time(text: str) -> datetime:
    """An ISO-8601 time with its zone (``2026-12-01T02:00:00Z``)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidOption(f"--run-at {text!r} is not an ISO-8601 time, e.g. 2026-12-01T02:00:00Z") from None
    if moment.tzinfo is None:
        raise InvalidOption(f"--run-at {text!r} has no time zone: add Z (UTC) or an offset such as +02:00")
    return moment


def whole(text: str, flag: str) -> int:
    """A whole number >= 0."""
    if not text.isdigit():
        raise InvalidOption(f"{flag} must be a whole number >= 0, got {text!r}")
    return int(text)
