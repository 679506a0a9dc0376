"""``pqueue serve`` as a real process on a ``redis+cluster://`` DSN (issue 24): the
dashboard's JSON (``/stats``, ``/jobs``, ``/workers``), ``/readyz`` and ``/metrics``
answer for queues whose slots sit on different masters.

The in-process API tests (tests/web, parametrised over every backend) cover the routes'
shapes on a cluster; this one covers the command: its DSN parsing, its own cluster
client, and the scans that must reach every master.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import httpx
import pytest

import pqueue
from pqueue.task import Task
from tests.backends import redis_cluster
from tests.conftest import service_url
from tests.web.browser import serving

pytestmark = pytest.mark.redis_cluster

TOKEN = "cluster-admin-token-" + "x" * 24
QUEUES = [f"q{i:02d}" for i in range(6)]
"""Six queues: their hash tags spread over the three masters."""


@pytest.fixture
def dsn() -> Iterator[str]:
    url = service_url("redis_cluster")
    prefix = f"pqsrv{uuid.uuid4().hex[:10]}"
    yield redis_cluster.namespace_dsn(url, prefix)
    asyncio.run(redis_cluster.cleanup(url, prefix))


async def _seed(dsn: str) -> None:
    async with pqueue.AsyncClient(dsn) as client:
        for i, queue in enumerate(QUEUES):
            await client.enqueue_many([Task("serve:job", n, queue=queue) for n in range(i + 1)])


def test_serve_on_a_cluster_dsn_answers_the_dashboard_and_metrics(dsn: str) -> None:
    asyncio.run(_seed(dsn))
    env = {"PQUEUE_API_TOKEN": TOKEN, "PQUEUE_LOG_LEVEL": "WARNING"}
    with serving(dsn, env) as url, httpx.Client(base_url=url, timeout=10) as http:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        ready = http.get("readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ok"

        stats = http.get("stats", headers=auth)
        assert stats.status_code == 200, stats.text
        pending = {name: counts.get("pending", 0) for name, counts in stats.json()["queues"].items()}
        assert pending == {queue: i + 1 for i, queue in enumerate(QUEUES)}

        page = http.get("jobs", params={"status": "pending", "queue": QUEUES[-1]}, headers=auth).json()
        assert [job["payload"] for job in page["jobs"]] == list(range(len(QUEUES)))
        assert http.get("workers", headers=auth).json()["workers"] == []
        listed = http.get("queues", headers=auth).json()["queues"]
        queues = {q["name"]: q["jobs"].get("pending", 0) for q in listed}
        assert queues == pending

        metrics = http.get("metrics", headers=auth)
        assert metrics.status_code == 200
        for i, queue in enumerate(QUEUES):
            line = f'pqueue_queue_jobs{{queue="{queue}",status="pending"}} {float(i + 1)}'
            assert line in metrics.text, f"{queue} missing from /metrics"
        assert http.get("stats").status_code == 401
