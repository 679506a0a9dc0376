"""``pqueue export`` on a Redis Cluster: finished jobs of queues on every master reach the
Parquet files (pyarrow only; in the spark step, where pyarrow is installed)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

import pyarrow.parquet as pq

import pqueue
from pqueue.cli import main
from tests.backends import redis_cluster
from tests.conftest import service_url

pytestmark = [pytest.mark.spark, pytest.mark.redis_cluster]

QUEUES = [f"q{i:02d}" for i in range(12)]


@pytest.fixture
def dsn() -> Iterator[str]:
    url = service_url("redis_cluster")
    assert url is not None
    prefix = f"pqx{uuid.uuid4().hex[:12]}"
    yield redis_cluster.namespace_dsn(url, prefix)
    asyncio.run(redis_cluster.cleanup(url, prefix))


def test_export_reads_finished_jobs_from_every_master(dsn: str, tmp_path: Path) -> None:
    async def finish_some() -> None:
        async with pqueue.AsyncClient(dsn) as client:
            await client.enqueue_many([pqueue.Task("t", i, queue=q) for i, q in enumerate(QUEUES)])
            broker = client.broker
            leases = await broker.claim(QUEUES, worker_id="w", limit=100, lease_for=60)
            assert await broker.ack(leases) == [True] * len(QUEUES)

    asyncio.run(finish_some())
    assert main(["export", "--out", str(tmp_path), "--dsn", dsn]) == 0
    rows = pq.read_table(tmp_path).to_pylist()
    assert sorted(r["queue"] for r in rows) == QUEUES
    assert {r["status"] for r in rows} == {"completed"}
