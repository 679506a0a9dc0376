"""``wait_replicas=N``: enqueues and acks return once N replicas have them (ADR 0143).

Redis replicates asynchronously: a master killed right after it answered may take the
last writes with it, and its replica, promoted, never saw them. ``WAIT`` closes most of
that window, at a round trip's cost, but it waits for the writes of *its own
connection*, and pqueue's writes go over pooled connections (on a cluster, per node). So
each confirmation writes a small marker key in the slot of each queue written and sends
``WAIT`` right after it on the same connection: a master replicates in order, so once
the marker is on N replicas, so is everything the master applied before it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster

from pqueue.brokers.health import failure_message
from pqueue.errors import BrokerUnreachable

if TYPE_CHECKING:
    from pqueue.brokers.redis.core import RedisCore

WAIT_TIMEOUT_MS = 1000
"""How long one ``WAIT`` waits for the replicas before the write counts as unconfirmed."""
MARKER_TTL_MS = 60_000
"""The marker keys (``<prefix>:{<queue>}:confirm``) expire by themselves."""


class ReplicaWait:
    """Confirms a broker's writes with ``WAIT``; does nothing when ``wait_replicas`` is 0."""

    def __init__(self, core: RedisCore) -> None:
        self._core = core
        self._nodes: dict[str, Redis] = {}  # cluster node name -> a client of its own

    @property
    def wanted(self) -> int:
        return self._core.options.wait_replicas

    async def confirm(self, queues: Iterable[str]) -> None:
        """Return once ``wait_replicas`` replicas have every write made so far to the
        masters of ``queues``; else raise :class:`BrokerUnreachable` (the writes are on
        the master, unconfirmed: a retry by job id is safe)."""
        wanted = self.wanted
        if not wanted:
            return
        client = self._core.client
        markers: dict[str, tuple[ClusterNode | None, str]] = {}
        for queue in queues:
            key = self._core.queue(queue).seq.removesuffix("seq") + "confirm"
            if isinstance(client, RedisCluster):
                node = client.get_node_from_key(key)
                if node is None:  # the slot has no known master now: nothing can confirm it
                    markers.setdefault("", (None, ""))
                    continue
                markers.setdefault(node.name, (node, key))
            else:
                markers.setdefault("", (None, key))
        counts = await asyncio.gather(
            *(self._wait(client, node, key, wanted) for node, key in markers.values())
        )
        if counts and min(counts) < wanted:
            cause = (
                f"written, but only {min(counts)} of the {wanted} replicas asked for (wait_replicas) "
                f"confirmed it within {WAIT_TIMEOUT_MS} ms"
            )
            raise BrokerUnreachable(
                failure_message(self._core.server, cause), address=self._core.address, cause=cause
            )

    async def _wait(
        self, client: Redis | RedisCluster, node: ClusterNode | None, key: str, wanted: int
    ) -> int:
        direct = client if node is None else self._node_client(node)
        assert isinstance(direct, Redis)
        pipe = direct.pipeline(transaction=False)  # one connection: the marker, then WAIT
        pipe.execute_command("SET", key, "1", "PX", MARKER_TTL_MS)
        pipe.execute_command("WAIT", wanted, WAIT_TIMEOUT_MS)
        replies: list[Any] = await pipe.execute()
        return int(replies[1])

    def _node_client(self, node: ClusterNode) -> Redis:
        found = self._nodes.get(node.name)
        if found is None:
            pool = ConnectionPool(connection_class=node.connection_class, **node.connection_kwargs)
            found = self._nodes[node.name] = Redis(connection_pool=pool)
        return found

    async def close(self) -> None:
        nodes, self._nodes = self._nodes, {}
        for client in nodes.values():
            with contextlib.suppress(Exception):
                await client.aclose(close_connection_pool=True)
