"""What every example does after it enqueued: run a worker in this process until its jobs end.

An example runs by itself in seconds: ``python -m examples.email`` (memory://) or
``python -m examples.email --dsn redis://localhost:6379/0``. In production the worker is
its own process (``pqueue worker examples.email.tasks:router --dsn ...``); here it runs
next to the producer so the example can print the outcome and exit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from typing import Any

import pqueue

DEFAULT_DSN = "memory://examples"


def dsn_from_args(description: str, argv: Sequence[str] | None = None) -> str:
    """``--dsn`` or ``PQUEUE_DSN`` or memory://; a Postgres schema is created (migrated) if missing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dsn", default=os.environ.get("PQUEUE_DSN", DEFAULT_DSN), help="broker DSN")
    dsn: str = parser.parse_args(argv).dsn
    if dsn.startswith(("postgresql:", "postgres:")):
        from pqueue.brokers.postgres import migrate

        migrate(dsn)
    return dsn


async def run_until_final(
    dsn: str, router: pqueue.Router, job_ids: Sequence[str], *, timeout: float = 30.0, **worker: Any
) -> list[pqueue.Job]:
    """Serve ``router`` on ``dsn`` until every job of ``job_ids`` is completed, dead or cancelled.

    Returns the jobs as they ended; raises ``TimeoutError`` if they have not after ``timeout``.
    """
    settings: dict[str, Any] = {"queues": router.queues, "shutdown_timeout": 5.0, "log_jobs": False}
    settings.update(worker)
    running = pqueue.Worker(dsn, router, **settings)
    serving = asyncio.create_task(running.serve())
    try:
        async with pqueue.AsyncClient(dsn) as client, asyncio.timeout(timeout):
            while True:
                jobs = [await client.get_job(job_id) for job_id in job_ids]
                if all(job.status.is_final for job in jobs):
                    return jobs
                if serving.done():  # the worker failed to start: raise its error
                    serving.result()
                await asyncio.sleep(0.05)
    finally:
        running.stop()
        await serving
