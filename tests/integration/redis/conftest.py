"""Fixtures for the Redis integration tests: a private server for faults, the shared
server (one key prefix per test) for everything else."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest_asyncio

import pqueue
from pqueue.broker import FullBroker
from pqueue.clock import Clock
from tests.backends import redis as redis_backend
from tests.conftest import service_url
from tests.integration.redis.servers import private_redis, replicated_redis

__all__ = ["private_redis", "replicated_redis"]

OpenRedis = Callable[..., Awaitable[FullBroker]]


@pytest_asyncio.fixture
async def shared_prefix() -> AsyncIterator[str]:
    """A key prefix of this test's own on the shared server, removed afterwards."""
    prefix = f"pqi{uuid.uuid4().hex[:12]}"
    yield prefix
    await redis_backend.cleanup(service_url("redis"), prefix)


@pytest_asyncio.fixture
async def open_redis(shared_prefix: str) -> AsyncIterator[OpenRedis]:
    """Open brokers on the shared server under this test's prefix; closed afterwards."""
    url = service_url("redis")
    assert url is not None
    opened: list[FullBroker] = []

    async def _open(*, clock: Clock | None = None, **options: object) -> FullBroker:
        broker = pqueue.connect(redis_backend.namespace_dsn(url, shared_prefix), clock=clock, **options)
        await broker.open()
        opened.append(broker)
        return broker

    yield _open
    for broker in opened:
        await broker.close()
