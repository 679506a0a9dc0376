"""Redis hand-off to parked claimers (docs/redis.md, "Hand-off"): the edges the contract
does not reach — stale and dead claimers, malformed entries and messages, corrupt jobs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from redis.asyncio import Redis

from pqueue.broker import Claimer, FullBroker
from pqueue.brokers import handoff as shared_handoff
from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import waiting_claimer
from tests.conftest import service_url
from tests.integration.redis.conftest import OpenRedis

pytestmark = [pytest.mark.redis, pytest.mark.asyncio]

CLAIMER = Claimer("w1", limit=4, lease_for=30)


async def _park(broker: FullBroker, claimer: Claimer = CLAIMER, timeout: float = 30) -> asyncio.Task[bool]:
    """A wait that has parked ``claimer`` on "default" (nothing due there)."""
    return await waiting_claimer(broker, claimer, timeout=timeout, settle=0.2)


@asynccontextmanager
async def _raw() -> AsyncIterator[Redis]:
    """A plain client on the shared server, to read or spoil keys behind the broker's back."""
    client = Redis.from_url(str(service_url("redis")), decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


async def test_a_batch_enqueue_hands_a_parked_claimer_up_to_its_limit_oldest_first(
    open_redis: OpenRedis,
) -> None:
    worker, producer = await open_redis(), await open_redis()
    waiter = await _park(worker, Claimer("w1", limit=2, lease_for=30))
    first, second, third = [r.id for r in await producer.enqueue([build_spec("t") for _ in range(3)])]
    assert await asyncio.wait_for(waiter, 10) is True
    assert [(await producer.get_job(i)).status for i in (first, second, third)] == [
        JobStatus.ACTIVE,
        JobStatus.ACTIVE,
        JobStatus.PENDING,
    ]
    leases = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert [lease.job.id for lease in leases] == [first, second]


async def test_leases_left_uncollected_are_given_back_after_a_while(
    open_redis: OpenRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_handoff, "STALE_AFTER", 0.3)
    worker, producer = await open_redis(), await open_redis()
    waiter = await _park(worker)
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    assert (await producer.get_job(result.id)).status is JobStatus.ACTIVE
    await asyncio.sleep(1.0)  # never claimed: given back, unrun
    job = await producer.get_job(result.id)
    assert (job.status, job.attempt) == (JobStatus.PENDING, 0)
    assert await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30) != []


async def test_a_claimer_whose_broker_stopped_listening_gets_nothing(open_redis: OpenRedis) -> None:
    gone, producer, other = await open_redis(), await open_redis(), await open_redis()
    waiter = await _park(gone)
    waiter.cancel()
    await gone.close()  # its entry in `parked` outlives it
    woken = asyncio.create_task(other.wait_for_jobs(["default"], timeout=30))
    await asyncio.sleep(0.2)
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(woken, 10) is True  # the wake-up went out instead
    assert (await producer.get_job(result.id)).status is JobStatus.PENDING


async def test_an_expired_parking_is_not_used(open_redis: OpenRedis) -> None:
    clock = ManualClock()
    worker, producer = await open_redis(clock=clock), await open_redis(clock=clock)
    waiter = await _park(worker, timeout=5)
    clock.advance(60)  # far past the parking's expiry on the scripts' clock
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True  # woken, not handed anything
    assert (await producer.get_job(result.id)).status is JobStatus.PENDING


async def test_a_malformed_parked_entry_is_dropped_and_the_job_stays_pending(
    open_redis: OpenRedis, shared_prefix: str
) -> None:
    producer = await open_redis()
    async with _raw() as raw:
        parked, parkers = f"{shared_prefix}:{{default}}:parked", f"{shared_prefix}:{{default}}:parkers"
        for member, how in (("nospace", "4 30000"), ("h1 w1", "garbage")):
            await raw.zadd(parked, {member: 2**52})
            await raw.hset(parkers, member, how)
        [result] = await producer.enqueue([build_spec("t")])
        assert (await producer.get_job(result.id)).status is JobStatus.PENDING
        assert await raw.zcard(parked) == 0


async def test_a_corrupt_job_handed_off_is_dead_lettered_by_the_claim_that_collects_it(
    open_redis: OpenRedis, shared_prefix: str
) -> None:
    worker, producer = await open_redis(), await open_redis()
    [bad] = await producer.enqueue([build_spec("t", 1, delay=3600)])
    waiter = await _park(worker)
    async with _raw() as raw:  # behind the parked worker's back, make it due with a payload that is not JSON
        job_key = f"{shared_prefix}:{{default}}:job:{bad.id}"
        await raw.hset(job_key, mapping={"payload": "{not json", "status": "pending"})
        await raw.zrem(f"{shared_prefix}:{{default}}:scheduled", bad.id)
        await raw.rpush(f"{shared_prefix}:{{default}}:pending", bad.id)
    [good] = await producer.enqueue([build_spec("t", 2)])  # hands off both, oldest first
    assert await asyncio.wait_for(waiter, 10) is True
    leases = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert [lease.job.id for lease in leases] == [good.id]
    async with _raw() as raw:
        assert await raw.hget(job_key, "status") == "dead"
        assert await raw.zscore(f"{shared_prefix}:{{default}}:dead", bad.id) is not None


async def test_a_malformed_hand_off_message_is_dropped_and_listening_goes_on(
    open_redis: OpenRedis, shared_prefix: str
) -> None:
    worker, producer = await open_redis(), await open_redis()
    waiter = await _park(worker)
    async with _raw() as raw:
        for channel in await raw.pubsub_channels(f"{shared_prefix}:handoff:*"):
            await raw.publish(channel, '{"q": "default", "d": "x"}')
            await raw.publish(channel, "[[[")
    await asyncio.sleep(0.1)
    [result] = await producer.enqueue([build_spec("t")])
    assert await asyncio.wait_for(waiter, 10) is True
    leases = await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30)
    assert [lease.job.id for lease in leases] == [result.id]


async def test_close_gives_back_jobs_handed_off_just_before_it(open_redis: OpenRedis) -> None:
    """A hand-off published just before close may not have been read yet: close unparks,
    waits for everything sent before that, and gives it back unrun."""
    producer = await open_redis()
    for _ in range(20):
        worker = await open_redis()
        waiter = await _park(worker)
        [result] = await producer.enqueue([build_spec("t")])
        await worker.close()  # at once: the hand-off may still be on its way
        assert await asyncio.wait_for(waiter, 10) in (True, False)
        job = await producer.get_job(result.id)
        assert (job.status, job.attempt) == (JobStatus.PENDING, 0)
        assert await producer.cancel(result.id)


async def test_a_wait_without_a_claimer_only_looks(open_redis: OpenRedis, shared_prefix: str) -> None:
    broker = await open_redis()
    assert await broker.wait_for_jobs(["default"], timeout=0.05) is False
    async with _raw() as raw:
        assert await raw.exists(f"{shared_prefix}:{{default}}:parked") == 0


async def test_a_claim_ends_the_claimers_parking(open_redis: OpenRedis) -> None:
    worker, producer = await open_redis(), await open_redis()
    waiter = await _park(worker)
    waiter.cancel()  # the worker stops waiting: its parking outlives the wait by a margin
    await asyncio.gather(waiter, return_exceptions=True)
    assert await worker.claim(["default"], worker_id="w1", limit=4, lease_for=30) == []
    [result] = await producer.enqueue([build_spec("t")])
    assert (await producer.get_job(result.id)).status is JobStatus.PENDING  # not handed off
