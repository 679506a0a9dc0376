"""Contract: enqueue, unique, batch, limited jobs and inspector reads through the sync Client's
transport.

The sync ``Client`` enqueues and reads on Redis, Postgres and SQLite from the caller's thread
(:mod:`pqueue.transport`); here every ``enqueue``, ``get_job``, ``list_queues`` and ``list_jobs`` of
the contract goes through that blocking transport (run in a worker thread), the rest
through the broker, so the two transports cannot drift. The memory backend has no
blocking transport (its sync Client uses the loop thread, i.e. the broker itself), so
there the suite runs on the broker as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import pytest_asyncio

import pqueue
from pqueue.broker import FullBroker, JobPage
from pqueue.clock import ManualClock
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus
from pqueue.testing.contract import (
    AdminContract,
    EnqueueContract,
    JobPriorityContract,
    LimitsContract,
    UniqueContract,
)
from pqueue.transport import SyncTransport, sync_transport


class ThroughSyncTransport:
    """A broker whose producer calls and lookups go through the blocking transport."""

    def __init__(self, broker: FullBroker, transport: SyncTransport) -> None:
        self._broker = broker
        self._transport = transport

    def __getattr__(self, name: str) -> Any:
        return getattr(self._broker, name)

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        return await asyncio.to_thread(self._transport.enqueue, specs)

    async def get_job(self, job_id: str) -> Job:
        return await asyncio.to_thread(self._transport.get_job, job_id)

    async def list_queues(self) -> list[str]:
        return await asyncio.to_thread(self._transport.list_queues)

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        def call() -> JobPage:
            return self._transport.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset)

        return await asyncio.to_thread(call)


@pytest_asyncio.fixture
async def pqueue_open_broker(
    pqueue_open_broker: Callable[[ManualClock], Awaitable[FullBroker]],
) -> AsyncIterator[Callable[[ManualClock], Awaitable[FullBroker]]]:
    transports: list[SyncTransport] = []

    async def open_broker(clock: ManualClock) -> FullBroker:
        broker = await pqueue_open_broker(clock)
        transport = sync_transport(broker)
        if transport is None:
            return broker
        transports.append(transport)
        proxy: Any = ThroughSyncTransport(broker, transport)
        return proxy  # type: ignore[no-any-return]

    yield open_broker
    for transport in transports:
        transport.close()


class TestEnqueueThroughSyncTransport(EnqueueContract):
    pass


class TestUniqueThroughSyncTransport(UniqueContract):
    pass


class TestInspectorThroughSyncTransport(AdminContract):
    pass


class TestLimitsThroughSyncTransport(LimitsContract):
    """Limited jobs enqueued and listed (their lanes on Redis) through the transport."""


class TestJobPriorityThroughSyncTransport(JobPriorityContract):
    """Prioritized jobs enqueued and read through the transport (ADR 0145)."""


def test_every_backend_with_a_sync_client_path_has_a_transport() -> None:
    assert sync_transport(pqueue.connect("redis://127.0.0.1:6379/0")) is not None
    assert sync_transport(pqueue.connect("postgresql://postgres@127.0.0.1/test")) is not None
    assert sync_transport(pqueue.connect("sqlite:///pqueue.db")) is not None
    assert sync_transport(pqueue.connect("memory://x")) is None
