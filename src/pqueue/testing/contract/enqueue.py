"""Enqueue, FIFO order, delays and run-at: what a stored job looks like and when it is due."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock, to_datetime
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import drain_ids, put, put_many, status_of, take, take_one


@pytest.mark.asyncio
class EnqueueContract:
    async def test_enqueued_job_is_stored_as_pending(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(
            broker,
            "email:welcome",
            {"to": "ada@example.com", "n": [1, 2.5, None, True]},
            queue="mail",
            max_retries=7,
            timeout=12.5,
            meta={"tenant": "acme"},
        )
        job = await broker.get_job(job_id)
        assert job.id == job_id
        assert (job.type, job.queue, job.status) == ("email:welcome", "mail", JobStatus.PENDING)
        assert job.payload == {"to": "ada@example.com", "n": [1, 2.5, None, True]}
        assert (job.attempt, job.recoveries, job.max_retries, job.max_recoveries) == (0, 0, 7, 5)
        assert job.timeout == 12.5
        assert dict(job.meta) == {"tenant": "acme"}
        assert abs((job.created_at - to_datetime(clock.now())).total_seconds()) < 0.002
        assert job.run_at <= job.created_at + timedelta(milliseconds=2)
        assert job.errors == () and job.last_error is None and job.result is None

    async def test_payloads_round_trip_exactly(self, broker: FullBroker) -> None:
        payloads: list[object] = [
            None,
            0,
            -7,
            3.25,
            "",
            "naïve ☃ 日本",
            [],
            {},
            {"a": {"b": [1, {"c": None}]}},
            True,
            2**53,
        ]
        ids = [await put(broker, payload=p) for p in payloads]
        assert [(await broker.get_job(i)).payload for i in ids] == payloads

    async def test_fifo_within_a_queue(self, broker: FullBroker) -> None:
        first = await put_many(broker, 5)
        second = await put_many(broker, 5, start=5)
        single = [await put(broker, payload=i) for i in range(10, 13)]
        assert await drain_ids(broker, batch=3) == first + second + single

    async def test_enqueue_many_returns_results_in_order(self, broker: FullBroker) -> None:
        specs = [build_spec("contract:job", i, queue=f"q{i % 3}") for i in range(30)]
        results = await broker.enqueue(specs)
        assert [r.id for r in results] == [s.id for s in specs]
        assert all(r.created for r in results)
        assert [(await broker.get_job(s.id)).payload for s in specs] == list(range(30))

    async def test_same_job_id_is_stored_once(self, broker: FullBroker) -> None:
        spec = build_spec("contract:job", {"k": 1})
        [first] = await broker.enqueue([spec])
        [again] = await broker.enqueue([spec])
        assert first.created and not again.created and again.id == spec.id
        assert len(await drain_ids(broker)) == 1

    async def test_delayed_job_is_due_exactly_at_run_at(self, broker: FullBroker, clock: ManualClock) -> None:
        job_id = await put(broker, delay=60)
        assert await status_of(broker, job_id) is JobStatus.SCHEDULED
        clock.advance(59.99)
        assert await take(broker) == []
        clock.advance(0.01)
        lease = await take_one(broker)
        assert lease.job.id == job_id and lease.job.attempt == 1

    async def test_run_at_in_the_future_and_in_the_past(self, broker: FullBroker, clock: ManualClock) -> None:
        later = await put(broker, run_at=to_datetime(clock.now() + 3600))
        past = await put(broker, run_at=to_datetime(clock.now() - 3600))
        assert await status_of(broker, later) is JobStatus.SCHEDULED
        assert await status_of(broker, past) is JobStatus.PENDING
        assert await drain_ids(broker) == [past]
        clock.advance(3600)
        assert await drain_ids(broker) == [later]

    async def test_due_jobs_come_by_run_at_then_enqueue_order(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        c = await put(broker, payload="c", delay=30)
        a = await put(broker, payload="a", delay=10)
        b = await put(broker, payload="b", delay=20)
        b2 = await put(broker, payload="b2", delay=20)
        clock.advance(25)
        late = await put(broker, payload="late")  # run_at 25: after a, b, b2 (due earlier), before c
        clock.advance(10)
        assert await drain_ids(broker, batch=2) == [a, b, b2, late, c]

    async def test_scheduled_job_becomes_pending_once_due(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        job_id = await put(broker, delay=5)
        clock.advance(5)
        await broker.promote()
        assert await status_of(broker, job_id) is JobStatus.PENDING

    async def test_list_queues_names_every_queue_used(self, broker: FullBroker) -> None:
        for queue in ("beta", "alpha", "beta", "gamma.v2"):
            await put(broker, queue=queue)
        assert await broker.list_queues() == ["alpha", "beta", "gamma.v2"]
