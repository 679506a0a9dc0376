"""The router the worker processes of :mod:`pqueue.testing.faults.restarts` run.

``restart:work`` appends ``start <job id> <pid> <epoch seconds>`` to the file named by
``PQUEUE_TEST_RECORD`` (one O_APPEND write per line: several processes never interleave),
then sleeps ``payload`` seconds. The times let the scenario see when claims resumed.
"""

from __future__ import annotations

import asyncio
import os
import time

from pqueue import Job, Router

router = Router()


@router.task("restart:work", queue="restarts")
async def work(job: Job) -> None:
    fd = os.open(os.environ["PQUEUE_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"start {job.id} {os.getpid()} {time.time():.6f}\n".encode())
    finally:
        os.close(fd)
    await asyncio.sleep(float(job.payload))
