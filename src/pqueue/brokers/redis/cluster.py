"""Redis Cluster: redis-py's cluster clients, made from a ``redis+cluster://`` DSN (ADR 0143).

pqueue has no cluster client of its own: redis-py's ``RedisCluster`` (asyncio and
blocking) routes each command by its keys' slot and follows ``MOVED``/``ASK`` itself.
What this module adds is what pqueue's round trips need on top:

- a pipeline holds only commands with keys; keyless ones (``TIME``, ``SCRIPT LOAD``)
  go beside it, and ``SCRIPT LOAD`` goes to every master (a failed-over replica may not
  have the scripts yet, which the ``NOSCRIPT`` path then loads);
- errors that mean "the cluster is reconfiguring" (``CLUSTERDOWN``, ``TRYAGAIN``, a
  redirect that did not settle, a node that cannot be reached) are unreachable-server
  errors, so workers ride them out as any outage and no raw ``MOVED`` text reaches a
  message;
- the refusal of a plain ``redis://`` DSN pointed at a cluster node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis import RedisCluster as SyncRedisCluster
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode as SyncClusterNode
from redis.connection import SSLConnection, parse_url
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MaxConnectionsError,
    MovedError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry as SyncRetry

from pqueue.brokers.redis.config import RedisOptions

Command = tuple[Any, ...]

RECONFIGURING = (
    ClusterDownError,
    TryAgainError,
    MovedError,
    AskError,
    SlotNotCoveredError,
    ClusterError,
    MaxConnectionsError,
)
"""Errors a cluster answers while a failover or resharding is under way: like an outage,
they pass (the worker waits and tries again), and their text is never shown raw."""

NODE_CONNECTIONS = 64
"""Connections per node at most (redis-py's cluster client has no blocking pool: past this,
a command fails instead of waiting); pqueue's ``pool_size`` raises it, never lowers it."""


REJOIN_SETTLE = 2.0
"""Seconds after an outage during which the cluster's reconfiguring replies are its tail:
a master started again refuses its slots for 2 s while it rejoins (Redis's writable
delay), and other nodes may answer ``CLUSTERDOWN`` until they take it in. Logged at DEBUG
(see :meth:`pqueue.brokers.health.ServerHealth.lost`); a WARNING if it lasts longer."""


def reconfiguring(exc: BaseException) -> bool:
    """Whether ``exc`` says the cluster is reconfiguring (or unreachable as a whole)."""
    if isinstance(exc, RECONFIGURING):
        return True
    return isinstance(exc, RedisClusterException) and not isinstance(exc, ResponseError)


CAUSES: tuple[tuple[type[BaseException], str], ...] = (
    (MovedError, "the cluster moved a slot and the redirect did not settle (failover or resharding)"),
    (AskError, "the cluster moved a slot and the redirect did not settle (failover or resharding)"),
    (ClusterDownError, "the cluster is down (CLUSTERDOWN: a failover is under way or a slot has no master)"),
    (TryAgainError, "the cluster is moving a slot (TRYAGAIN)"),
    (SlotNotCoveredError, "no reachable master serves a slot (failover under way?)"),
    (MaxConnectionsError, "every pooled connection to a node is busy (raise pool_size)"),
)
"""How messages name the cluster's reconfiguring errors (never their raw text)."""


def describe_cluster_error(exc: BaseException) -> str:
    """A one-line cause for a cluster error, without the server's raw redirect text."""
    for kind, cause in CAUSES:
        if isinstance(exc, kind):
            return cause
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "Cluster mode is not enabled" in text:
        return "not a cluster node (cluster mode is off): use redis:// for one server"
    if "cannot be connected" in text or "at least one reachable node" in text:
        return "no startup node answered"
    return text


def _node_kwargs(options: RedisOptions) -> dict[str, Any]:
    """Credentials, TLS and socket settings of the DSN, for every node's connections."""
    kwargs: dict[str, Any] = parse_url(options.url)  # type: ignore[no-untyped-call]
    for name in ("host", "port", "db", "path"):
        kwargs.pop(name, None)
    if kwargs.pop("connection_class", None) is SSLConnection:
        kwargs["ssl"] = True
    return kwargs


