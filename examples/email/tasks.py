"""The handlers: a flaky mail provider that needs retries, and a charge that must happen once.

``OUTBOX`` and ``CHARGES`` stand for the outside world (a mail provider, a payment
provider). They live in this process, which is why the example runs its worker in-process.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pqueue

router = pqueue.Router()

OUTBOX: list[str] = []
"""Emails the provider accepted."""
CHARGES: Counter[str] = Counter()
"""Charges made, by order."""

FLAKY_TRIES = 2
"""The provider answers "try again later" to the first tries of every message."""


@router.task(
    "email:send",
    max_retries=5,
    retry=pqueue.ExponentialBackoff(base=0.1, max_delay=1.0),  # 0.1 s, 0.2 s, 0.4 s ... (jittered)
)
async def send_email(job: pqueue.Job) -> dict[str, object]:
    """Send one email; the provider's temporary errors raise, and the job is retried."""
    await asyncio.sleep(0.01)  # the provider's round trip
    if job.attempt <= FLAKY_TRIES:
        raise ConnectionError("smtp: 421 service not available, try again later")
    OUTBOX.append(f"{job.payload['to']}: {job.payload['subject']}")
    return {"to": job.payload["to"], "attempts": job.attempt}


@router.task("billing:charge", max_retries=3)
async def charge(job: pqueue.Job) -> dict[str, object]:
    """Charge an order. Enqueued with an idempotency key, it runs once however often it is sent."""
    await asyncio.sleep(0.01)
    CHARGES[job.payload["order"]] += 1
    return {"order": job.payload["order"], "cents": job.payload["cents"]}
