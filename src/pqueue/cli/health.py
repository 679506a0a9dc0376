"""``pqueue health``: exit 0 when the broker answers and its schema is current (for probes)."""

from __future__ import annotations

import argparse
from typing import Any

from pqueue.cli._admin import command_parser, emit_json, open_client


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers,
        "health",
        help="exit 0 if the broker answers and its schema is current",
        description="""
            Connect, ask the broker's server, and check its storage schema (Postgres migrations,
            the Redis key layout) is the one this pqueue writes; on SQLite, also that every page
            of the file is sound (PRAGMA quick_check). Exits 0 and prints one line when healthy;
            otherwise prints one line on stderr naming the problem and exits 1. For scripts,
            container health checks and readiness probes.
        """,
        examples=[
            "pqueue health --dsn postgresql://app@db/app || echo 'run: pqueue migrate'",
            "pqueue health --json",
        ],
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        checked = client.health()
    if args.json:
        emit_json({"ok": True, "checked": checked})
    else:
        print(f"ok: {checked}")
    return 0