def _common(options: RedisOptions, pool_options: dict[str, Any]) -> dict[str, Any]:
    settings = {k: v for k, v in pool_options.items() if k != "timeout"}  # no blocking pool
    settings.update(_node_kwargs(options))
    settings.setdefault("socket_timeout", None)  # as redis-py's plain client (the cluster's is 5 s)
    settings["max_connections"] = max(NODE_CONNECTIONS, options.pool_size + 1)
    return settings


def async_client(options: RedisOptions, pool_options: dict[str, Any], *, backoff_cap: float) -> RedisCluster:
    """The asyncio cluster client of ``options`` (unconnected: ``initialize`` connects)."""
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in options.nodes],
        retry=Retry(ExponentialBackoff(cap=backoff_cap, base=0.05), options.retries),
        **_common(options, pool_options),
    )


def sync_client(
    options: RedisOptions, pool_options: dict[str, Any], *, backoff_cap: float
) -> SyncRedisCluster:
    """The blocking cluster client of the sync transport (connects here)."""
    return SyncRedisCluster(
        startup_nodes=[SyncClusterNode(host, port) for host, port in options.nodes],  # type: ignore[no-untyped-call]
        retry=SyncRetry(ExponentialBackoff(cap=backoff_cap, base=0.05), options.retries),
        **_common(options, pool_options),
    )


def _keyless(command: Command) -> bool:
    return str(command[0]).upper() in ("TIME", "SCRIPT")


async def send(client: RedisCluster, commands: Sequence[Command]) -> list[Any]:
    """One round trip per node: keyed commands in a cluster pipeline, keyless ones beside
    it; a refused command's error stands in place of its reply."""
    if len(commands) == 1 and not _keyless(commands[0]):  # a lone command: no pipeline's cost
        return [await _one(client, commands[0])]
    keyless = [i for i, c in enumerate(commands) if _keyless(c)]
    if not keyless:
        return await _pipelined(client, commands)
    keyed = [i for i in range(len(commands)) if not _keyless(commands[i])]
    aside = asyncio.gather(*(_one(client, commands[i]) for i in keyless))
    along = _pipelined(client, [commands[i] for i in keyed])
    replies: list[Any] = [None] * len(commands)
    for indices, got in zip((keyless, keyed), await asyncio.gather(aside, along), strict=True):
        for i, reply in zip(indices, got, strict=True):
            replies[i] = reply
    return replies


async def _one(client: RedisCluster, command: Command) -> Any:
    """One command on its own (``SCRIPT LOAD`` to every master); a refusal is returned."""
    try:
        if str(command[0]).upper() == "SCRIPT":
            return await client.script_load(command[2])
        execute: Callable[..., Awaitable[Any]] = client.execute_command
        return await execute(*command)
    except ResponseError as exc:
        return exc


async def _pipelined(client: RedisCluster, commands: Sequence[Command]) -> list[Any]:
    if not commands:
        return []
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return list(await pipe.execute(raise_on_error=False))


def send_sync(client: SyncRedisCluster, commands: Sequence[Command]) -> list[Any]:
    """:func:`send`, blocking (the sync Client's transport)."""
    if len(commands) == 1 and not _keyless(commands[0]):  # a lone command: no pipeline's cost
        try:
            return [client.execute_command(*commands[0])]  # type: ignore[no-untyped-call]
        except ResponseError as exc:
            return [exc]
    replies: list[Any] = [None] * len(commands)
    keyed: list[int] = []
    for i, command in enumerate(commands):
        if not _keyless(command):
            keyed.append(i)
            continue
        try:
            if str(command[0]).upper() == "SCRIPT":
                replies[i] = client.script_load(command[2])
            else:
                replies[i] = client.execute_command(*command)  # type: ignore[no-untyped-call]
        except ResponseError as exc:
            replies[i] = exc
    if keyed:
        pipe = client.pipeline(transaction=False)  # type: ignore[no-untyped-call]
        for i in keyed:
            pipe.execute_command(*commands[i])
        for i, reply in zip(keyed, pipe.execute(raise_on_error=False), strict=True):
            replies[i] = reply
    return replies


def cluster_enabled(info: dict[str, Any]) -> bool:
    """Whether an ``INFO cluster`` reply (as redis-py parses it) is a cluster node's."""
    return str(info.get("cluster_enabled", "0")) == "1"
