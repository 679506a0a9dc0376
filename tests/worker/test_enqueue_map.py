"""enqueue_map: one job of a type per payload, same options, one broker call, on every backend."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from pqueue import AsyncClient, Client, InvalidPayload, Job, JobStatus, Router
from pqueue.clock import ManualClock, to_datetime
from tests.worker.conftest import count_broker_enqueues


async def test_one_job_per_payload_with_the_same_options_in_one_call(
    client: AsyncClient, clock: ManualClock
) -> None:
    calls = count_broker_enqueues(client)
    payloads = [{"n": i} for i in range(300)]
    results = await client.enqueue_map(
        "fan:out", payloads, queue="low", delay=timedelta(seconds=30), max_retries=7, timeout=2.5,
        meta={"tenant": "acme"}, max_recoveries=1,
    )  # fmt: skip
    assert calls == [300] and all(r.created for r in results) and len({r.id for r in results}) == 300
    jobs = [await client.get_job(r.id) for r in (results[0], results[299])]
    assert [j.payload for j in jobs] == [{"n": 0}, {"n": 299}]
    for job in jobs:
        assert (job.type, job.queue, job.status, job.max_retries, job.timeout, job.max_recoveries) == (
            "fan:out", "low", JobStatus.SCHEDULED, 7, 2.5, 1,
        )  # fmt: skip
        assert (job.run_at, dict(job.meta)) == (to_datetime(clock.now() + 30), {"tenant": "acme"})


async def test_one_bad_payload_stores_nothing(client: AsyncClient) -> None:
    with pytest.raises(InvalidPayload):
        await client.enqueue_map("fan:out", [1, 2, {"not": {1, 2}}])
    assert (await client.stats()).totals[JobStatus.PENDING] == 0
    assert await client.enqueue_map("fan:out", []) == []


async def test_unique_for_derives_each_key_from_its_payload(client: AsyncClient) -> None:
    first = await client.enqueue_map("report", ["a", "b", "a"], unique_for=3600)
    assert [r.created for r in first] == [True, True, False] and first[2].id == first[0].id
    again = await client.enqueue_map("report", ["b", "c"], unique_for=3600)
    assert (again[0].id, again[0].created) == (first[1].id, False) and again[1].created


async def test_router_defaults_apply(backend_dsn: str, clock: ManualClock, client: AsyncClient) -> None:
    router = Router()

    @router.task("email:welcome", queue="critical", max_retries=1, timeout=5)
    async def welcome(job: Job) -> None: ...

    async with AsyncClient(backend_dsn, clock=clock, router=router) as routed:
        [by_name] = await routed.enqueue_map("email:welcome", [{"user": 1}])
        [overridden] = await routed.enqueue_map("email:welcome", [{"user": 2}], queue="low")
    job = await client.get_job(by_name.id)
    assert (job.queue, job.max_retries, job.timeout) == ("critical", 1, 5.0)
    assert (await client.get_job(overridden.id)).queue == "low"


async def test_the_sync_client_has_it_too(backend_dsn: str, clock: ManualClock, client: AsyncClient) -> None:
    def produce() -> list[str]:
        with Client(backend_dsn, clock=clock) as sync_client:
            return [r.id for r in sync_client.enqueue_map("sync:job", range(3), queue="low")]

    ids = await asyncio.to_thread(produce)
    assert [(await client.get_job(i)).payload for i in ids] == [0, 1, 2]
