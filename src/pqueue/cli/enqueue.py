"""``pqueue enqueue TYPE``: put one job on a queue from the shell and print its id."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from pqueue.cli._admin import command_parser, emit_json, open_client
from pqueue.cli._app import load_router
from pqueue.cli._options import add_flag, resolve
from pqueue.client import routed_spec
from pqueue.durations import parse_duration
from pqueue.errors import ConfigError, InvalidOption, InvalidPayload
from pqueue.job import JSONValue
from pqueue.options import JobOptions, task_of


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "enqueue",
        help="enqueue one job and print its id",
        description="""
            Enqueue one job of TYPE and print its id. The payload is JSON, from --payload or a
            file (--payload-file, '-' for stdin). Durations take 30s, 10m, 2h, 7d or seconds.
            The job is checked exactly as Client.enqueue checks it; a refused job stores nothing.
            With --app MODULE:ROUTER (the router `pqueue worker` runs), the type must be one of
            its tasks, and the options left out take the task's declarations (queue,
            max_retries, timeout, priority, limits), as with Client(dsn, router=...). Without
            it, the worker still applies the task's max_retries and timeout.
        """,
        examples=[
            """pqueue enqueue email:send --payload '{"to": "ada@example.com"}' --queue emails""",
            "pqueue enqueue report:build --payload-file report.json --delay 10m --max-retries 5",
            "pqueue enqueue sync:crm --unique-for 1h --unique-key crm-nightly --run-at 2026-12-01T02:00:00Z",
            "pqueue enqueue report:export --limit-key acme --concurrency 2 --rate 20/s",
            "pqueue enqueue report:mail --depends-on 01a2...",
            "pqueue enqueue email:welcome --app myapp.tasks:router --payload '{\"user_id\": 42}'",
        ],
    )
    add_flag(parser, "--app", metavar="MODULE:ROUTER", help=APP_HELP)
    parser.add_argument("type", help="the job type, e.g. email:send")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--payload", metavar="JSON", help="the payload as JSON text (default: null)")
    source.add_argument("--payload-file", metavar="FILE", help="read the JSON payload from FILE ('-': stdin)")
    groups: dict[str, Any] = {"": parser}
    for name, flag in FLAGS.items():
        if flag.group not in groups:
            groups[flag.group] = parser.add_argument_group(flag.group)
        groups[flag.group].add_argument(
            flag_of(name), metavar=flag.metavar, action="append" if flag.repeat else "store", help=flag.help
        )
    parser.set_defaults(func=run)


APP_HELP = "the app's Router, MODULE:ROUTER: its tasks' declarations apply, unknown types are refused"


def run(args: argparse.Namespace) -> int:
    resolve(args)
    payload = read_payload(args.payload, args.payload_file)
    task = task_of(args.type, payload, options_of(args))
    router = load_router(args.app) if args.app else None
    routed_spec(task, router)  # every check enqueue makes, before connecting
    with open_client(args, router=router) as client:
        result = client.enqueue_task(task)
    if args.json:
        emit_json({"id": result.id, "created": result.created})
    else:
        print(result.id)
        if not result.created:
            print(f"pqueue: not enqueued: job {result.id} holds its unique key or id", file=sys.stderr)
    return 0


def options_of(args: argparse.Namespace) -> JobOptions:
    """The job options the command line gives, read by their :data:`FLAGS` (unchecked)."""
    options = {
        name: flag.parse(value, flag_of(name))
        for name, flag in FLAGS.items()
        if (value := getattr(args, name)) is not None
    }
    return cast("JobOptions", options)


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


def _priority(text: str, flag: str) -> int:
    """A whole number, maybe negative (its range is checked by the enqueue)."""
    if not text.lstrip("-").isdigit():
        raise InvalidOption(f"{flag} must be a whole number from -100 to 100, got {text!r}")
    return int(text)


def _text(text: str, flag: str) -> str:
    return text


def _duration(text: str, flag: str) -> float:
    return parse_duration(text)


def _time(text: str, flag: str) -> datetime:
    return parse_time(text)


def _ids(items: list[str], flag: str) -> tuple[str, ...]:
    return tuple(items)


def _meta(items: list[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` tags, each key once (their rules are :func:`pqueue.spec.build_spec`'s)."""
    meta: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise InvalidOption(f"{flag} takes KEY=VALUE, got {item!r}")
        if key in meta:
            raise InvalidOption(f"{flag} names {key!r} twice")
        meta[key] = value
    return meta


@dataclass(frozen=True, slots=True)
class Flag:
    """How ``pqueue enqueue`` takes one job option: as ``--its-name`` (see :func:`flag_of`)."""

    help: str
    metavar: str | None = None
    parse: Callable[[Any, str], Any] = _text
    """The option's value from the flag's text (a list of texts when ``repeat``) and the flag."""
    group: str = ""
    """The help section it is listed under; "" for the command's own."""
    repeat: bool = False


_LIMITS = "limits (docs/limits.md)"
_PARENTS = "parents (docs/workflows.md)"
FLAGS: dict[str, Flag] = {
    "queue": Flag("the queue (default: the task's with --app, else default)"),
    "delay": Flag("run no sooner than this from now", "DURATION", _duration),
    "run_at": Flag("run no sooner than this time (with a zone: Z, +02:00)", "ISO8601", _time),
    "unique_for": Flag("refuse equal jobs for this long", "DURATION", _duration),
    "unique_key": Flag("the key equal jobs share (default: derived from type+payload)"),
    "unique_until": Flag(
        "hold the unique key for all of --unique-for (ttl), or until the job completes (done)", "ttl|done"
    ),
    "max_retries": Flag("retries after the first run fails (default: the task's, else 3)", "N", whole),
    "idempotency_key": Flag("run at most once per key while it is held"),
    "timeout": Flag(
        "how long the handler may run (default: the task's, else no limit)", "DURATION", _duration
    ),
    "max_recoveries": Flag("times the job is taken back from a worker that died (default: 5)", "N", whole),
    "priority": Flag(
        "-100..100: higher runs sooner within the queue (default: the task's with --app, else 0)",
        "N",
        _priority,
    ),
    "job_id": Flag("the job's id, a UUID: enqueueing it again stores nothing", "ID"),
    "meta": Flag("a string tag carried with the job (repeat for more)", "KEY=VALUE", _meta, repeat=True),
    "limit_key": Flag("the job's limit group in its queue", "KEY", group=_LIMITS),
    "rate": Flag("the group's rate limit: 100/s, 30/m, 500/h", group=_LIMITS),
    "concurrency": Flag("the most jobs of the group running at once", "N", whole, group=_LIMITS),
    "depends_on": Flag(
        "a job that must complete first (repeat for more); the job waits until then",
        "ID",
        _ids,
        group=_PARENTS,
        repeat=True,
    ),
    "on_parent_failure": Flag(
        "when a parent dies or is cancelled: cancel (default) or run this job", group=_PARENTS
    ),
}
"""One flag per job option (:data:`pqueue.options.OPTION_NAMES`), in ``--help`` order;
tests/unit/test_option_parity.py fails when an option has none."""


def flag_of(option: str) -> str:
    """The flag of a job option: ``run_at`` is ``--run-at``."""
    return "--" + option.replace("_", "-")
