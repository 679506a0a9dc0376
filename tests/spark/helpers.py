"""What the Spark tests share: a namespaced DSN per test, and claiming every job."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import pqueue
from pqueue.job import Lease
from tests import backends
from tests.conftest import service_url


def namespaced_dsn(name: str, namespace: str) -> Iterator[str]:
    """A DSN on a fresh namespace of backend ``name``; the namespace is removed afterwards."""
    backend = backends.available()[name]
    url = service_url(backend.SERVICE)
    yield str(backend.namespace_dsn(url, namespace))
    asyncio.run(backend.cleanup(url, namespace))


def claim_all(dsn: str, queue: str) -> list[Lease]:
    """Claim every due job of ``queue`` (in batches of 1,000)."""

    async def run() -> list[Lease]:
        broker = pqueue.connect(dsn)
        await broker.open()
        try:
            leases: list[Lease] = []
            while batch := await broker.claim([queue], worker_id="spark-test", limit=1000, lease_for=300):
                leases.extend(batch)
            return leases
        finally:
            await broker.close()

    return asyncio.run(run())


BROKERS = [
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("postgres", marks=pytest.mark.postgres),
]
