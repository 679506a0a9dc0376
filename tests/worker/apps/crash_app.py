"""A router for tests that run ``pqueue worker`` as a real process.

``crash:record`` appends ``start <job id> <pid>`` and ``end <job id> <pid>`` lines to the
file named by ``PQUEUE_TEST_RECORD`` (one ``write`` per line with O_APPEND, so lines from
several processes never interleave), sleeping ``payload`` seconds in between.
``crash:until_shared`` records its start, then waits until jobs have started in two
processes (at most ``payload`` seconds) before it records its end.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pqueue import Job, Router
from tests.records import record_lines

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


@router.task("crash:until_shared")
async def until_shared(job: Job) -> None:
    """Holds its slot until another process has started a job too, so that one process
    cannot run the whole queue before the other claims (however slow its start)."""
    record("start", job)
    path, loop = Path(os.environ["PQUEUE_TEST_RECORD"]), asyncio.get_running_loop()
    deadline = loop.time() + float(job.payload)
    while loop.time() < deadline:
        if len({fields[2] for fields in record_lines(path) if fields[0] == "start"}) >= 2:
            break
        await asyncio.sleep(0.02)
    record("end", job)
