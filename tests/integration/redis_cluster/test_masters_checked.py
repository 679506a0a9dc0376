"""On a Redis Cluster every master is checked (ADR 0159): ``health`` fails naming the master
whose ``maxmemory-policy`` may evict jobs, ``open`` refuses ``wait_replicas`` above the
replicas of the master with the fewest, and a write that master's lost replica missed
raises :class:`NotReplicated` naming its job. On a private cluster: these change node
settings and kill a node, which the session's cluster must not see."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from redis import Redis

import pqueue
from pqueue.errors import ConfigError, NotReplicated, ServerConfigError
from tests.private_cluster import PrivateRedisCluster

pytestmark = [pytest.mark.slow, pytest.mark.redis_cluster]


def _node(port: int) -> Redis:
    return Redis(port=port, decode_responses=True)


async def test_every_master_is_checked(private_cluster: PrivateRedisCluster) -> None:
    dsn = private_cluster.url + "/?prefix=pqmasters"
    master = private_cluster.master_of("{q00}")
    with _node(master) as node:
        node.config_set("maxmemory-policy", "volatile-lru")
    async with pqueue.AsyncClient(dsn) as client:
        with pytest.raises(ServerConfigError) as evicting:
            await client.health()
        assert f"maxmemory-policy is not noeviction on master(s) 127.0.0.1:{master} (volatile-lru)" in str(
            evicting.value
        )
        with _node(master) as node:
            node.config_set("maxmemory-policy", "noeviction")
        assert await client.health()

    async with pqueue.AsyncClient(dsn + "&wait_replicas=1") as confirming:
        await confirming.health()  # opened while every master has its replica
        private_cluster.kill(private_cluster.replica_of(master))
        with _node(master) as node:
            deadline = time.monotonic() + 30
            while int(node.info("replication")["connected_slaves"]) > 0:
                assert time.monotonic() < deadline, "the master still counts its killed replica"
                await asyncio.sleep(0.05)
        job_id = str(uuid.uuid4())
        with pytest.raises(NotReplicated, match=f"written, not yet on 1 replica .*: job {job_id};"):
            await confirming.enqueue("t", 1, queue="q00", job_id=job_id)
        assert (await confirming.get_job(job_id)).queue == "q00"  # stored on its master
    with pytest.raises(ConfigError, match=f"master 127.0.0.1:{master} has 0 replicas connected"):
        async with pqueue.AsyncClient(dsn + "&wait_replicas=1") as refused:
            await refused.health()
