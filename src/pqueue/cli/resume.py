"""``pqueue resume QUEUE...``: workers claim from paused queues again."""

from __future__ import annotations

import argparse
from typing import Any

from pqueue.cli._admin import command_parser
from pqueue.cli.pause import switch


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "resume",
        help="resume paused queues",
        description="""
            Resume paused queues: workers claim from them again, idle ones at once.
        """,
        examples=["pqueue resume emails", "pqueue resume reports exports --json"],
    )
    parser.add_argument("queues", nargs="+", metavar="QUEUE", help="queues to resume")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return switch(args, "resumed", lambda client, queue: client.resume(queue))
