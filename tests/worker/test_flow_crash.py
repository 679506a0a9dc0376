"""A chain of three survives a SIGKILL of the worker in its middle step (real processes).

Each step must run its handler to its end exactly once; the only step that may start
twice is the one the killed worker held (at-least-once for it, ADR 0115)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pqueue
from pqueue import AsyncClient, JobStatus, Task
from tests.conftest import only_backends
from tests.worker.conftest import eventually
from tests.worker.test_crash import ROOT, events


def start_worker(dsn: str, record: Path) -> subprocess.Popen[bytes]:
    flags = ["--queues", "default", "--concurrency", "2", "--lease", "1", "--log-level", "WARNING"]
    return subprocess.Popen(
        [sys.executable, "-m", "pqueue", "worker", "tests.worker.apps.flow_app:router", "--dsn", dsn, *flags],
        cwd=ROOT,
        env={**os.environ, "PQUEUE_TEST_RECORD": str(record)},
        stderr=subprocess.PIPE,
    )


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_a_chain_survives_a_worker_killed_in_its_middle_step(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    async with AsyncClient(backend_dsn) as client:
        flow = pqueue.chain(
            Task("flow:step", {"sleep": 0.05, "n": 1}),
            Task("flow:step", {"sleep": 3, "n": 10}),
            Task("flow:step", {"sleep": 0.05, "n": 100}),
        )
        first_id, middle, last = await flow.enqueue_async(client)
        first = start_worker(backend_dsn, record)
        try:
            await eventually(
                lambda: ("start", middle) in {(e, j) for e, j, _ in events(record)}, timeout=60, what="step 2"
            )
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        assert (await client.get_job(middle)).status is JobStatus.ACTIVE
        assert (await client.get_job(last)).status is JobStatus.WAITING
        second = start_worker(backend_dsn, record)
        try:
            assert await client.result(last, timeout=120) == 111
        finally:
            second.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(second.communicate, timeout=60)
        assert second.returncode == 0, err.decode()
        jobs = [await client.get_job(i) for i in (first_id, middle, last)]
    assert all(job.status is JobStatus.COMPLETED for job in jobs)
    starts = Counter(job for e, job, _ in events(record) if e == "start")
    ends = Counter(job for e, job, _ in events(record) if e == "end")
    assert ends == {first_id: 1, middle: 1, last: 1}  # each step ran to success once
    assert starts[first_id] == 1 and starts[last] == 1 and starts[middle] == 2  # only the killed one repeats
    assert jobs[1].recoveries == 1
