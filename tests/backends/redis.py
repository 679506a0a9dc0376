"""The Redis backend under test: one key prefix per test, on the service's database
(or cluster: tests/backends/redis_cluster.py shares these)."""

from __future__ import annotations

from pqueue.brokers import namespaces

NAME = "redis"
SERVICE = "redis"


def namespace_dsn(service_url: str | None, namespace: str) -> str:
    assert service_url is not None
    return namespaces.namespace(service_url, namespace).dsn


async def cleanup(service_url: str | None, namespace: str) -> None:
    """Delete this namespace's keys (SCAN MATCH <prefix>:* + UNLINK, on every master of a
    cluster) and nothing else."""
    assert service_url is not None
    await namespaces.namespace(service_url, namespace).drop()
