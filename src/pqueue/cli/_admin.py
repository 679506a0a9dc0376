"""What every admin command shares: ``--dsn``/``--json``, the client, and the two outputs.

An admin command only translates: argv -> one :class:`~pqueue.Client` call -> a rich table
(people) or one JSON document (``--json``, scripts). Bad input raises a
:class:`~pqueue.errors.PQueueError` before anything is written, and the dispatcher prints
it as one line. rich is imported only when a table is drawn, so ``pqueue worker`` and
``--json`` never need it (it is the ``pqueue-jobs[cli]`` extra; ADR 0081).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

# Re-exported: every command draws its tables on this one console (issue 30).
from pqueue.cli._console import console as console  # noqa: PLC0414
from pqueue.cli._console import rich_module as rich_module  # noqa: PLC0414
from pqueue.cli._options import add_flag, resolve
from pqueue.durations import format_duration
from pqueue.errors import ConfigError, InvalidRequest
from pqueue.ids import is_job_id
from pqueue.spec import validate_queue_name

if TYPE_CHECKING:
    from pqueue.router import Router
    from pqueue.sync import Client


def command_parser(
    subparsers: Any, name: str, *, help: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A command's parser in the house style: description, ``--dsn``, ``--json`` and an
    epilog of examples (``pqueue <command> --help`` shows them)."""
    lines = "\n".join(f"  {example}" for example in examples)
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=textwrap.dedent(description).strip(),
        epilog=f"examples:\n{lines}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flag(parser, "--dsn", help="broker DSN: memory://, redis://..., postgresql://...")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    return parser


@contextlib.contextmanager
def open_client(args: argparse.Namespace, *, router: Router | None = None) -> Iterator[Client]:
    """The connected client of ``--dsn``/``PQUEUE_DSN`` (given ``router``, when the command
    loaded one); a bad or unreachable DSN raises here."""
    resolve(args)
    if not args.dsn:
        raise ConfigError("no broker DSN: pass --dsn or set PQUEUE_DSN")
    from pqueue.sync import Client

    one_shot_logging()
    with Client(args.dsn, router=router) as client:
        yield client


def one_shot_logging() -> None:
    """A one-shot command prints its answer or one error line: log records (psycopg_pool's
    reconnect attempts, an outage's "lost ... retrying") would otherwise reach stderr
    through logging's last resort."""
    root = logging.getLogger()
    if not any(isinstance(handler, logging.NullHandler) for handler in root.handlers):
        root.addHandler(logging.NullHandler())  # once, however many commands one process runs


def emit_json(data: Any) -> None:
    """Write ``data`` as the command's one JSON document."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def queue_filter(name: str | None) -> str | None:
    """``--queue`` checked as enqueue checks queue names (an impossible name is an error)."""
    return None if name is None else validate_queue_name(name)


def job_ids(values: Sequence[str]) -> list[str]:
    """Job ids from the command line, each checked for form (a malformed id is bad input)."""
    for value in values:
        if not is_job_id(value):
            raise InvalidRequest(f"{value!r} is not a job id (a UUID such as 0190f6d2-...)")
    return list(values)


DEFAULT_LIMIT = 20
"""Jobs a listing shows unless ``--limit`` says otherwise."""


def add_limit(parser: argparse.ArgumentParser) -> None:
    """``--limit N`` of the listings (checked by :func:`count` when the command runs)."""
    parser.add_argument(
        "--limit", default=str(DEFAULT_LIMIT), help=f"at most this many (default: {DEFAULT_LIMIT})"
    )


def count(text: str, flag: str) -> int:
    """A whole number >= 1 from ``flag``."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidRequest(f"{flag} must be a whole number >= 1, got {text!r}")
    return value


@contextlib.contextmanager
def progress(description: str, total: int, *, show: bool) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr for an operation done in steps, drawn only when a person
    watches (``show`` and stderr is a terminal); yields ``advance(steps_done)``."""
    if not show or not sys.stderr.isatty():
        yield lambda done: None
        return
    rich_progress = rich_module("rich.progress")
    with rich_progress.Progress(console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.advance(task, done)


def when(moment: datetime | float | None) -> str:
    """A time for a table: ``2026-11-23 15:04:05Z`` (UTC, to the second), or ``-``."""
    if moment is None:
        return "-"
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def ago(moment: float) -> str:
    """How long before now ``moment`` (epoch seconds) was: ``4.2s ago``."""
    return f"{format_duration(max(0.0, time.time() - moment))} ago"
