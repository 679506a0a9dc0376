"""The Redis side of the broker's notification hub (ADR 0134): one pub/sub connection.

The connection comes from the broker's pool (which keeps one connection spare for it).
SUBSCRIBE only sends, replies arrive with the messages, so a newly registered channel is
subscribed while the read goes on; its confirmation tells the hub the channel is heard.
redis-py may reconnect by itself inside a read and subscribe again: the confirmations
that follow tell every part that messages may have been missed.

On a Redis Cluster the scripts' ``PUBLISH`` reaches every node (ADR 0142), so the hub
listens on one node of its own, a different one after each lost connection: a failed
master does not keep the hub deaf until it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from pqueue.brokers.handoff import FlushMarkers
from pqueue.brokers.hub import Hub
from pqueue.brokers.redis.core import OutageReporter, honour_lost_cancel


class RedisSession:
    """One subscribed connection reporting to its hub."""

    listens_while_reading = True

    def __init__(self, pubsub: PubSub, hub: Hub, owner: Redis | None = None) -> None:
        self._pubsub = pubsub
        self._hub = hub
        self._owner = owner  # a cluster node's own client, closed with the session

    async def listen(self, channels: Sequence[str]) -> None:
        await self._pubsub.subscribe(*channels)

    async def unlisten(self, channels: Sequence[str]) -> None:
        await self._pubsub.unsubscribe(*channels)

    async def read(self) -> None:
        me = asyncio.current_task()
        hub, pubsub = self._hub, self._pubsub
        while True:
            try:
                message = await pubsub.get_message(timeout=None)
            finally:
                honour_lost_cancel(me, 0)  # the hub cancels reads; redis-py may drop that
            if message is None:
                continue
            kind = message.get("type")
            if kind == "message":
                hub.deliver(str(message.get("channel")), str(message.get("data")))
            elif kind == "subscribe":
                hub.heard(str(message.get("channel")))

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        if self._owner is not None:
            with contextlib.suppress(Exception):
                await self._owner.aclose(close_connection_pool=True)


class RedisLink:
    """Makes the hub's pub/sub connections; reports outages to the server's health."""

    errors: tuple[type[BaseException], ...] = (RedisError, RedisClusterException, OSError)

    def __init__(self, client: Callable[[], Redis | RedisCluster], reporter: OutageReporter) -> None:
        self._client = client  # the open broker's client (the hub starts only on an open broker)
        self._reporter = reporter
        self._turn = 0  # which cluster node the next connection goes to

    async def connect(self, hub: Hub) -> RedisSession:
        client = self._client()
        if not isinstance(client, RedisCluster):
            return RedisSession(client.pubsub(), hub)
        nodes = client.get_nodes()
        node = nodes[self._turn % len(nodes)]
        self._turn += 1
        pool = ConnectionPool(
            connection_class=node.connection_class, max_connections=1, **node.connection_kwargs
        )
        direct = Redis(connection_pool=pool)
        return RedisSession(direct.pubsub(), hub, owner=direct)

    def lost(self, error: BaseException) -> None:
        self._reporter.lost(error)

    def back(self, sent_at: float) -> None:
        self._reporter.health.ok(sent_at)


async def flush(
    client: Redis | RedisCluster, hub: Hub, markers: FlushMarkers, channel: str, *, timeout: float
) -> bool:
    """Wait until every message published on ``channel`` before this call has been received.

    Redis delivers one channel's messages in the order they were published, so a marker
    published now arrives after them (the channel's handler hands it to ``markers``).
    False if the hub does not hear the channel, or the marker did not come in ``timeout``.
    """
    if not hub.hears(channel):
        return False
    with markers.new() as (marker, arrived):
        try:
            await client.publish(channel, marker)
            async with asyncio.timeout(timeout):
                await arrived.wait()
            return True
        except (TimeoutError, RedisError, OSError):
            return False
