"""The no-op handlers bench/worker.py drains (imported by ``pqueue worker bench.worker_app:router``)."""

from __future__ import annotations

from pqueue import Job, Router

router = Router()


@router.task("bench:noop", queue="bench")
async def noop(job: Job) -> None:
    """An async no-op: the cost of the queue and the worker, nothing else."""


@router.task("bench:noop-sync", queue="bench")
def noop_sync(job: Job) -> None:
    """A sync no-op: adds the hand-off to a handler thread and back."""
