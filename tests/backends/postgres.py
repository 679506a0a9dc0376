"""The Postgres backend under test: one freshly migrated schema per test, dropped afterwards.

Only that test's schema is ever dropped; the shared database is never touched otherwise.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from pqueue.brokers.postgres import migrate

NAME = "postgres"
SERVICE = "postgres"


def namespace_dsn(service_url: str, namespace: str) -> str:
    """A DSN on this test's schema, which is created here by migrating it."""
    parts = urlsplit(service_url)
    query = f"{parts.query}&schema={namespace}" if parts.query else f"schema={namespace}"
    dsn = urlunsplit(parts._replace(query=query))
    migrate(dsn)
    return dsn


async def cleanup(service_url: str, namespace: str) -> None:
    async with await psycopg.AsyncConnection.connect(service_url, autocommit=True) as conn:
        await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(namespace)))
