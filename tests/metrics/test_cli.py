"""``pqueue worker --metrics-port`` as users run it: one process, and a pool behind one port."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pqueue import AsyncClient, Task
from tests.conftest import only_backends
from tests.metrics.app import QUEUE
from tests.metrics.procs import metrics_worker
from tests.metrics.scrape import fetch, scrape, value
from tests.ports import free_port
from tests.worker.conftest import eventually


def _up(port: int) -> bool:
    try:
        return fetch(f"http://127.0.0.1:{port}/healthz", timeout=1)[0] == 200
    except OSError:
        return False


@only_backends("redis", "redis_cluster")
async def test_worker_process_serves_metrics_and_probes(backend_dsn: str) -> None:
    port = free_port()
    with metrics_worker(backend_dsn, port) as proc:
        await eventually(lambda: proc.poll() is not None or _up(port), timeout=60, what="the metrics port")
        assert proc.poll() is None
        assert fetch(f"http://127.0.0.1:{port}/readyz") == (200, "ok\n")
        async with AsyncClient(backend_dsn) as client:
            await client.enqueue_many([Task("metrics:ok", i, queue=QUEUE) for i in range(5)])
            await client.enqueue("metrics:boom", queue=QUEUE, max_retries=0)

        def done() -> bool:
            s = scrape(port)
            return value(s, "pqueue_jobs_processed_total", queue=QUEUE) == 6

        await eventually(done, timeout=60, interval=0.1, what="6 jobs counted")
        s = scrape(port)
    assert value(s, "pqueue_jobs_processed_total", type="metrics:ok", outcome="succeeded") == 5
    assert value(s, "pqueue_jobs_processed_total", type="metrics:boom", outcome="dead") == 1
    assert value(s, "pqueue_job_run_seconds_count", queue=QUEUE) == 6
    assert value(s, "pqueue_job_wait_seconds_count", queue=QUEUE) == 6
    assert value(s, "pqueue_queue_jobs", queue=QUEUE, status="completed") == 5
    assert value(s, "pqueue_queue_jobs", queue=QUEUE, status="dead") == 1
    assert value(s, "pqueue_workers") == 1


@only_backends("redis", "redis_cluster")
async def test_a_pool_of_two_processes_is_counted_on_one_port(backend_dsn: str) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "pids"
        with metrics_worker(
            backend_dsn, port, "--processes", "2", "--concurrency", "1", "--prefetch", "0", record=record
        ) as proc:
            await eventually(
                lambda: proc.poll() is not None or _up(port), timeout=60, what="the metrics port"
            )
            assert proc.poll() is None
            await eventually(lambda: value(scrape(port), "pqueue_workers") == 2, timeout=60, interval=0.1)
            async with AsyncClient(backend_dsn) as client:
                await client.enqueue_many([Task("metrics:nap", 0.1, queue=QUEUE) for _ in range(12)])

            def counted() -> bool:
                return value(scrape(port), "pqueue_jobs_processed_total", outcome="succeeded") == 12

            await eventually(counted, timeout=60, interval=0.1, what="12 jobs counted")
            s = scrape(port)
            assert fetch(f"http://127.0.0.1:{port}/readyz")[0] == 200
        pids = record.read_text().split()
    assert len(pids) == 12 and len(set(pids)) == 2  # both processes ran jobs, one port counted them all
    assert value(s, "pqueue_job_run_seconds_count", type="metrics:nap") == 12
    assert value(s, "pqueue_jobs_in_flight", queue=QUEUE) == 0
    assert value(s, "pqueue_worker_processes") == 2  # the pool's own size (docs/scaling.md)
    assert not [name for name, _ in s if name.startswith("pqueue_autoscale")]  # a fixed pool: no events
