"""A router for the workflow crash test: ``flow:step`` records ``start``/``end`` lines like
``crash:record`` (crash_app.py), sleeping ``payload["sleep"]`` seconds in between, and
returns its parent's result plus ``payload["n"]``."""

from __future__ import annotations

import asyncio
from typing import Any

from pqueue import Job, Router
from tests.worker.apps.crash_app import record

router = Router()


@router.task("flow:step")
async def step(job: Job) -> Any:
    record("start", job)
    await asyncio.sleep(float(job.payload["sleep"]))
    record("end", job)
    before = job.parent_result() if job.depends_on else 0
    return int(before) + int(job.payload["n"])
