"""``pqueue rsmq queues|create|attrs|set|send|receive|delete|dead|worker``: RSMQ queues
from a shell, on any RSMQ client's layout (docs/rsmq.md).

Each admin command is one :class:`pqueue.rsmq.Rsmq` call: a table (people) or one JSON
document (``--json``). ``--ns`` is the RSMQ namespace (``rsmq``, the reference client's
default). Bad input raises a :class:`~pqueue.errors.PQueueError` before anything is written.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pqueue.cli import _rsmq_worker
from pqueue.cli._admin import command_parser, count, emit_json, one_shot_logging, rich_module, when
from pqueue.cli._admin import console as make_console
from pqueue.cli._options import resolve
from pqueue.errors import ConfigError, InvalidRequest

if TYPE_CHECKING:  # not at run time: `pqueue --help` needs no redis-py
    from pqueue.rsmq import Rsmq


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rsmq",
        help="RSMQ queues: list, create, send, receive, consume (pqueue rsmq worker)",
        description="RSMQ (Redis Simple Message Queue) queues, shared with RSMQ clients in any language.",
    )
    commands = parser.add_subparsers(dest="rsmq_command", metavar="COMMAND", required=True)

    def sub(name: str, help: str, description: str, examples: Sequence[str]) -> argparse.ArgumentParser:
        made = command_parser(commands, name, help=help, description=description, examples=examples)
        made.add_argument(
            "--ns", default=None, help="RSMQ namespace (default: the DSN's ?prefix=, else rsmq)"
        )
        return made

    sub("queues", "queues with their counts", "Every queue of the namespace.", ["pqueue rsmq queues --json"])
    create = sub("create", "make a queue", "Make a queue.", ["pqueue rsmq create jobs --vt 60"])
    create.add_argument("qname")
    _settings(create, vt=30, delay=0, maxsize=65536)
    attrs = sub(
        "attrs", "a queue's attributes", "A queue's settings, totals and counts.", ["pqueue rsmq attrs jobs"]
    )
    attrs.add_argument("qname")
    change = sub(
        "set", "change vt, delay or maxsize", "Change a queue's attributes.", ["pqueue rsmq set jobs --vt 90"]
    )
    change.add_argument("qname")
    _settings(change, vt=None, delay=None, maxsize=None)
    send = sub(
        "send", "send a message", "Send a message ('-': read it from stdin).", ["pqueue rsmq send jobs hi"]
    )
    send.add_argument("qname")
    send.add_argument("message")
    send.add_argument(
        "--delay", type=int, default=None, help="seconds before it is visible (default: the queue's)"
    )
    receive = sub(
        "receive", "receive (or --pop) one message",
        "Receive the next visible message: it stays hidden for vt seconds; --pop deletes it too.",
        ["pqueue rsmq receive jobs --vt 60", "pqueue rsmq receive jobs --pop --json"],
    )  # fmt: skip
    receive.add_argument("qname")
    receive.add_argument(
        "--vt", type=int, default=None, help="seconds it stays hidden (default: the queue's)"
    )
    receive.add_argument("--pop", action="store_true", help="delete it as it is received")
    delete = sub(
        "delete", "delete messages, or a whole queue",
        "Delete messages by id, or with --queue the queue itself and all its messages (asks first).",
        ["pqueue rsmq delete jobs hojfyo6ojsGk3e7fnNoUQPZXsWNh1joN", "pqueue rsmq delete jobs --queue --yes"],
    )  # fmt: skip
    delete.add_argument("qname")
    delete.add_argument("ids", nargs="*", metavar="ID")
    delete.add_argument("--queue", action="store_true", help="delete the queue itself")
    delete.add_argument("--yes", action="store_true", help="do not ask")
    dead = sub(
        "dead", "messages in a queue's dead queue; --requeue moves them back",
        "The dead queue QNAME-dead that `pqueue rsmq worker` fills (read-only), or --requeue.",
        ["pqueue rsmq dead jobs", "pqueue rsmq dead jobs --requeue --limit 100"],
    )  # fmt: skip
    dead.add_argument("qname")
    dead.add_argument("--limit", default="20", help="at most this many (default: 20)")
    dead.add_argument("--requeue", action="store_true", help="move them back to QNAME, visible now")
    for name, made in commands.choices.items():
        made.set_defaults(func=globals()[f"run_{name}"])
    _rsmq_worker.add_parser(commands)


def _settings(parser: argparse.ArgumentParser, **defaults: int | None) -> None:
    helps = {"vt": "visibility timeout, s", "delay": "delay of new messages, s", "maxsize": "longest message"}
    for name, default in defaults.items():
        shown = "unchanged" if default is None else default
        parser.add_argument(f"--{name}", type=int, default=default, help=f"{helps[name]} (default: {shown})")


@contextlib.contextmanager
def _rsmq(args: argparse.Namespace) -> Iterator[Rsmq]:
    resolve(args)
    if not args.dsn:
        raise ConfigError("no Redis URL: pass --dsn or set PQUEUE_DSN")
    from pqueue.rsmq import Rsmq

    one_shot_logging()
    with Rsmq(args.dsn, ns=args.ns) as rsmq:
        yield rsmq


def _fields(rows: Sequence[Any]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(row) for row in rows]


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]], *, empty: str) -> None:
    if not rows:
        print(empty)
        return
    table = rich_module("rich.table").Table(*columns)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    make_console().print(table)


def _attributes(args: argparse.Namespace, attrs: Any) -> int:
    if args.json:
        emit_json({"queue": args.qname, **dataclasses.asdict(attrs)})
        return 0
    values = dataclasses.asdict(attrs)
    for stamp in ("created", "modified"):
        values[stamp] = f"{values[stamp]} ({when(values[stamp])})"
    _table(["attribute", "value"], list(values.items()), empty="")
    return 0


def run_queues(args: argparse.Namespace) -> int:
    with _rsmq(args) as rsmq:
        rows = [(name, rsmq.get_queue_attributes(name)) for name in rsmq.list_queues()]
        namespace = rsmq.keys.ns
    if args.json:
        emit_json([{"queue": name, **dataclasses.asdict(attrs)} for name, attrs in rows])
        return 0
    _table(
        ["queue", "msgs", "hidden", "vt", "delay", "maxsize", "sent", "received"],
        [(n, a.msgs, a.hiddenmsgs, a.vt, a.delay, a.maxsize, a.totalsent, a.totalrecv) for n, a in rows],
        empty=f"no RSMQ queues in namespace {namespace!r}",
    )
    return 0


def run_create(args: argparse.Namespace) -> int:
    with _rsmq(args) as rsmq:
        rsmq.create_queue(args.qname, vt=args.vt, delay=args.delay, maxsize=args.maxsize)
        return _attributes(args, rsmq.get_queue_attributes(args.qname))


def run_attrs(args: argparse.Namespace) -> int:
    with _rsmq(args) as rsmq:
        return _attributes(args, rsmq.get_queue_attributes(args.qname))


def run_set(args: argparse.Namespace) -> int:
    with _rsmq(args) as rsmq:
        return _attributes(
            args, rsmq.set_queue_attributes(args.qname, vt=args.vt, delay=args.delay, maxsize=args.maxsize)
        )


def run_send(args: argparse.Namespace) -> int:
    body = sys.stdin.read() if args.message == "-" else args.message
    with _rsmq(args) as rsmq:
        message_id = rsmq.send_message(args.qname, body, delay=args.delay)
    if args.json:
        emit_json({"queue": args.qname, "id": message_id})
    else:
        print(message_id)
    return 0


def run_receive(args: argparse.Namespace) -> int:
    if args.pop and args.vt is not None:
        raise InvalidRequest("--pop deletes the message: --vt has no meaning with it")
    with _rsmq(args) as rsmq:
        got = rsmq.pop_message(args.qname) if args.pop else rsmq.receive_message(args.qname, vt=args.vt)
    if args.json:
        emit_json(None if got is None else dataclasses.asdict(got))
    elif got is None:
        print(f"no visible message in {args.qname}")
    else:
        row = (got.id, got.rc, when(got.sent / 1000), when(got.fr / 1000), got.message)
        _table(["id", "rc", "sent", "first received", "message"], [row], empty="")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    if args.queue == bool(args.ids):
        raise InvalidRequest("give message ids, or --queue to delete the queue itself (not both)")
    with _rsmq(args) as rsmq:
        if args.queue:
            _confirm(args, f"delete queue {args.qname!r} and all its messages?")
            rsmq.delete_queue(args.qname)
            result: dict[str, Any] = {"queue": args.qname, "deleted": True}
        else:
            done = {message_id: rsmq.delete_message(args.qname, message_id) for message_id in args.ids}
            result = {"queue": args.qname, "deleted": done}
    if args.json:
        emit_json(result)
    elif args.queue:
        print(f"deleted queue {args.qname}")
    else:
        for message_id, deleted in result["deleted"].items():
            print(f"{message_id}: {'deleted' if deleted else 'not found'}")
    return 0


def _confirm(args: argparse.Namespace, question: str) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise InvalidRequest(f"{question} refused without --yes (not a terminal)")
    if input(f"{question} [y/N] ").strip().lower() not in {"y", "yes"}:
        raise InvalidRequest("cancelled; nothing was deleted")


def run_dead(args: argparse.Namespace) -> int:
    from pqueue.rsmq import core

    limit = count(args.limit, "--limit")
    dead = core.dead_queue(args.qname)
    with _rsmq(args) as rsmq:
        if args.requeue:
            moved = rsmq.requeue_dead(args.qname, limit=limit)
            if args.json:
                emit_json({"queue": args.qname, "requeued": moved})
            else:
                print(f"moved {moved} message(s) from {dead} back to {args.qname}")
            return 0
        names = rsmq.list_queues()
        messages = rsmq.list_messages(dead, limit=limit) if dead in names else []
    if args.json:
        emit_json(_fields(messages))
        return 0
    _table(["id", "sent", "message"], [(m.id, when(m.sent / 1000), m.message[:80]) for m in messages],
           empty=f"no dead messages for {args.qname}")  # fmt: skip
    return 0
