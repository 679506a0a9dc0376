"""The worker side: send the welcome email a signup enqueued."""

from __future__ import annotations

import asyncio

import pqueue

router = pqueue.Router()

SENT: list[str] = []
"""Welcome emails sent (stands for the mail provider)."""


@router.task("email:welcome", max_retries=5)
async def welcome(job: pqueue.Job) -> None:
    await asyncio.sleep(0.01)
    SENT.append(job.payload["email"])
