"""``pqueue workers``: the worker processes seen recently."""

from __future__ import annotations

import argparse
from typing import Any

from pqueue.cli._admin import ago, command_parser, console, emit_json, open_client, rich_module, when


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "workers",
        help="live workers: id, host, pid, queues, concurrency, up since, last seen",
        description="Worker processes that sent a heartbeat within their TTL.",
        examples=["pqueue workers", "pqueue workers --json | jq '.workers | length'"],
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        workers = client.list_workers()
    if args.json:
        emit_json({"workers": [worker.to_dict() for worker in workers]})
        return 0
    table = rich_module("rich.table").Table()
    for name in ("id", "host", "pid", "queues", "concurrency", "up since", "last seen"):
        table.add_column(
            name, no_wrap=name != "queues", justify="right" if name in ("pid", "concurrency") else "left"
        )
    for w in workers:
        table.add_row(
            w.id,
            w.host,
            str(w.pid),
            ", ".join(w.queues),
            str(w.concurrency),
            when(w.started_at),
            ago(w.last_seen),
        )
    if not workers:
        table.caption = "no live workers"
    console().print(table)
    return 0
