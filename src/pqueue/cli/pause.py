"""``pqueue pause QUEUE...``: workers stop claiming from these queues (enqueues go on)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pqueue.cli._admin import command_parser, emit_json, open_client, queue_filter


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "pause",
        help="pause queues: workers claim nothing more from them",
        description="""
            Pause queues: within one claim, workers take no more jobs from them; jobs
            already running finish, and enqueues go on. The pause is stored in the broker,
            so restarted workers keep to it. `pqueue resume` undoes it; `pqueue stats` marks
            paused queues.
        """,
        examples=["pqueue pause emails", "pqueue pause reports exports --json"],
    )
    parser.add_argument("queues", nargs="+", metavar="QUEUE", help="queues to pause")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return switch(args, "paused", lambda client, queue: client.pause(queue))


def switch(args: argparse.Namespace, done: str, act: Callable[[Any, str], bool]) -> int:
    """Pause or resume each queue; print what changed and the paused queues after."""
    queues = [str(queue_filter(name)) for name in args.queues]  # every name checked first
    with open_client(args) as client:
        changed = [queue for queue in queues if act(client, queue)]
        paused = client.paused_queues()
    if args.json:
        unchanged = [queue for queue in queues if queue not in changed]
        emit_json({done: changed, "unchanged": unchanged, "paused_queues": paused})
        return 0
    for queue in queues:
        print(f"{done} {queue}" if queue in changed else f"{queue} was already {done}")
    return 0
