"""A real Prometheus scrapes a worker: the counters arrive, and every dashboard panel and
alert rule in deploy/ evaluates on the data without error.

Needs Debian's ``prometheus`` package (see tests/metrics/conftest.py); the server runs on
a free loopback port with a temporary TSDB and a 1 s scrape interval, and is stopped at
the end. Bounded: every wait has a deadline.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

import pqueue
from pqueue import AsyncClient, Task
from pqueue.metrics import JobMetrics, MetricsServer
from tests.conftest import only_backends
from tests.metrics.app import QUEUE
from tests.metrics.app import router as app_router
from tests.metrics.conftest import require_binary
from tests.metrics.deploy_files import DEPLOY, dashboard_exprs, keda_query
from tests.metrics.procs import metrics_worker
from tests.metrics.scrape import fetch
from tests.ports import free_port
from tests.worker.conftest import eventually

pytestmark = pytest.mark.prometheus

RATE_INTERVAL = "30s"
"""What ``$__rate_interval`` stands for here: 30 one-second scrapes."""


@contextmanager
def prometheus_server(tmp: Path, targets: dict[str, int]) -> Iterator[str]:
    """Prometheus scraping ``{job: port}`` on loopback every second, with deploy/alerts.yml loaded."""
    binary = require_binary("prometheus")
    scrape = [
        {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        for job, port in targets.items()
    ]
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(DEPLOY / "alerts.yml")],
        "scrape_configs": scrape,
    }
    (tmp / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    command = [
        binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def query(base: str, expr: str) -> dict[str, Any]:
    status, body = fetch(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    answer: dict[str, Any] = json.loads(body)
    assert status == 200 and answer["status"] == "success", f"{expr}: {body}"
    return answer


def result(base: str, expr: str) -> list[dict[str, Any]]:
    return list(query(base, expr)["data"]["result"])


def scalar(base: str, expr: str) -> float:
    rows = result(base, expr)
    return float(rows[0]["value"][1]) if rows else 0.0


def _answers(url: str) -> bool:
    try:
        return fetch(url, timeout=1)[0] == 200
    except OSError:
        return False


@only_backends("redis", "redis_cluster")
async def test_prometheus_reads_the_counters_and_evaluates_every_panel_and_alert(
    backend_dsn: str, tmp_path: Path
) -> None:
    # A crashed worker's job, leased for 1 s and never settled: the worker recovers it.
    broker = pqueue.connect(backend_dsn)
    await broker.open()
    try:
        async with AsyncClient(backend_dsn) as plain:
            crashed = (await plain.enqueue("metrics:ok", queue=QUEUE)).id
        [lease] = await broker.claim([QUEUE], worker_id="gone", limit=1, lease_for=1)
        assert lease.job.id == crashed
    finally:
        await broker.close()

    registry = CollectorRegistry()  # the producer's metrics, served from this process
    producer = MetricsServer(registry, host="127.0.0.1", port=0, live=lambda: True, ready=lambda: True)
    metrics = JobMetrics(registry)
    metrics.declare(app_router)
    producer.start()
    worker_port = free_port()
    targets = {"pqueue-workers": worker_port, "pqueue-producers": producer.port}
    try:
        with metrics_worker(backend_dsn, worker_port), prometheus_server(tmp_path, targets) as prom:
            await eventually(lambda: _answers(f"{prom}/-/ready"), timeout=30, interval=0.1, what="prometheus")
            # The first scrapes see the declared series at 0, so the jobs below are increases.
            await eventually(
                lambda: scalar(prom, "sum(up)") == 2, timeout=30, interval=0.2, what="both targets scraped"
            )
            async with AsyncClient(backend_dsn, middleware=[metrics]) as client:
                await client.enqueue_many([Task("metrics:ok", i, queue=QUEUE) for i in range(20)])
                await client.enqueue_many([Task("metrics:nap", 0.2, queue=QUEUE) for _ in range(4)])
                for retries in (0, 0, 1, 1):
                    await client.enqueue("metrics:boom", queue=QUEUE, max_retries=retries)

            def succeeded() -> float:
                return scalar(prom, 'sum(pqueue_jobs_processed_total{outcome="succeeded"})')

            # 20 + 4 naps + the recovered job, read back through Prometheus's query API.
            await eventually(
                lambda: succeeded() == 25, timeout=60, interval=0.5, what="25 jobs in Prometheus"
            )
            # Each target is scraped on its own schedule: the producer's counter and the later
            # outcomes arrive with their target's next scrape, so wait for those too.
            for what, holds in (
                ("2 dead", lambda: scalar(prom, 'sum(pqueue_jobs_processed_total{outcome="dead"})') >= 2),
                ("1 recovered", lambda: scalar(prom, "sum(pqueue_jobs_recovered_total)") == 1),
                ("28 enqueued", lambda: scalar(prom, "sum(pqueue_jobs_enqueued_total)") == 28),
            ):
                await eventually(holds, timeout=30, interval=0.5, what=what)

            exprs = dashboard_exprs(RATE_INTERVAL)

            def empty_panels() -> list[str]:
                return [name for name, expr in exprs.items() if not result(prom, expr)]

            await eventually(lambda: not empty_panels(), timeout=30, interval=0.5, what="data in every panel")

            # KEDA's Prometheus trigger (deploy/k8s/keda): its query, on this run's queue, is
            # one number, the jobs pending or active, as the gauges say.
            keda = keda_query().replace('queue=~"critical|default|low"', f'queue=~"{QUEUE}"')
            [row] = result(prom, keda)
            wanting = (
                f'max(pqueue_queue_jobs{{queue="{QUEUE}",status="pending"}})'
                f' + max(pqueue_queue_jobs{{queue="{QUEUE}",status="active"}})'
            )
            assert float(row["value"][1]) == scalar(prom, wanting)

            alerts = {
                rule["name"]: rule
                for group in json.loads(fetch(f"{prom}/api/v1/rules")[1])["data"]["groups"]
                for rule in group["rules"]
            }
            assert len(alerts) == 6
            with_data = {name for name, rule in alerts.items() if result(prom, rule["query"])}
            # The run had dead jobs and a failure ratio over 10 %; everything else is healthy.
            assert with_data == {"PqueueDeadJobsRising", "PqueueFailureRatioHigh"}
            await eventually(
                lambda: all(rule.get("health") == "ok" for rule in _rules(prom)),
                timeout=10,
                what="rules evaluated",
            )
    finally:
        producer.stop()


def _rules(base: str) -> list[dict[str, Any]]:
    groups = json.loads(fetch(f"{base}/api/v1/rules")[1])["data"]["groups"]
    return [rule for group in groups for rule in group["rules"]]
