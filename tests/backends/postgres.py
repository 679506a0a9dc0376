"""The Postgres backend under test: one freshly migrated schema per test, dropped afterwards.

Only that test's schema is ever dropped; the shared database is never touched otherwise.
"""

from __future__ import annotations

from pqueue.brokers import namespaces
from tests.backends import run_apart

NAME = "postgres"
SERVICE = "postgres"


def namespace_dsn(service_url: str, namespace: str) -> str:
    """A DSN on this test's schema, which is created here by migrating it."""
    schema = namespaces.namespace(service_url, namespace)
    run_apart(schema.create())
    return schema.dsn


async def cleanup(service_url: str, namespace: str) -> None:
    await namespaces.namespace(service_url, namespace).drop()
