"""A Redis namespace: a key prefix (``?prefix=<name>``), dropped by ``SCAN MATCH
<name>:*`` and ``UNLINK`` on the server, or on every master of a cluster.

Every key pqueue writes under a prefix starts with ``<prefix>:`` (keys.py), so the scan
finds them all. Names have no ``:`` (namespaces.NAME_RE): ``<name>:*`` matches a longer
prefix ``<name>:<more>`` only, which no namespace can be.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from pqueue.brokers.namespaces import valid_name, with_parameter
from pqueue.brokers.redis import cluster
from pqueue.brokers.redis.config import RedisOptions
from pqueue.brokers.redis.core import RETRY_CAP

BATCH = 1000
"""Keys asked for per SCAN and removed per UNLINK round trip."""


@dataclass(frozen=True, slots=True)
class RedisNamespace:
    """The key prefix ``name`` on the server (or cluster) of a Redis DSN."""

    name: str
    dsn: str

    async def create(self) -> None:
        """Nothing to make: the first broker writes the prefix's keys."""

    async def drop(self) -> None:
        """Delete the prefix's keys (``SCAN MATCH <name>:*`` + ``UNLINK``), nothing else."""
        options = RedisOptions.parse(self.dsn, {})
        pattern = f"{self.name}:*"
        if options.cluster:
            await _drop_on_cluster(options, pattern)
            return
        client: Redis = Redis.from_url(options.url)
        try:
            batch: list[bytes] = []
            async for key in client.scan_iter(match=pattern, count=BATCH):
                batch.append(key)
                if len(batch) >= BATCH:
                    await client.unlink(*batch)
                    batch.clear()
            if batch:
                await client.unlink(*batch)
        finally:
            await client.aclose()


async def _drop_on_cluster(options: RedisOptions, pattern: str) -> None:
    """SCAN every master (redis-py's cluster SCAN visits each), then UNLINK the keys in
    pipelines, which the cluster client splits by slot."""
    client = cluster.async_client(options, {}, backoff_cap=RETRY_CAP)
    try:
        await client.initialize()
        keys = [key async for key in client.scan_iter(match=pattern, count=BATCH)]
        for start in range(0, len(keys), BATCH):
            pipe = client.pipeline(transaction=False)
            for key in keys[start : start + BATCH]:
                pipe.execute_command("UNLINK", key)
            await pipe.execute()
    finally:
        await client.aclose()


def namespace(dsn: str, name: str) -> RedisNamespace:
    """``dsn`` with ``?prefix=<name>`` in place of any prefix (the DSN is checked here)."""
    namespaced = with_parameter(dsn, "prefix", valid_name(name))
    RedisOptions.parse(namespaced, {})
    return RedisNamespace(name, namespaced)
