"""Handlers the bench scripts run (``pqueue worker bench.worker_app:router``).

``bench:noop`` / ``bench:noop-sync`` (bench/worker.py) do nothing: the cost of the queue
and the worker. ``bench:work`` (bench/reliability.py) and ``bench:pickup``
(bench/latency.py) append a line per event to the file named by ``PQUEUE_BENCH_RUNLOG``
with O_APPEND, so several worker processes never interleave within a line.
"""

from __future__ import annotations

import asyncio
import os
import time

from pqueue import Job, Router

router = Router()


def note(*fields: object) -> None:
    """Append one line to the run log."""
    line = (" ".join(str(f) for f in fields) + "\n").encode()
    fd = os.open(os.environ["PQUEUE_BENCH_RUNLOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@router.task("bench:noop", queue="bench")
async def noop(job: Job) -> None:
    """An async no-op: the cost of the queue and the worker, nothing else."""


@router.task("bench:noop-sync", queue="bench")
def noop_sync(job: Job) -> None:
    """A sync no-op: adds the hand-off to a handler thread and back."""


@router.task("bench:work", queue="reliability", max_retries=0)
async def work(job: Job) -> None:
    """Pretend to work for ``payload["seconds"]``; a SIGKILL may land in the middle."""
    note("start", job.id, os.getpid())
    await asyncio.sleep(float(job.payload["seconds"]))
    note("end", job.id, os.getpid())


@router.task("bench:pickup", queue="latency", max_retries=0)
async def pickup(job: Job) -> None:
    """Record how long after its enqueue (host time in the payload) the handler started."""
    note("pickup", time.time() - float(job.payload))
