"""A tiny app for the deploy stack: a few job types, and a producer that keeps them coming.

Workers run ``pqueue worker shopapp:router``; the producer runs ``python -m shopapp`` and
serves its own ``pqueue_jobs_enqueued_total`` on port 9101 (a producer's metrics live in
the producer's process). Jobs: quick e-mails, slower thumbnails, a flaky payment call that
fails one time in five (retried), and a poison job now and then (dead-lettered), so every
dashboard panel and alert has something to show.
"""

from __future__ import annotations

import asyncio
import os
import random

from pqueue import AsyncClient, Job, Router

router = Router()


@router.task("shop:email", queue="default")
async def email(job: Job) -> None:
    await asyncio.sleep(random.uniform(0.001, 0.01))


@router.task("shop:thumbnail", queue="default")
async def thumbnail(job: Job) -> None:
    await asyncio.sleep(random.uniform(0.05, 0.5))


@router.task("shop:payment", queue="critical", max_retries=3)
async def payment(job: Job) -> None:
    await asyncio.sleep(random.uniform(0.01, 0.1))
    if random.random() < 0.2:
        raise ConnectionError("payment provider timed out")


@router.task("shop:import", queue="low", max_retries=0)
def bad_import(job: Job) -> None:
    raise ValueError("row 17: not a number")


async def produce(dsn: str, per_second: float) -> None:
    """Enqueue a mix of jobs for ever, exporting the producer's metrics on :9101."""
    from prometheus_client import start_http_server

    from pqueue.metrics import JobMetrics

    start_http_server(int(os.environ.get("PRODUCER_METRICS_PORT", "9101")))
    kinds = ["shop:email"] * 6 + ["shop:thumbnail"] * 2 + ["shop:payment"] * 2
    async with AsyncClient(dsn, router=router, middleware=[JobMetrics()]) as client:
        while True:
            kind = "shop:import" if random.random() < 0.01 else random.choice(kinds)
            await client.enqueue(kind, {"n": random.randint(1, 1000)})
            await asyncio.sleep(random.expovariate(per_second))


if __name__ == "__main__":
    asyncio.run(produce(os.environ["PQUEUE_DSN"], float(os.environ.get("JOBS_PER_SECOND", "20"))))
