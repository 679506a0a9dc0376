"""Connecting to a Redis Cluster: the refusals, ``health``, and queues spread over every
master (issue 24 "Bad input", issue 29's ``health``). On the session's cluster."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("redis")

from redis.asyncio import Redis

import pqueue
from pqueue.brokers.redis.config import RedisOptions
from pqueue.errors import BrokerUnreachable, ConfigError
from pqueue.job import JobStatus
from tests.backends import redis_cluster
from tests.conftest import service_url
from tests.ports import free_port

pytestmark = pytest.mark.redis_cluster

QUEUES = [f"q{i:02d}" for i in range(12)]
"""Twelve queue names whose slots fall on all three masters."""


@pytest.fixture
def cluster_url() -> str:
    url = service_url("redis_cluster")
    assert url is not None
    return url


@pytest_asyncio.fixture
async def dsn(cluster_url: str) -> AsyncIterator[str]:
    prefix = f"pqc{uuid.uuid4().hex[:12]}"
    yield redis_cluster.namespace_dsn(cluster_url, prefix)
    await redis_cluster.cleanup(cluster_url, prefix)


def first_node(cluster_url: str) -> str:
    host, port = RedisOptions.parse(cluster_url, {}).nodes[0]
    return f"{host}:{port}"


def pqueue_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pqueue", *argv], capture_output=True, text=True, timeout=60, check=False
    )


async def test_a_plain_dsn_at_a_cluster_node_is_refused_naming_the_cluster_scheme(cluster_url: str) -> None:
    node = first_node(cluster_url)
    prefix = f"pqc{uuid.uuid4().hex[:12]}"
    client = pqueue.AsyncClient(f"redis://{node}/0?prefix={prefix}")
    with pytest.raises(ConfigError) as info:
        await client.enqueue_many([pqueue.Task("t", {"n": i}, queue=f"q{i % 12:02d}") for i in range(20)])
    message = str(info.value)
    assert "is a Redis Cluster node" in message and f"redis+cluster://{node}/" in message
    assert "\n" not in message and "MOVED" not in message
    await client.close()
    # nothing written on any node: the meta key of the prefix was never made
    assert await count_keys(cluster_url, prefix) == 0


def test_health_on_a_cluster_node_with_a_plain_dsn_fails_in_one_line(cluster_url: str) -> None:
    node = first_node(cluster_url)
    ran = pqueue_cli("health", "--dsn", f"redis://{node}/0")
    assert ran.returncode != 0 and "ok" not in ran.stdout.lower()
    assert "redis+cluster://" in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr


def test_health_on_the_cluster_dsn_checks_it(dsn: str) -> None:
    ran = pqueue_cli("health", "--dsn", dsn)
    assert ran.returncode == 0, ran.stderr
    assert "key layout" in ran.stdout


async def test_startup_nodes_all_unreachable_fail_in_one_line_naming_them() -> None:
    ports = [free_port(), free_port()]
    nodes = ",".join(f"127.0.0.1:{p}" for p in ports)
    client = pqueue.AsyncClient(f"redis+cluster://{nodes}/?retries=0")
    with pytest.raises(BrokerUnreachable) as info:
        await client.health()
    message = str(info.value)
    assert nodes in message and "\n" not in message, message
    await client.close()


async def test_a_cluster_dsn_at_one_server_is_refused() -> None:
    url = service_url("redis")
    assert url is not None
    host, port = RedisOptions.parse(url, {}).url.split("//")[1].split("/")[0].split(":")
    client = pqueue.AsyncClient(f"redis+cluster://{host}:{port}/?retries=0")
    with pytest.raises(BrokerUnreachable) as info:
        await client.health()
    assert "use redis:// for one server" in str(info.value)
    await client.close()


async def test_queues_on_every_master_are_enqueued_counted_and_listed(dsn: str, cluster_url: str) -> None:
    async with pqueue.AsyncClient(dsn) as client:
        results = await client.enqueue_many(
            [pqueue.Task("t", {"n": i}, queue=q) for q in QUEUES for i in range(5)]
        )
        assert all(r.created for r in results)
        stats = await client.stats()
        assert {q: stats.queues[q][JobStatus.PENDING] for q in QUEUES} == dict.fromkeys(QUEUES, 5)
        listed = await client.list_jobs(JobStatus.PENDING, limit=100)
        assert len(listed.jobs) == 60
    masters = await masters_holding(cluster_url, dsn)
    assert masters == 3


async def count_keys(cluster_url: str, prefix: str) -> int:
    total = 0
    for host, port in await master_addresses(cluster_url):
        direct = Redis(host=host, port=port)
        try:
            total += len([k async for k in direct.scan_iter(match=f"{prefix}:*")])
        finally:
            await direct.aclose()
    return total


async def masters_holding(cluster_url: str, dsn: str) -> int:
    prefix = RedisOptions.parse(dsn, {}).prefix
    holding = 0
    for host, port in await master_addresses(cluster_url):
        direct = Redis(host=host, port=port)
        try:
            holding += bool([k async for k in direct.scan_iter(match=f"{prefix}:{{q*")])
        finally:
            await direct.aclose()
    return holding


async def master_addresses(cluster_url: str) -> list[tuple[str, int]]:
    from redis.asyncio.cluster import RedisCluster

    host, port = RedisOptions.parse(cluster_url, {}).nodes[0]
    client = RedisCluster(host=host, port=port)
    try:
        await client.initialize()
        return [(n.host, n.port) for n in client.get_primaries()]
    finally:
        await client.aclose()


async def test_wait_replicas_confirms_enqueues_and_acks_by_a_replica(dsn: str) -> None:
    async with pqueue.AsyncClient(dsn + "&wait_replicas=1") as client:
        results = await client.enqueue_many([pqueue.Task("t", i, queue=q) for i, q in enumerate(QUEUES)])
        assert all(r.created for r in results)
        broker = client.broker
        leases = await broker.claim(QUEUES, worker_id="w", limit=100, lease_for=30)
        assert len(leases) == 12
        assert await broker.ack(leases) == [True] * 12


async def test_wait_replicas_beyond_the_replicas_of_a_master_is_refused_at_connect(dsn: str) -> None:
    with pytest.raises(ConfigError) as info:
        async with pqueue.AsyncClient(dsn + "&wait_replicas=2") as client:  # one replica per master
            await client.health()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("wait_replicas=2 but Redis Cluster at ")
    assert ": master 127.0.0.1:" in message and " has 1 replica connected: " in message


async def test_the_sync_client_with_wait_replicas_enqueues_through_the_confirming_broker(dsn: str) -> None:
    def body() -> list[bool]:
        with pqueue.Client(dsn + "&wait_replicas=1") as client:
            return [client.enqueue("t", i, queue=QUEUES[i]).created for i in range(3)]

    assert await asyncio.to_thread(body) == [True, True, True]


async def test_a_late_wake_up_does_not_end_a_wait_with_nothing_due(dsn: str) -> None:
    """The cluster bus forwards a wake-up asynchronously, so one published before a wait
    began can arrive during it: the wait looks again instead of reporting work."""
    async with pqueue.AsyncClient(dsn) as client:
        broker = client.broker
        assert not await broker.wait_for_jobs(["q00"], timeout=0.05)  # the hub listens now
        waiting = asyncio.create_task(broker.wait_for_jobs(["q00"], timeout=0.5))
        await asyncio.sleep(0.1)
        await broker.client.publish(broker.keys.wake_channel, "q00")  # a stale wake-up
        assert await waiting is False
