"""A router for the ``--autoscale`` tests: jobs that run until the test lets them finish.

``scale:hold`` (payload: a directory) appends ``start <job id> <pid>`` to the file named by
``PQUEUE_TEST_RECORD``, waits until ``<directory>/<job id>`` or ``<directory>/all`` exists
(at most 60 s), then appends ``end <job id> <pid>``. The test decides which process holds
jobs when the pool shrinks, without timing anything. ``scale:quick`` records, sleeps
``payload`` seconds (default 0.02) and records its end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pqueue import Job, Router
from tests.worker.apps.crash_app import record

router = Router()


@router.task("scale:hold")
async def hold(job: Job) -> None:
    record("start", job)
    gate = Path(str(job.payload))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while loop.time() < deadline:
        if (gate / job.id).exists() or (gate / "all").exists():
            break
        await asyncio.sleep(0.02)
    record("end", job)


@router.task("scale:quick")
async def quick(job: Job) -> None:
    record("start", job)
    await asyncio.sleep(float(job.payload or 0.02))
    record("end", job)
