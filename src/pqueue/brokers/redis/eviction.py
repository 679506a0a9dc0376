"""``maxmemory-policy``: a Redis that may evict keys can delete jobs without a trace (ADR 0159).

Any policy but ``noeviction`` lets Redis delete keys when it reaches ``maxmemory``: a
job's hash, a queue's list, a unique key, a lease. ``noeviction`` refuses writes instead,
which pqueue reports as errors. The policy is read from ``INFO memory``
(``maxmemory_policy``), which answers where ``CONFIG`` is renamed or disabled (managed
Redis); on a cluster, from every master. A worker warns once per process and server when
it starts (:func:`warn_once`); ``check_health`` (``pqueue health``, the readiness
probes) fails (:func:`refuse`).
"""

from __future__ import annotations

import logging
import threading

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

from pqueue.errors import ServerConfigError

log = logging.getLogger("pqueue.redis")

SAFE = "noeviction"
"""The one ``maxmemory-policy`` under which Redis never deletes a key to make room."""

SETTING = "maxmemory-policy"

_warned: set[str] = set()
_warned_lock = threading.Lock()


async def unsafe_policies(client: Redis | RedisCluster) -> dict[str, str]:
    """``{master address: policy}`` of each master whose policy is not :data:`SAFE` (one
    server: the address is ``""``). A server that does not say (no such field, ``INFO``
    refused) counts as safe: there is nothing to tell the operator."""
    found: dict[str, str] = {}
    try:
        if isinstance(client, RedisCluster):
            for node in client.get_primaries():
                info = await client.info("memory", target_nodes=node)
                found[f"{node.host}:{node.port}"] = str(info.get("maxmemory_policy", SAFE))
        else:
            found[""] = str((await client.info("memory")).get("maxmemory_policy", SAFE))
    except ResponseError as exc:
        log.debug("cannot read %s (INFO memory refused: %s)", SETTING, exc)
        return {}
    return {address: policy for address, policy in found.items() if policy != SAFE}


def problem(server: str, unsafe: dict[str, str]) -> str:
    """The one line that says what is wrong and what to set (``unsafe`` is not empty)."""
    if list(unsafe) == [""]:
        where = f"{server} has {SETTING} {unsafe['']}"
    else:
        masters = ", ".join(f"{address} ({policy})" for address, policy in unsafe.items())
        where = f"{server}: {SETTING} is not {SAFE} on master(s) {masters}"
    return (
        f"{where}: Redis may delete jobs to free memory; set {SETTING} {SAFE} "
        f"(CONFIG SET {SETTING} {SAFE}, and in redis.conf or your provider's settings)"
    )


async def refuse(client: Redis | RedisCluster, server: str) -> None:
    """Raise :class:`~pqueue.errors.ServerConfigError` if any master may evict keys."""
    unsafe = await unsafe_policies(client)
    if unsafe:
        raise ServerConfigError(problem(server, unsafe), setting=SETTING, value=next(iter(unsafe.values())))


async def warn_once(client: Redis | RedisCluster, server: str) -> None:
    """Log one WARNING per process and server if any master may evict keys."""
    with _warned_lock:
        if server in _warned:
            return
    unsafe = await unsafe_policies(client)
    with _warned_lock:
        if server in _warned:
            return
        _warned.add(server)
    if unsafe:
        log.warning("%s", problem(server, unsafe))
