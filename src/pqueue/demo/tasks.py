"""The demo's job types: fast and slow, sync and async, flaky, poisonous, delayed, unique, idempotent."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import Counter

from pqueue.errors import SkipRetry
from pqueue.job import Job
from pqueue.retry import ConstantBackoff, ExponentialBackoff
from pqueue.router import Router

QUEUES = {"demo.critical": 6, "demo.default": 3, "demo.low": 1}
"""The demo uses its own queues, so `--dsn` may point at a server that holds other work."""

router = Router()

charges: Counter[str] = Counter()
"""How many times each idempotency key's charge really ran (must end at 1 each)."""
_charges_lock = threading.Lock()


@router.task("demo:notify", queue="demo.critical")
async def notify(job: Job) -> None:
    """A push notification: a millisecond of I/O."""
    await asyncio.sleep(0.001)


@router.task("demo:thumbnail", queue="demo.default")
async def thumbnail(job: Job) -> dict[str, int]:
    """Resize an image: a few milliseconds of I/O."""
    await asyncio.sleep(job.payload["ms"] / 1000)
    return {"width": 128, "height": 128}


@router.task("demo:invoice", queue="demo.default")
def invoice(job: Job) -> str:
    """Render an invoice: a little CPU work in a sync handler (runs on a thread)."""
    digest = str(job.payload["order"]).encode()
    for _ in range(200):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()[:12]


@router.task(
    "demo:flaky-api",
    queue="demo.default",
    max_retries=4,
    retry=ExponentialBackoff(base=0.1, factor=2, jitter=False),
)
async def flaky_api(job: Job) -> str:
    """Call an upstream that fails the first ``failures`` times, then answers."""
    await asyncio.sleep(0.002)
    if job.attempt <= job.payload["failures"]:
        raise ConnectionError(f"upstream answered 503 (attempt {job.attempt})")
    return "200 OK"


@router.task("demo:poison", queue="demo.low", max_retries=2, retry=ConstantBackoff(0.1))
def poison(job: Job) -> None:
    """A record that can never be processed: retried, then dead-lettered (or at once)."""
    if job.payload.get("malformed"):
        raise SkipRetry("record is malformed: retrying cannot help")
    raise ValueError(f"cannot parse record {job.payload['record']}")


@router.task("demo:reminder", queue="demo.low")
async def reminder(job: Job) -> None:
    """A reminder enqueued with a delay."""


@router.task("demo:report", queue="demo.low")
async def report(job: Job) -> str:
    """A daily report enqueued with a unique key: duplicates are refused at enqueue."""
    await asyncio.sleep(0.01)
    return f"report for {job.payload['day']}"


@router.task("demo:charge", queue="demo.critical")
async def charge(job: Job) -> str:
    """Charge a card: guarded by an idempotency key, so it runs once per key."""
    await asyncio.sleep(0.05)
    assert job.idempotency_key is not None
    with _charges_lock:
        charges[job.idempotency_key] += 1
    return "charged"


@router.task("demo:export", queue="demo.low", timeout=0.2, max_retries=1, retry=ConstantBackoff(0.1))
async def export(job: Job) -> None:
    """An export that always runs past its 0.2 s timeout: cancelled, retried once, dead."""
    await asyncio.sleep(5)
