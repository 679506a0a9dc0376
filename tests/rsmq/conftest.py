"""RSMQ tests: real Redis, one RSMQ namespace per test (``ns``), its keys removed afterwards.

The ``rsmq`` fixture runs each API test twice, on :class:`pqueue.rsmq.Rsmq` and on
:class:`pqueue.rsmq.AsyncRsmq` (called from the test through a loop thread), so the
suite is the contract of both clients.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from redis import Redis

from pqueue.rsmq import AsyncRsmq, Rsmq
from tests.conftest import service_url


@pytest.fixture
def redis_url() -> str:
    url = service_url("redis")
    assert url is not None
    return url


@pytest.fixture
def ns(redis_url: str) -> Iterator[str]:
    """A namespace of this test's own; every key under it is removed afterwards."""
    name = f"pqtrsmq{uuid.uuid4().hex[:10]}"
    yield name
    client = Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{name}:*", count=1000))
        if keys:
            client.unlink(*keys)
    finally:
        client.close()


@pytest.fixture
def raw(redis_url: str) -> Iterator[Redis]:
    """A plain redis-py client (str replies) to look at the layout itself."""
    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


class LoopThread:
    """An event loop on a thread of its own: runs coroutines for synchronous tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class BlockingAsync:
    """:class:`AsyncRsmq` with the blocking client's calling convention."""

    def __init__(self, client: AsyncRsmq, loop: LoopThread) -> None:
        self.client, self.loop = client, loop
        self.keys = client.keys

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        return lambda *args, **kwargs: self.loop.run(method(*args, **kwargs))


@pytest.fixture(params=["sync", "async"])
def rsmq(request: pytest.FixtureRequest, redis_url: str, ns: str) -> Iterator[Any]:
    if request.param == "sync":
        with Rsmq(redis_url, ns=ns) as client:
            yield client
        return
    loop = LoopThread()
    client = loop.run(_make_async(redis_url, ns))
    try:
        yield BlockingAsync(client, loop)
    finally:
        loop.run(client.close())
        loop.close()


async def _make_async(url: str, ns: str) -> AsyncRsmq:
    return AsyncRsmq(url, ns=ns)
