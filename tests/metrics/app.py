"""Job types for the metrics tests, run in-process and by ``pqueue worker`` processes.

``metrics:ok`` returns, ``metrics:boom`` raises (dead when it has no retries left),
``metrics:nap`` sleeps ``payload`` seconds (to hold a job in flight) and, when
``PQUEUE_TEST_RECORD`` names a file, appends its process id to it.
"""

from __future__ import annotations

import asyncio
import os

from pqueue import Job, Router

QUEUE = "metrics"

router = Router()


@router.task("metrics:ok", queue=QUEUE)
async def ok(job: Job) -> int:
    return 1


@router.task("metrics:boom", queue=QUEUE)
def boom(job: Job) -> None:
    raise RuntimeError("boom")


@router.task("metrics:nap", queue=QUEUE)
async def nap(job: Job) -> None:
    await asyncio.sleep(float(job.payload or 0))
    record = os.environ.get("PQUEUE_TEST_RECORD")
    if record:
        fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
