"""The race of the issue: 3 workers x 2 minutes of a ``* * * * *`` schedule make exactly one
job per minute, on every backend at once (3 processes each on Redis and Postgres, 3 Worker
instances in this process on memory, which reaches no other process).

It takes 1.5 to 2.5 minutes of real time, so it is marked ``races`` and runs in its own CI
step: ``python -m pytest -q -m races tests/worker/test_periodic_race.py``.
"""

from __future__ import annotations

import asyncio
import math
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from pqueue import AsyncClient, JobStatus, Worker
from pqueue.worker.schedules import META_SCHEDULE, META_TICK
from tests.backends import available
from tests.conftest import service_url
from tests.worker.apps.periodic_app import router

pytestmark = pytest.mark.races

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.worker.apps.periodic_app:router"
WORKERS = 3
SETTLE = 8.0
"""Seconds after the last tick before the workers stop (its job is enqueued and run by then)."""


def _spawn(dsn: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "pqueue", "worker", APP, "--dsn", dsn, "--queues", "periodic"]
    return subprocess.Popen(
        [*argv, "--concurrency", "2", "--log-level", "WARNING"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _memory_workers(dsn: str, until: float) -> threading.Thread:
    async def main() -> None:
        workers = [
            Worker(dsn, router, queues=["periodic"], concurrency=2, log_jobs=False) for _ in range(WORKERS)
        ]
        tasks = [asyncio.create_task(w.serve()) for w in workers]
        await asyncio.sleep(max(0.0, until - time.time()))
        for w in workers:
            w.stop()
        await asyncio.gather(*tasks)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    return thread


async def _ticks(dsn: str) -> Counter[str]:
    async with AsyncClient(dsn) as client:
        seen: Counter[str] = Counter()
        for status in JobStatus:
            page = await client.list_jobs(status, queue="periodic", limit=500)
            seen.update(j.meta[META_TICK] for j in page.jobs if j.meta.get(META_SCHEDULE) == "race:minutely")
        return seen


def test_three_workers_per_backend_enqueue_each_minute_once() -> None:
    backends = available()
    namespace = f"pqt{uuid.uuid4().hex[:12]}"
    dsns = {
        name: str(mod.namespace_dsn(service_url(mod.SERVICE), namespace)) for name, mod in backends.items()
    }
    dsns["memory"] = f"memory://race-{namespace}"
    start = time.time()
    first = math.ceil((start + 10) / 60) * 60  # at least 10 s for every worker to be up
    ticks = [first, first + 60]
    until = ticks[-1] + SETTLE
    procs = [_spawn(dsn) for name, dsn in dsns.items() if name != "memory" for _ in range(WORKERS)]
    memory = _memory_workers(dsns["memory"], until)
    try:
        time.sleep(max(0.0, until - time.time()))
        assert all(p.poll() is None for p in procs), "a worker process died"
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(30)
        memory.join(60)
    try:
        from pqueue.clock import to_iso

        found = {name: asyncio.run(_ticks(dsn)) for name, dsn in dsns.items()}
        # A tick in the first seconds, while the workers were starting, may be caught by
        # some of them (then once, like any other) or by none: only the later ones must be.
        early = [to_iso(float(t)) for t in range(first - 60, math.floor(start), -60)][:1]
        for name, seen in found.items():
            assert set(seen) - set(early) == {to_iso(float(t)) for t in ticks}, name
            assert set(seen.values()) == {1}, (name, seen)  # exactly one job per tick
    finally:
        for mod in backends.values():
            if mod.SERVICE is not None:
                asyncio.run(mod.cleanup(service_url(mod.SERVICE), namespace))
