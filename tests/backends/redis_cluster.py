"""The Redis backend on a Redis Cluster (``redis+cluster://``): one key prefix per test.

The cluster is six private nodes the session starts (tests/private_cluster.py), or the
one ``PQUEUE_TEST_REDIS_CLUSTER_URL`` names. Cleanup scans every master.
"""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from pqueue.brokers.redis.config import RedisOptions
from tests.backends.redis import namespace_dsn

__all__ = ["NAME", "SERVICE", "cleanup", "namespace_dsn"]

NAME = "redis_cluster"
SERVICE = "redis_cluster"


async def cleanup(service_url: str | None, namespace: str) -> None:
    """Delete this namespace's keys on every master: SCAN MATCH <prefix>:* on each, then
    UNLINK them through the cluster client, which splits them by slot."""
    assert service_url is not None
    host, port = RedisOptions.parse(service_url, {}).nodes[0]
    client = RedisCluster(host=host, port=port)
    try:
        await client.initialize()
        for node in client.get_primaries():
            direct = Redis(host=node.host, port=node.port)
            try:
                keys = [key async for key in direct.scan_iter(match=f"{namespace}:*", count=1000)]
            finally:
                await direct.aclose()
            for start in range(0, len(keys), 1000):
                pipe = client.pipeline(transaction=False)
                for key in keys[start : start + 1000]:
                    pipe.execute_command("UNLINK", key)
                await pipe.execute()
    finally:
        await client.aclose()
