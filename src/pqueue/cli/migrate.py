"""``pqueue migrate``: create or upgrade the Postgres schema a DSN names.

``--dsn`` (or ``PQUEUE_DSN``) picks the database; the schema is the DSN's ``?schema=``,
``--schema`` or ``PQUEUE_SCHEMA`` (default ``pqueue``). Re-running is a no-op; ``--check``
only reports and exits 1 when the schema needs migrating (for deploy scripts).
"""

from __future__ import annotations

import argparse
import os

from pqueue.errors import ConfigError


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="create or upgrade the Postgres schema",
        description=(
            "Create or upgrade pqueue's tables in a Postgres schema (the DSN's ?schema=, --schema, "
            "or 'pqueue'). Safe to re-run and to run from several hosts at once."
        ),
    )
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PQUEUE_DSN"),
        help="postgresql://user@host/db[?schema=NAME] (env PQUEUE_DSN)",
    )
    parser.add_argument(
        "--schema",
        default=os.environ.get("PQUEUE_SCHEMA"),
        help="schema holding pqueue's tables; overrides the DSN's ?schema= (env PQUEUE_SCHEMA)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if the schema is missing or behind this pqueue",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Migrate (or check) and say what happened; errors are reported by the dispatcher."""
    dsn = args.dsn
    if not dsn:
        raise ConfigError("pqueue migrate: pass --dsn postgresql://... or set PQUEUE_DSN")
    if not dsn.startswith(("postgresql://", "postgres://")):
        scheme = dsn.split("://", 1)[0]
        raise ConfigError(f"pqueue migrate: only Postgres has a schema to migrate, not {scheme}://")
    from pqueue.brokers.postgres.config import PostgresConfig
    from pqueue.brokers.postgres.migrate import current_version, migrate
    from pqueue.brokers.postgres.sql import latest_version

    schema = PostgresConfig.from_url(dsn, {"schema": args.schema} if args.schema else None).schema
    if args.check:
        version = current_version(dsn, schema=schema)
        print(f"schema {schema!r}: version {version}, this pqueue needs {latest_version()}")
        return 0 if version == latest_version() else 1
    applied = migrate(dsn, schema=schema)
    if applied:
        print(f"schema {schema!r}: applied migration(s) {', '.join(f'{v:04d}' for v in applied)}")
    else:
        print(f"schema {schema!r}: already at version {latest_version()}, nothing to do")
    return 0
