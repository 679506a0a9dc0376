"""pqueue.chaos.proxy.FaultProxy in front of the real Redis and Postgres: they answer
through it; a reset tears every connection down with a TCP RST (the next command fails,
the one after reconnects); a stall holds bytes, never drops them, and delivers them in
order; latency delays each way; hundreds of connections pass; closing it leaves no task
and no socket behind."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
import pytest_asyncio
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from pqueue.chaos.proxy import FaultProxy, proxied_dsn, upstream_of
from pqueue.errors import ConfigError
from tests.conftest import service_url

pytestmark = pytest.mark.redis


@pytest.fixture
def redis_url() -> str:
    url = service_url("redis")
    assert url is not None
    return url


@pytest_asyncio.fixture
async def proxy(redis_url: str) -> AsyncIterator[FaultProxy]:
    started = FaultProxy(*upstream_of(redis_url))
    await started.start()
    yield started
    await started.close()


@pytest_asyncio.fixture
async def key(redis_url: str) -> AsyncIterator[str]:
    """A key of this test's own on the shared server, deleted afterwards."""
    name = f"pqproxy{uuid.uuid4().hex[:12]}:k"
    yield name
    async with Redis.from_url(redis_url) as direct:
        await direct.delete(name)


def _client(redis_url: str, proxy: FaultProxy) -> Redis:
    """A redis-py client through the proxy that does not retry a failed command itself."""
    dsn = proxied_dsn(redis_url, proxy.port)
    assert dsn is not None
    return Redis.from_url(dsn, retry=Retry(NoBackoff(), 0))


async def _until(condition: object, what: str) -> None:
    for _ in range(500):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


async def test_redis_answers_through_the_proxy(redis_url: str, proxy: FaultProxy, key: str) -> None:
    async with _client(redis_url, proxy) as client:
        assert await client.set(key, "v")
        assert await client.get(key) == b"v"
        assert proxy.connections == 1
    await _until(lambda: proxy.connections == 0, "the closed client's connection is gone")


@pytest.mark.postgres
async def test_postgres_answers_through_the_proxy_and_a_reset_breaks_its_connection() -> None:
    url = service_url("postgres")
    assert url is not None
    pg_proxy = FaultProxy(*upstream_of(url))
    await pg_proxy.start()
    try:
        dsn = proxied_dsn(url, pg_proxy.port)
        assert dsn is not None
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            assert await (await conn.execute("SELECT 41 + 1")).fetchone() == (42,)
            assert pg_proxy.reset() == 1
            with pytest.raises(psycopg.OperationalError):
                await conn.execute("SELECT 1")
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as again:
            assert await (await again.execute("SELECT 1")).fetchone() == (1,)
    finally:
        await pg_proxy.close()


async def test_after_a_reset_the_next_command_fails_and_the_one_after_reconnects(
    redis_url: str, proxy: FaultProxy, key: str
) -> None:
    async with _client(redis_url, proxy) as client, Redis.from_url(redis_url) as direct:
        name = key.replace(":", "-")
        await client.client_setname(name)
        assert await client.incr(key) == 1
        assert proxy.reset() == 1
        assert proxy.connections == 0
        with pytest.raises(RedisConnectionError):
            await client.incr(key)
        assert await client.incr(key) == 2  # a new connection, at once
        assert proxy.connections == 1

        async def server_side_gone() -> bool:
            return all(c.get("name") != name for c in await direct.client_list())

        for _ in range(200):  # the server saw the reset too: the old connection is closed there
            if await server_side_gone():
                break
            await asyncio.sleep(0.01)
        assert await server_side_gone()


async def test_a_reset_is_a_tcp_rst_not_an_orderly_close(proxy: FaultProxy) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"PING\r\n")
    assert await reader.readline() == b"+PONG\r\n"
    proxy.reset()
    with pytest.raises(ConnectionResetError):  # an orderly close would read b"" instead
        await reader.read(100)
    writer.close()


async def test_a_stall_holds_replies_and_new_connections_until_unstall(
    redis_url: str, proxy: FaultProxy, key: str
) -> None:
    async with _client(redis_url, proxy) as client, _client(redis_url, proxy) as later:
        await client.ping()
        proxy.stall()
        pipe = client.pipeline(transaction=False)
        for _ in range(5):
            pipe.incr(key)
        held = asyncio.create_task(pipe.execute())
        joined = asyncio.create_task(later.incr(key))  # a connection opened during the stall
        await asyncio.sleep(0.3)
        assert not held.done()
        assert not joined.done()
        async with Redis.from_url(redis_url) as direct:
            assert await direct.get(key) is None  # held, not yet at the server
        proxy.unstall()
        assert await held == [1, 2, 3, 4, 5]  # in order, none lost
        assert await joined == 6


async def test_latency_delays_each_way_and_keeps_the_order(proxy: FaultProxy) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        proxy.set_latency(0.2)
        started = time.monotonic()
        writer.write(b"PING\r\n")
        assert await reader.readline() == b"+PONG\r\n"
        assert time.monotonic() - started >= 0.4  # 0.2 s to the server, 0.2 s back
        writer.write(b"ECHO first\r\n")
        await asyncio.sleep(0.05)
        proxy.set_latency(0)  # what follows must not overtake what is still delayed
        writer.write(b"ECHO second\r\n")
        replies = [await reader.readline() for _ in range(4)]
        assert replies == [b"$5\r\n", b"first\r\n", b"$6\r\n", b"second\r\n"]
    finally:
        writer.close()


def test_a_latency_that_is_no_duration_is_refused() -> None:
    proxy = FaultProxy("127.0.0.1", 6379)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="latency"):
            proxy.set_latency(bad)
    assert proxy.latency == 0.0


async def test_hundreds_of_connections(proxy: FaultProxy) -> None:
    streams = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(300)]
    try:
        for _, writer in streams:
            writer.write(b"PING\r\n")
        assert {await reader.readline() for reader, _ in streams} == {b"+PONG\r\n"}
        assert proxy.connections == 300
        assert proxy.reset() == 300
        assert proxy.connections == 0
    finally:
        for _, writer in streams:
            writer.close()


async def test_a_server_that_is_down_resets_the_client() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()  # nothing listens on `port` now
    proxy = FaultProxy("127.0.0.1", port)
    await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        with pytest.raises(ConnectionResetError):
            await reader.read(100)
        writer.close()
        assert proxy.connections == 0
    finally:
        await proxy.close()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors in /proc")
async def test_close_leaves_no_task_and_no_socket(redis_url: str) -> None:
    before = _fds()
    proxy = FaultProxy(*upstream_of(redis_url))
    await proxy.start()
    streams = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(50)]
    for reader, writer in streams:
        writer.write(b"PING\r\n")
        assert await reader.readline() == b"+PONG\r\n"
    proxy.stall()
    for _, writer in streams:  # bytes held in the proxy as it closes
        writer.write(b"PING\r\n")
    await proxy.close()
    assert _fds() == before + len(streams)  # the clients' sockets only
    assert proxy.connections == 0
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    for _, writer in streams:
        writer.close()
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", proxy.port)
    await asyncio.sleep(0)  # the clients' transports close on the next turn of the loop
    assert _fds() == before
