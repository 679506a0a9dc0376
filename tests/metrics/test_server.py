"""The broker collector (one stats read per scrape) and the HTTP server (metrics, probes, token)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from pqueue.broker import WorkerInfo
from pqueue.client import Stats
from pqueue.job import JobStatus
from pqueue.metrics import MetricsServer, QueueCollector
from tests.metrics.scrape import fetch, parse, value


class FakeStats:
    def __init__(self) -> None:
        self.calls = 0
        self.down = False

    def __call__(self) -> Stats:
        self.calls += 1
        if self.down:
            raise ConnectionError("broker down")
        worker = WorkerInfo(id="w1", host="h", pid=1, queues=("a",), concurrency=1, started_at=0.0)
        queues = {"a": {JobStatus.PENDING: 4, JobStatus.DEAD: 1}, "b": {JobStatus.COMPLETED: 2}}
        return Stats(queues, [worker, worker], oldest_pending_age={"a": 12.5})


def test_collector_reads_stats_once_per_scrape_and_not_on_register() -> None:
    stats = FakeStats()
    registry = CollectorRegistry()
    registry.register(QueueCollector(stats))
    assert stats.calls == 0
    samples = parse(generate_latest(registry).decode())
    assert stats.calls == 1
    assert value(samples, "pqueue_queue_jobs", queue="a", status="pending") == 4
    assert value(samples, "pqueue_queue_jobs", queue="a", status="dead") == 1
    assert ("pqueue_queue_jobs", frozenset({("queue", "a"), ("status", "active")})) in samples  # zeros too
    assert value(samples, "pqueue_workers") == 2
    assert value(samples, "pqueue_queue_oldest_pending_seconds", queue="a") == 12.5
    assert ("pqueue_queue_oldest_pending_seconds", frozenset({("queue", "b")})) in samples  # 0: none waits


def test_collector_leaves_its_gauges_out_while_the_broker_is_down() -> None:
    stats = FakeStats()
    registry = CollectorRegistry()
    registry.register(QueueCollector(stats))
    stats.down = True
    text = generate_latest(registry).decode()
    assert "pqueue_queue_jobs{" not in text and "pqueue_workers " not in text
    stats.down = False
    assert "pqueue_workers 2.0" in generate_latest(registry).decode()


@pytest.fixture
def server() -> Iterator[tuple[MetricsServer, dict[str, bool]]]:
    registry = CollectorRegistry()
    Counter("pqueue_test_things_total", "things", registry=registry).inc(3)
    state = {"live": True, "ready": True}

    def ready() -> bool:
        if not state["ready"]:
            raise ConnectionError("no broker")
        return True

    srv = MetricsServer(
        registry, host="127.0.0.1", port=0, live=lambda: state["live"], ready=ready, token="s3cret"
    )
    srv.start()
    yield srv, state
    srv.stop()


def test_probes_answer_200_or_503(server: tuple[MetricsServer, dict[str, bool]]) -> None:
    srv, state = server
    base = f"http://127.0.0.1:{srv.port}"
    assert fetch(base + "/healthz") == (200, "ok\n")
    assert fetch(base + "/readyz") == (200, "ok\n")
    state["ready"] = False  # the broker is down: not ready, but alive (no restart)
    assert fetch(base + "/readyz")[0] == 503 and fetch(base + "/healthz")[0] == 200
    state["live"] = False
    assert fetch(base + "/healthz")[0] == 503
    assert fetch(base + "/nothing")[0] == 404


def test_metrics_need_the_token_when_one_is_set(server: tuple[MetricsServer, dict[str, bool]]) -> None:
    srv, _ = server
    url = f"http://127.0.0.1:{srv.port}/metrics"
    assert fetch(url)[0] == 401
    for header in ("Bearer wrong", "Basic s3cret", "Bearer s3cret-and-more"):
        request = urllib.request.Request(url, headers={"Authorization": header})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 401
    request = urllib.request.Request(url, headers={"Authorization": "Bearer s3cret"})
    with urllib.request.urlopen(request, timeout=5) as reply:
        assert value(parse(reply.read().decode()), "pqueue_test_things_total") == 3
    post = urllib.request.Request(url, data=b"", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(post, timeout=5)
    assert refused.value.code == 405
