"""Fixtures for Postgres integration tests: the server, and a fresh schema per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import psycopg
import pytest
import pytest_asyncio
from psycopg import sql

from pqueue.brokers.postgres import PostgresBroker, migrate
from tests.conftest import service_url


@pytest.fixture
def pg_url() -> str:
    url = service_url("postgres")
    assert url is not None
    return url


@pytest.fixture
def schema_name(pg_url: str) -> Iterator[str]:
    """A schema name for this test only; dropped (with everything in it) afterwards."""
    name = f"pqi{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture
def dsn(pg_url: str, schema_name: str) -> str:
    """A DSN on this test's schema, not migrated yet."""
    return f"{pg_url}?schema={schema_name}"


@pytest.fixture
def migrated_dsn(dsn: str) -> str:
    migrate(dsn)
    return dsn


OpenPg = Callable[..., Awaitable[PostgresBroker]]


@pytest_asyncio.fixture
async def open_pg(migrated_dsn: str) -> AsyncIterator[OpenPg]:
    """Open brokers on this test's migrated schema (server clock unless one is passed)."""
    opened: list[PostgresBroker] = []

    async def _open(**options: object) -> PostgresBroker:
        broker = PostgresBroker.from_url(migrated_dsn, **options)  # type: ignore[arg-type]
        await broker.open()
        opened.append(broker)
        return broker

    yield _open
    for broker in opened:
        await broker.close()
