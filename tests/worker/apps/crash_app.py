"""A router for tests that run ``pqueue worker`` as a real process.

``crash:record`` appends ``start <job id> <pid>`` and ``end <job id> <pid>`` lines to the
file named by ``PQUEUE_TEST_RECORD`` (one ``write`` per line with O_APPEND, so lines from
several processes never interleave), sleeping ``payload`` seconds in between.
"""

from __future__ import annotations

import asyncio
import os

from pqueue import Job, Router

router = Router()


def record(event: str, job: Job) -> None:
    fd = os.open(os.environ["PQUEUE_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{event} {job.id} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


@router.task("crash:record")
async def crash_record(job: Job) -> None:
    record("start", job)
    await asyncio.sleep(float(job.payload))
    record("end", job)
