"""``pqueue migrate``: create or upgrade the Postgres schema, or the SQLite file, a DSN names.

``--dsn`` (or ``PQUEUE_DSN``) picks the database; the schema is the DSN's ``?schema=``,
``--schema`` or ``PQUEUE_SCHEMA`` (default ``pqueue``). Re-running is a no-op; ``--check``
only reports and exits 1 when the schema needs migrating (for deploy scripts). A
``sqlite:///path.db`` DSN names a file, created (with its tables) by the first migrate.
"""

from __future__ import annotations

import argparse
import os

from pqueue.errors import ConfigError


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="create or upgrade the Postgres schema or SQLite file",
        description=(
            "Create or upgrade pqueue's tables in a Postgres schema (the DSN's ?schema=, --schema, "
            "or 'pqueue'), or in a SQLite file (sqlite:///path.db, created if missing). Safe to "
            "re-run, and to run from several hosts (Postgres) or while workers run."
        ),
    )
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PQUEUE_DSN"),
        help="postgresql://user@host/db[?schema=NAME] or sqlite:///path.db (env PQUEUE_DSN)",
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
    if dsn.startswith("sqlite://"):
        return _run_sqlite(args)
    if not dsn.startswith(("postgresql://", "postgres://")):
        scheme = dsn.split("://", 1)[0]
        raise ConfigError(
            f"pqueue migrate: only Postgres and SQLite have a schema to migrate, not {scheme}://"
        )
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


def _run_sqlite(args: argparse.Namespace) -> int:
    """``pqueue migrate`` on a SQLite file (``--schema`` has no meaning there)."""
    from pqueue.brokers.sqlite import current_version, migrate
    from pqueue.brokers.sqlite.config import SqliteConfig
    from pqueue.brokers.sqlite.sql import latest_version

    if args.schema:
        raise ConfigError("pqueue migrate: --schema is for Postgres; a SQLite DSN names one file")
    path = SqliteConfig.from_url(args.dsn).path
    if args.check:
        version = current_version(args.dsn)
        print(f"sqlite {path!r}: version {version}, this pqueue needs {latest_version()}")
        return 0 if version == latest_version() else 1
    applied = migrate(args.dsn)
    if applied:
        print(f"sqlite {path!r}: applied migration(s) {', '.join(f'{v:04d}' for v in applied)}")
    else:
        print(f"sqlite {path!r}: already at version {latest_version()}, nothing to do")
    return 0
