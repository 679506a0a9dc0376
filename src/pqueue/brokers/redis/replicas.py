"""``wait_replicas=N``: enqueues and acks return once N replicas have them (ADR 0143, 0159).

Redis replicates asynchronously: a master killed right after it answered may take the
last writes with it, and its replica, promoted, never saw them. ``WAIT`` closes most of
that window, at a round trip's cost, but it waits for the writes of *its own
connection*, and pqueue's writes go over pooled connections (on a cluster, per node). So
each confirmation writes a small marker key in the slot of each queue written and sends
``WAIT`` right after it on the same connection: a master replicates in order, so once
the marker is on N replicas, so is everything the master applied before it.

``open`` refuses a ``wait_replicas`` above the replicas a master has (every write would
be stored, then reported unconfirmed), and a write that fewer replicas confirmed raises
:class:`~pqueue.errors.NotReplicated` naming its jobs: it is on the master, so a retry
with the same ids stores nothing twice (ADR 0159).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster

from pqueue.errors import ConfigError, NotReplicated

if TYPE_CHECKING:
    from pqueue.brokers.redis.core import RedisCore

WAIT_TIMEOUT_MS = 1000
"""How long one ``WAIT`` waits for the replicas before the write counts as unconfirmed."""
MARKER_TTL_MS = 60_000
"""The marker keys (``<prefix>:{<queue>}:confirm``) expire by themselves."""
NAMED_IDS = 5
"""Job ids a :class:`~pqueue.errors.NotReplicated` message names (all are in ``job_ids``)."""


def _replicas(n: int) -> str:
    return f"{n} replica" if n == 1 else f"{n} replicas"


async def refuse_more_than_connected(client: Redis | RedisCluster, wanted: int, server: str) -> None:
    """Raise :class:`ConfigError` if the server (on a cluster, the master with the fewest)
    has fewer connected replicas than ``wanted`` (``INFO replication``, reads only)."""
    if not wanted:
        return
    found: list[tuple[int, str]] = []  # (connected replicas, who has them)
    if isinstance(client, RedisCluster):
        for node in client.get_primaries():
            info = await client.info("replication", target_nodes=node)
            found.append((int(info.get("connected_slaves", 0)), f"{server}: master {node.host}:{node.port}"))
    else:
        found.append((int((await client.info("replication")).get("connected_slaves", 0)), server))
    have, who = min(found)
    if have < wanted:
        raise ConfigError(
            f"wait_replicas={wanted} but {who} has {_replicas(have)} connected: every write would be "
            f"stored, then reported unconfirmed; lower wait_replicas to {have} or add replicas"
        )


def _jobs(ids: Sequence[str]) -> str:
    """``job <id>`` or ``jobs <id>, <id> and N more`` (at most :data:`NAMED_IDS` named)."""
    named = ", ".join(ids[:NAMED_IDS])
    more = f" and {len(ids) - NAMED_IDS} more" if len(ids) > NAMED_IDS else ""
    return f"job {named}" if len(ids) == 1 else f"jobs {named}{more}"


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Fewer replicas confirmed a round trip's writes than ``wait_replicas`` asked for."""

    server: str
    wanted: int
    confirmed: int

    def error(self, job_ids: Sequence[str], *, acks: bool = False) -> NotReplicated:
        """The :class:`NotReplicated` of the writes of ``job_ids`` (enqueued, or ``acks``)."""
        ids = tuple(job_ids)
        what = (
            f"the ack of {_jobs(ids)}"
            if acks
            else f"{_jobs(ids)}; a retry with the same job_id stores nothing twice"
        )
        message = (
            f"{self.server}: written, not yet on {_replicas(self.wanted)} "
            f"({self.confirmed} of wait_replicas={self.wanted} confirmed within {WAIT_TIMEOUT_MS} ms): {what}"
        )
        return NotReplicated(message, job_ids=ids, wanted=self.wanted, confirmed=self.confirmed)


class ReplicaWait:
    """Confirms a broker's writes with ``WAIT``; does nothing when ``wait_replicas`` is 0."""

    def __init__(self, core: RedisCore) -> None:
        self._core = core
        self._nodes: dict[str, Redis] = {}  # cluster node name -> a client of its own

    @property
    def wanted(self) -> int:
        return self._core.options.wait_replicas

    async def shortfall(self, queues: Iterable[str]) -> Shortfall | None:
        """Wait until ``wait_replicas`` replicas have every write made so far to the masters
        of ``queues``; None once they do (or when none are asked for), else how many did
        (the fewest over those masters): the writes are on the master, unconfirmed."""
        wanted = self.wanted
        if not wanted:
            return None
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
            return Shortfall(self._core.server, wanted, min(counts))
        return None

    async def _wait(
        self, client: Redis | RedisCluster, node: ClusterNode | None, key: str, wanted: int
    ) -> int:
        if not key:  # a cluster slot without a known master
            return 0
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
