"""What the Postgres and Redis hub tests ask of a broker's notification hub (ADR 0134):
every part that waits registers its channel on one connection, and each channel delivers
a push, before and after that connection is killed. Waits are 30 s, so only a push (not
a timeout) ends them within the 10 s each check allows."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pqueue.broker import FullBroker
from pqueue.job import JobStatus
from pqueue.spec import build_spec

HEALTH_LOG = "pqueue.broker"


async def listen_on_every_channel(broker: FullBroker) -> None:
    """Register wake-ups and hand-offs, cancels and result waiters (each starts the hub)."""
    assert await broker.wait_for_cancels(0.05) == []
    assert await broker.wait_for_jobs(["hub-idle"], timeout=0.05) is False
    [job] = await broker.enqueue([build_spec("hub:never", queue="hub-idle-results")])
    assert await broker.wait_finished(job.id, 0.05) is None


async def every_channel_delivers(broker: FullBroker, producer: FullBroker, tag: str) -> None:
    """A wake-up, a finished job and a cancel each reach ``broker`` through its hub (on
    queues named for ``tag``, so each round starts empty)."""
    waiter = asyncio.create_task(broker.wait_for_jobs([f"hub-wake-{tag}"], timeout=30))
    await asyncio.sleep(0.2)
    assert not waiter.done(), waiter.result()
    await producer.enqueue([build_spec("hub:job", queue=f"hub-wake-{tag}")])
    assert await asyncio.wait_for(waiter, 10) is True

    [job] = await producer.enqueue([build_spec("hub:job", queue=f"hub-results-{tag}")])
    finished = asyncio.create_task(broker.wait_finished(job.id, 30))
    await asyncio.sleep(0.2)
    assert not finished.done()
    [lease] = await producer.claim([f"hub-results-{tag}"], worker_id="hub", limit=1, lease_for=30)
    assert await producer.ack([lease]) == [True]
    done = await asyncio.wait_for(finished, 10)
    assert done is not None and done.status is JobStatus.COMPLETED

    [job] = await producer.enqueue([build_spec("hub:job", queue=f"hub-cancels-{tag}")])
    await producer.claim([f"hub-cancels-{tag}"], worker_id="hub", limit=1, lease_for=30)
    assert await producer.cancel_active(job.id) is True
    heard: list[str] = []
    async with asyncio.timeout(10):
        while job.id not in heard:
            heard += await broker.wait_for_cancels(30)
    assert heard == [job.id]


async def heard_again(broker: FullBroker) -> None:
    """Wait until the hub listens again and the wake-ups it gives after a reconnect (every
    waiter looks again, by design) are behind us: a short wait then ends without one."""
    async with asyncio.timeout(10):
        while await broker.wait_for_jobs(["hub-quiet"], timeout=0.3):
            pass


def outage_lines(caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[str]]:
    """(WARNING lines of a lost server, INFO lines of its return) the server's health logged."""
    records = [r for r in caplog.records if r.name == HEALTH_LOG]
    lost = [r.getMessage() for r in records if r.levelno == logging.WARNING and "lost" in r.getMessage()]
    back = [r.getMessage() for r in records if r.levelno == logging.INFO and "is back" in r.getMessage()]
    return lost, back
