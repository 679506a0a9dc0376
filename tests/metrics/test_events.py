"""JobMetrics as a worker's and a client's middleware: every series moves as jobs flow."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from pqueue import AsyncClient, Job, Router
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.metrics import JobMetrics
from pqueue.metrics.labels import OTHER, BoundedValues
from tests.conftest import only_backends
from tests.metrics.app import QUEUE
from tests.metrics.app import router as app_router
from tests.metrics.scrape import Samples, parse, value
from tests.worker.conftest import MakeWorker, eventually, running


def samples(registry: CollectorRegistry) -> Samples:
    return parse(generate_latest(registry).decode())


def app_with(job_type: str, handler: Callable[[Job], Awaitable[None]]) -> Router:
    """The test app's router plus one more job type in its queue."""
    router = Router()
    router.include(app_router)
    router.task(job_type, queue=QUEUE)(handler)
    return router


@only_backends("memory", "redis")
async def test_counters_histograms_and_in_flight_move_as_jobs_flow(
    backend_dsn: str, clock: ManualClock, make_worker: MakeWorker
) -> None:
    registry = CollectorRegistry()
    metrics = JobMetrics(registry)
    hold = asyncio.Event()

    async def held(job: Job) -> None:
        await hold.wait()

    router = app_with("metrics:hold", held)

    async with AsyncClient(backend_dsn, clock=clock, middleware=[metrics], router=router) as client:
        for _ in range(3):
            await client.enqueue("metrics:ok")
        await client.enqueue("metrics:boom", max_retries=0)
        await client.enqueue("metrics:ok", unique_key="once", unique_for=60)
        await client.enqueue("metrics:ok", unique_key="once", unique_for=60)  # refused: not enqueued
        await client.enqueue("metrics:ok", idempotency_key="pay-1")
        await client.enqueue("metrics:ok", idempotency_key="pay-1")  # runs as a duplicate
        await client.enqueue("metrics:hold")
        s = samples(registry)
        assert value(s, "pqueue_jobs_enqueued_total", queue=QUEUE, type="metrics:ok") == 6
        assert value(s, "pqueue_jobs_enqueued_total", type="metrics:boom") == 1

        worker = make_worker(router, queues=[QUEUE], concurrency=1, middleware=[metrics])
        async with running(worker):
            await eventually(lambda: worker.counters.completed + worker.counters.duplicates == 6)
            await eventually(lambda: value(samples(registry), "pqueue_jobs_in_flight", queue=QUEUE) == 1)
            hold.set()
            await eventually(lambda: worker.counters.completed == 6)
        s = samples(registry)

    def processed(outcome: str, job_type: str = "metrics:ok") -> float:
        return value(s, "pqueue_jobs_processed_total", queue=QUEUE, type=job_type, outcome=outcome)

    assert processed("succeeded") == 5 and processed("succeeded", "metrics:hold") == 1
    assert processed("dead", "metrics:boom") == 1
    assert processed("duplicate") == 1
    assert value(s, "pqueue_job_run_seconds_count") == 7  # the duplicate did not run
    assert value(s, "pqueue_job_wait_seconds_count") == 7
    assert value(s, "pqueue_job_run_seconds_bucket", type="metrics:ok", le="+Inf") == 5
    assert value(s, "pqueue_jobs_in_flight", queue=QUEUE) == 0


@only_backends("memory", "redis")
async def test_retries_recoveries_and_drain_outcomes(
    backend_dsn: str, clock: ManualClock, make_worker: MakeWorker, broker: FullBroker
) -> None:
    registry = CollectorRegistry()
    metrics = JobMetrics(registry)
    started = asyncio.Event()

    async def stuck(job: Job) -> None:
        started.set()
        await asyncio.Event().wait()  # never returns: the drain cuts it short

    router = app_with("metrics:stuck", stuck)

    async with AsyncClient(backend_dsn, clock=clock, router=router) as client:
        crashed = (await client.enqueue("metrics:ok")).id
        # A worker that "crashes": it claims the job and never settles it.
        [lease] = await broker.claim([QUEUE], worker_id="gone", limit=1, lease_for=5)
        assert lease.job.id == crashed
        await client.enqueue("metrics:boom", max_retries=1)
        await client.enqueue("metrics:stuck")
        worker = make_worker(router, queues=[QUEUE], middleware=[metrics], shutdown_timeout=0.2)
        async with running(worker):
            await eventually(lambda: worker.counters.retried == 1)
            clock.advance(6)  # the crashed lease expires; the boom job's retry comes due
            await eventually(lambda: worker.counters.dead == 1 and worker.counters.completed == 1)
            await asyncio.wait_for(started.wait(), 10)
    s = samples(registry)
    assert value(s, "pqueue_jobs_recovered_total", queue=QUEUE) == 1
    assert value(s, "pqueue_jobs_processed_total", type="metrics:boom", outcome="failed") == 1
    assert value(s, "pqueue_jobs_processed_total", type="metrics:boom", outcome="dead") == 1
    assert value(s, "pqueue_jobs_processed_total", type="metrics:stuck", outcome="cancelled") == 1
    assert value(s, "pqueue_job_run_seconds_count", type="metrics:stuck") == 0
    assert value(s, "pqueue_jobs_in_flight") == 0


@only_backends("memory")
async def test_jobs_handed_back_unrun_count_as_released(
    backend_dsn: str, clock: ManualClock, make_worker: MakeWorker
) -> None:
    registry = CollectorRegistry()
    metrics = JobMetrics(registry)
    async with AsyncClient(backend_dsn, clock=clock) as client:
        await client.enqueue("metrics:unknown-here", queue=QUEUE)  # no handler: handed back for later
        worker = make_worker(app_router, queues=[QUEUE], middleware=[metrics])
        async with running(worker):
            await eventually(lambda: worker.counters.released == 1)
    s = samples(registry)
    assert value(s, "pqueue_jobs_processed_total", type="metrics:unknown-here", outcome="released") == 1
    assert value(s, "pqueue_job_run_seconds_count") == 0 and value(s, "pqueue_jobs_in_flight") == 0


def test_label_values_are_bounded() -> None:
    types = BoundedValues("type", limit=2)
    assert [types(t) for t in ("a", "b", "c", "a", "d")] == ["a", "b", OTHER, "a", OTHER]
    with pytest.raises(ValueError, match="limit"):
        BoundedValues("queue", limit=0)


def test_declare_creates_every_series_of_a_router_at_zero() -> None:
    registry = CollectorRegistry()
    JobMetrics(registry).declare(app_router)
    s = samples(registry)
    for job_type in ("metrics:ok", "metrics:boom", "metrics:nap"):
        for outcome in ("succeeded", "failed", "dead", "cancelled", "duplicate", "released"):
            key = frozenset({("queue", QUEUE), ("type", job_type), ("outcome", outcome)})
            assert s[("pqueue_jobs_processed_total", key)] == 0
    assert s[("pqueue_jobs_recovered_total", frozenset({("queue", QUEUE)}))] == 0
