"""A router with limited tasks for tests that run ``pqueue worker`` as real processes.

Each handler appends ``<event> <job id> <limit key> <time.time()> <pid>`` lines to the file
named by ``PQUEUE_TEST_RECORD`` (one O_APPEND ``write`` per line: lines from several
processes never interleave). ``start`` is written as the handler begins (after the
claim), ``end`` as it returns (before the ack): each recorded run lies within the time
its job was active, so recorded overlaps never exceed real ones.
"""

from __future__ import annotations

import asyncio
import os
import time

from pqueue import Job, Router

router = Router()


def record(event: str, job: Job) -> None:
    line = f"{event} {job.id} {job.limit_key} {time.time():.6f} {os.getpid()}\n"
    fd = os.open(os.environ["PQUEUE_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@router.task("limits:tenant", concurrency=2, limit_key=lambda payload: payload["tenant"])
async def tenant(job: Job) -> None:
    record("start", job)
    if not job.recoveries:  # a run taken back from a killed worker comes back quick
        await asyncio.sleep(float(job.payload["sleep"]))
    record("end", job)


@router.task("limits:rated", rate="20/s")
async def rated(job: Job) -> None:
    record("start", job)
