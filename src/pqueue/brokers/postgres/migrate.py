"""Create and upgrade a pqueue schema: ``pqueue migrate --dsn ...`` or :func:`migrate`.

The numbered files in ``migrations/`` are the schema's only source (ADR 0010). They run in
one transaction under an advisory lock, so concurrent migrators of one schema queue up
and the second finds nothing to do; a crash leaves the schema as it was. Re-running is a
no-op. A schema that is newer than this pqueue is refused, never touched.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg

from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.connection import connection_kwargs, translated
from pqueue.brokers.postgres.sql import latest_version, migrations, queries_for, render
from pqueue.errors import SchemaError


def migrate(dsn: str, *, schema: str | None = None) -> list[int]:
    """Bring the schema named by ``dsn`` (``?schema=``, default ``pqueue``) or ``schema`` up to
    date; returns the versions applied by this call (empty when already current)."""
    config = _config(dsn, schema)
    q = queries_for(config.schema)
    applied_now: list[int] = []
    with translated(config.schema, config.redacted), _connect(config) as conn, conn.transaction():
        conn.execute(q["migrate_lock"], {"lock": f"pqueue.migrate:{config.schema}"})
        conn.execute(q["migrate_create_schema"])
        conn.execute(q["migrate_bootstrap"])
        applied = {version for (version,) in conn.execute(q["migrate_applied"])}
        _refuse_newer(config, max(applied, default=0))
        for migration in migrations():
            if migration.version not in applied:
                conn.execute(render(migration.text, config.schema))
                conn.execute(q["migrate_record"], {"version": migration.version, "name": migration.name})
                applied_now.append(migration.version)
    return applied_now


async def migrate_async(dsn: str, *, schema: str | None = None) -> list[int]:
    """:func:`migrate` from async code (runs in a thread; migrations are rare and short)."""
    return await asyncio.to_thread(migrate, dsn, schema=schema)


def current_version(dsn: str, *, schema: str | None = None) -> int:
    """The schema's applied version; 0 when it was never migrated. Changes nothing."""
    config = _config(dsn, schema)
    q = queries_for(config.schema)
    with translated(config.schema, config.redacted), _connect(config) as conn:
        try:
            version = conn.execute(q["schema_version"]).fetchone()
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
            return 0
    return int(version[0] or 0) if version else 0


def _config(dsn: str, schema: str | None) -> PostgresConfig:
    return PostgresConfig.from_url(dsn, {"schema": schema} if schema else None)


def _connect(config: PostgresConfig) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(config.conninfo, **connection_kwargs(config))


def _refuse_newer(config: PostgresConfig, version: int) -> None:
    if version > latest_version():
        raise SchemaError(
            f"pqueue schema {config.schema!r} at {config.redacted} is at version {version}, newer than "
            f"this pqueue knows ({latest_version()}); upgrade pqueue instead of migrating"
        )
