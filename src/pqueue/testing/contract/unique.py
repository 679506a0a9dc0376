"""Unique enqueue: one job per key inside the key's TTL, race-free between producers."""

from __future__ import annotations

import asyncio

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import OpenAnother, boom, drain_ids, put, take_one


@pytest.mark.asyncio
class UniqueContract:
    async def test_duplicate_inside_ttl_is_refused_with_existing_id(self, broker: FullBroker) -> None:
        first = await put(broker, payload={"user": 1}, unique_key="welcome:1", unique_for=3600)
        [again] = await broker.enqueue(
            [build_spec("contract:job", {"user": 1}, unique_key="welcome:1", unique_for=3600)]
        )
        assert not again.created and again.id == first
        assert await drain_ids(broker) == [first]

    async def test_key_is_free_again_after_its_ttl(self, broker: FullBroker, clock: ManualClock) -> None:
        first = await put(broker, unique_key="k", unique_for=60)
        clock.advance(59)
        [refused] = await broker.enqueue([build_spec("contract:job", unique_key="k", unique_for=60)])
        assert not refused.created and refused.id == first
        clock.advance(1.01)
        second = await put(broker, unique_key="k", unique_for=60)
        assert second != first

    async def test_key_is_held_for_its_ttl_even_after_completion(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        first = await put(broker, unique_key="report:2026-11", unique_for=600)
        assert await broker.ack([await take_one(broker)]) == [True]
        [again] = await broker.enqueue(
            [build_spec("contract:job", unique_key="report:2026-11", unique_for=600)]
        )
        assert not again.created and again.id == first

    async def test_unique_for_alone_dedupes_on_type_queue_and_payload(self, broker: FullBroker) -> None:
        a = await put(broker, payload={"x": 1}, unique_for=60)
        [dup] = await broker.enqueue([build_spec("contract:job", {"x": 1}, unique_for=60)])
        b = await put(broker, payload={"x": 2}, unique_for=60)
        c = await put(broker, payload={"x": 1}, unique_for=60, queue="other")
        assert dup.id == a and not dup.created and len({a, b, c}) == 3

    async def test_a_key_is_unique_within_its_queue(self, broker: FullBroker) -> None:
        a = await put(broker, queue="mail", unique_key="user:7", unique_for=60)
        b = await put(broker, queue="sms", unique_key="user:7", unique_for=60)
        [again] = await broker.enqueue(
            [build_spec("contract:job", queue="sms", unique_key="user:7", unique_for=60)]
        )
        assert a != b and not again.created and again.id == b

    async def test_duplicates_inside_one_batch(self, broker: FullBroker) -> None:
        specs = [build_spec("contract:job", i, unique_key=f"k{i % 2}", unique_for=60) for i in range(4)]
        results = await broker.enqueue(specs)
        assert [r.created for r in results] == [True, True, False, False]
        assert [r.id for r in results] == [specs[0].id, specs[1].id, specs[0].id, specs[1].id]

    async def test_racing_producers_exactly_one_wins(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        producers = [broker, *[await open_broker() for _ in range(3)]]
        for round_no in range(5):
            key = f"race:{round_no}"
            specs = [build_spec("contract:job", i, unique_key=key, unique_for=60) for i in range(16)]
            results = await asyncio.gather(
                *(producers[i % len(producers)].enqueue([spec]) for i, spec in enumerate(specs))
            )
            flat = [r for batch in results for r in batch]
            winners = [r for r in flat if r.created]
            assert len(winners) == 1
            assert {r.id for r in flat} == {winners[0].id}
        assert len(await drain_ids(broker)) == 5

    async def test_unique_until_done_frees_the_key_when_the_job_completes(self, broker: FullBroker) -> None:
        first = await put(broker, unique_key="sync:crm", unique_for=3600, unique_until="done")
        [held] = await broker.enqueue(
            [build_spec("contract:job", unique_key="sync:crm", unique_for=3600, unique_until="done")]
        )
        assert held.created is False and held.id == first  # held while it waits
        lease = await take_one(broker)
        [running] = await broker.enqueue(
            [build_spec("contract:job", unique_key="sync:crm", unique_for=3600, unique_until="done")]
        )
        assert running.created is False  # and while it runs
        assert await broker.ack([lease], ['"ok"']) == [True]
        second = await put(broker, unique_key="sync:crm", unique_for=3600, unique_until="done")
        assert second != first  # free once it completed, long before the TTL

    async def test_unique_until_done_keeps_the_key_of_a_failed_job_until_the_ttl(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        await put(broker, unique_key="k", unique_for=60, unique_until="done", max_retries=0)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom(), retry_in=None) is True
        [refused] = await broker.enqueue([build_spec("contract:job", unique_key="k", unique_for=60)])
        assert refused.created is False  # dead, not done: the key waits for its TTL
        clock.advance(60.01)
        await put(broker, unique_key="k", unique_for=60)

    async def test_the_default_holds_the_key_after_completion(self, broker: FullBroker) -> None:
        first = await put(broker, unique_key="k", unique_for=60)
        assert await broker.ack([await take_one(broker)]) == [True]
        [refused] = await broker.enqueue([build_spec("contract:job", unique_key="k", unique_for=60)])
        assert refused.created is False and refused.id == first  # ADR 0031, unchanged

    async def test_a_completed_job_frees_only_its_own_hold(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        await put(broker, unique_key="k", unique_for=10, unique_until="done")
        lease = await take_one(broker)
        clock.advance(10.01)  # the key expired while the job ran; a new job holds it now
        newer = await put(broker, unique_key="k", unique_for=60)
        assert await broker.ack([lease]) == [True]
        [refused] = await broker.enqueue([build_spec("contract:job", unique_key="k", unique_for=60)])
        assert refused.created is False and refused.id == newer
