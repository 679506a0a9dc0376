"""Create and upgrade a pqueue SQLite database: ``pqueue migrate --dsn sqlite:///...`` or :func:`migrate`.

The numbered files in ``migrations/`` are the schema's only source. They run in one
``BEGIN IMMEDIATE`` transaction, so concurrent migrators of one file queue up on the
writer lock and the second finds nothing to do, and workers keep running meanwhile
(their statements wait at most ``busy_timeout``). A crash leaves the file as it was. A
file newer than this pqueue is refused, never touched. WAL mode is set here: it is a
property of the file, kept across connections.
"""

from __future__ import annotations

import asyncio
import os
import time

from pqueue.brokers.sqlite.config import SqliteConfig
from pqueue.brokers.sqlite.connection import connect, schema_version, translated
from pqueue.brokers.sqlite.sql import latest_version, migrations, queries
from pqueue.errors import SchemaError


def migrate(dsn: str) -> list[int]:
    """Bring the database named by ``dsn`` up to date (creating the file); returns the
    versions applied by this call (empty when already current)."""
    return migrate_file(SqliteConfig.from_url(dsn))


def migrate_file(config: SqliteConfig) -> list[int]:
    """:func:`migrate` for a parsed configuration."""
    q = queries()
    applied_now: list[int] = []
    conn = connect(config, create=True)
    try:
        with translated(config):
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(q["migrate_bootstrap"])
                applied = {version for (version,) in conn.execute(q["migrate_applied"])}
                newest = max(applied, default=0)
                if newest > latest_version():
                    raise SchemaError(
                        f"sqlite: {config.path!r} is at version {newest}, newer than this pqueue knows "
                        f"({latest_version()}); upgrade pqueue instead of migrating"
                    )
                for migration in migrations():
                    if migration.version not in applied:
                        for statement in _statements(migration.text):
                            conn.execute(statement)
                        record = {"version": migration.version, "name": migration.name, "now": time.time()}
                        conn.execute(q["migrate_record"], record)
                        applied_now.append(migration.version)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
    finally:
        conn.close()
    return applied_now


def _statements(text: str) -> list[str]:
    """A migration file split into statements (sqlite3 runs one at a time inside a transaction)."""
    import sqlite3

    out: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current)
            current = ""
    return out


async def migrate_async(dsn: str) -> list[int]:
    """:func:`migrate` from async code (in a thread; migrations are rare and short)."""
    return await asyncio.to_thread(migrate, dsn)


def current_version(dsn: str) -> int:
    """The database's applied version; 0 when it was never migrated. Changes nothing."""
    config = SqliteConfig.from_url(dsn)
    if not os.path.exists(config.path):
        return 0
    conn = connect(config)
    try:
        with translated(config):
            return schema_version(conn) or 0
    finally:
        conn.close()
