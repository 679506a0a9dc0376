"""The Redis broker's notification hub (ADR 0134): one pub/sub connection carries
wake-ups, hand-offs, result waiters and cancels; it comes back after it is killed (the
driver reconnects at once: no outage) and after a server restart (logged once)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

import pqueue
from pqueue.broker import FullBroker
from tests.hub_scenario import (
    HEALTH_LOG,
    every_channel_delivers,
    heard_again,
    listen_on_every_channel,
    outage_lines,
)
from tests.integration.redis.servers import PrivateRedis

pytestmark = pytest.mark.redis

PREFIX = "pqhub"


async def _subscribed(server: PrivateRedis) -> list[tuple[str, int]]:
    """(client id, channels) of each subscribed connection of the brokers."""
    admin = Redis.from_url(server.url, decode_responses=True)
    try:
        clients = await admin.client_list()
    finally:
        await admin.aclose()
    name = f"pqueue:{PREFIX}:"
    return [(c["id"], int(c["sub"])) for c in clients if c.get("name", "").startswith(name) and int(c["sub"])]


async def _kill(server: PrivateRedis, client_id: str) -> None:
    admin = Redis.from_url(server.url, decode_responses=True)
    try:
        await admin.execute_command("CLIENT", "KILL", "ID", client_id)
    finally:
        await admin.aclose()


async def _subscribed_again(server: PrivateRedis, old: str | None) -> str:
    """The id of the connection that subscribed to all four channels again (other than
    ``old``; None after a restart, when the server numbers its clients afresh)."""
    async with asyncio.timeout(15):
        while True:
            with contextlib.suppress(RedisError, OSError):  # the server may be starting
                now = await _subscribed(server)
                if len(now) == 1 and now[0][0] != old and now[0][1] == 4:
                    return now[0][0]
            await asyncio.sleep(0.05)


async def _open(server: PrivateRedis) -> FullBroker:
    broker = pqueue.connect(f"{server.url}?prefix={PREFIX}")
    await broker.open()
    return broker


async def test_one_pubsub_connection_serves_every_part_and_survives_a_kill_and_a_restart(
    private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    broker, producer = await _open(private_redis), await _open(private_redis)
    try:
        await listen_on_every_channel(broker)
        [(client_id, channels)] = await _subscribed(private_redis)  # one connection, four channels
        assert channels == 4
        await every_channel_delivers(broker, producer, "first")

        caplog.set_level(logging.INFO, logger=HEALTH_LOG)
        await _kill(private_redis, client_id)
        await _subscribed_again(private_redis, client_id)
        await heard_again(broker)
        await every_channel_delivers(broker, producer, "killed")
        assert outage_lines(caplog) == ([], [])  # a connection made again at once is no outage

        await asyncio.to_thread(private_redis.stop)
        await asyncio.sleep(1.0)  # the hub notices and retries
        await asyncio.to_thread(private_redis.start)
        await _subscribed_again(private_redis, None)
        await heard_again(broker)
        await every_channel_delivers(broker, producer, "restarted")
        lost, back = outage_lines(caplog)
        assert len(lost) == 1 and len(back) == 1, (lost, back)
    finally:
        await producer.close()
        await broker.close()
