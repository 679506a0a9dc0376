"""Rate and concurrency limits at claim time (ADR 0110): a group never has more active jobs
than its concurrency nor starts more than its tokens allow, whoever claims; every way a job
stops being active gives its slot back; a limited group blocks nothing else."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import ErrorInfo, JobStatus, Lease
from pqueue.limits import Limit, burst_for
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import LEASE, OpenAnother, put, take

A = Limit("tenant-a", concurrency=2)
B = Limit("tenant-b", concurrency=2)


def rated(per_second: float, key: str = "rated") -> Limit:
    return Limit(key, rate=per_second, burst=burst_for(per_second))


async def put_limited(broker: FullBroker, limit: Limit, n: int = 1, **options: Any) -> list[str]:
    specs = [build_spec("contract:limited", i, limit=limit, **options) for i in range(n)]
    results = await broker.enqueue(specs)
    assert all(r.created for r in results)
    return [r.id for r in results]


def keys(leases: list[Lease]) -> list[str]:
    return sorted(lease.job.limit_key or "-" for lease in leases)


@pytest.mark.asyncio
class LimitsContract:
    async def test_concurrency_caps_active_jobs_per_group(self, broker: FullBroker) -> None:
        await put_limited(broker, A, 5)
        await put_limited(broker, B, 1)
        first = await take(broker, limit=10)
        assert keys(first) == ["tenant-a", "tenant-a", "tenant-b"]
        assert await take(broker, limit=10) == []
        assert await broker.ack(first[:1]) == [True]
        again = await take(broker, limit=10)
        assert [lease.job.limit_key for lease in again] == [first[0].job.limit_key]

    async def test_every_way_out_of_active_gives_the_slot_back(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        one = Limit("solo", concurrency=1)
        ids = await put_limited(broker, one, 6)
        boom = ErrorInfo("Boom", "x")
        [lease] = await take(broker, limit=5)
        assert await take(broker, limit=5) == []
        assert await broker.fail(lease, boom, retry_in=0.0)  # retry
        [lease] = await take(broker, limit=5)
        assert await broker.fail(lease, boom, retry_in=None)  # dead
        [lease] = await take(broker, limit=5)
        assert await broker.release([lease]) == [True]  # handed back unrun
        [lease] = await take(broker, limit=5)
        assert await broker.ack([lease]) == [True]
        [lease] = await take(broker, limit=5, lease_for=10)  # the worker dies holding it
        assert await take(broker, limit=5) == []
        clock.advance(10.01)
        assert (await broker.recover()).recovered == (lease.job.id,)
        [lease] = await take(broker, limit=5)
        waiting = [i for i in ids if (await broker.get_job(i)).status is JobStatus.PENDING]
        assert waiting and await broker.cancel(waiting[0])  # a waiting job holds no slot
        assert await broker.ack([lease]) == [True]
        assert len(await take(broker, limit=5)) == 1

    async def test_a_paused_queue_holds_its_limited_jobs_too(self, broker: FullBroker) -> None:
        ids = await put_limited(broker, A, 2)
        assert await broker.pause("default") is True
        assert await take(broker, limit=10) == []
        assert await broker.resume("default") is True
        assert sorted(lease.job.id for lease in await take(broker, limit=10)) == sorted(ids)

    async def test_cancelling_a_running_limited_job_gives_its_slot_back(self, broker: FullBroker) -> None:
        one = Limit("solo", concurrency=1)
        await put_limited(broker, one, 2)
        [lease] = await take(broker, limit=5)
        assert await take(broker, limit=5) == []
        assert await broker.cancel_active(lease.job.id) is True
        assert (await broker.get_job(lease.job.id)).status is JobStatus.CANCELLED
        assert len(await take(broker, limit=5)) == 1

    async def test_rate_spends_tokens_and_refills_with_time(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        limit = rated(20.0)  # a bucket of 2 tokens, one more every 50 ms
        await put_limited(broker, limit, 10)
        assert len(await take(broker, limit=10)) == 2
        assert await take(broker, limit=10) == []
        clock.advance(0.02)
        assert await take(broker, limit=10) == []
        clock.advance(0.031)
        assert len(await take(broker, limit=10)) == 1
        clock.advance(10.0)  # a long idle time fills the bucket, no more
        assert len(await take(broker, limit=10)) == 2

    async def test_rate_holds_under_concurrent_claimers(
        self, broker: FullBroker, open_broker: OpenAnother, clock: ManualClock
    ) -> None:
        limit = rated(20.0)
        await put_limited(broker, limit, 400)
        brokers = [broker, await open_broker()]
        started = 0

        async def claimer(n: int) -> None:
            nonlocal started
            mine = brokers[n % 2]
            leases = await mine.claim(["default"], worker_id=f"c{n}", limit=3, lease_for=LEASE)
            started += len(leases)
            if leases:
                assert all(await mine.ack(leases))

        for _ in range(100):  # 5 s of claims every 50 ms, six claimers at each step
            await asyncio.gather(*(claimer(n) for n in range(6)))
            clock.advance(0.05)
        assert 20 * 5 - 1 <= started <= 20 * 5 + burst_for(20.0)

    async def test_concurrency_holds_under_racing_claimers(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        await put_limited(broker, A, 60)
        await put(broker)  # an unlimited job is not held back
        brokers = [broker, await open_broker()]
        active: set[str] = set()
        most = 0
        done = 0

        async def claimer(n: int) -> None:
            nonlocal most, done
            rng = random.Random(n)
            mine = brokers[n % 2]
            idle = 0
            while done < 61 and idle < 200:
                leases = await mine.claim(
                    ["default"], worker_id=f"c{n}", limit=rng.randint(1, 3), lease_for=LEASE
                )
                if not leases:
                    idle += 1
                    await asyncio.sleep(0.002)
                    continue
                limited = [lease for lease in leases if lease.job.limit_key]
                active.update(lease.job.id for lease in limited)  # recorded after the claim...
                most = max(most, len(active))
                await asyncio.sleep(rng.random() * 0.005)
                active.difference_update(lease.job.id for lease in limited)  # ...and before the ack
                assert all(await mine.ack(leases))
                done += len(leases)

        await asyncio.gather(*(claimer(n) for n in range(4)))
        assert done == 61
        assert most <= 2

    async def test_a_limited_group_blocks_no_other_group_queue_or_job(self, broker: FullBroker) -> None:
        await put_limited(broker, Limit("full", concurrency=1), 3)
        await take(broker, limit=1)
        await put_limited(broker, Limit("other", concurrency=1), 1)
        plain = await put(broker)
        elsewhere = await put(broker, queue="elsewhere")
        leases = await take(broker, ["default", "elsewhere"], limit=10)
        assert sorted(lease.job.id for lease in leases if not lease.job.limit_key) == sorted(
            [plain, elsewhere]
        )
        assert [lease.job.limit_key for lease in leases if lease.job.limit_key] == ["other"]

    async def test_idle_wait_does_not_spin_on_a_held_back_group(self, broker: FullBroker) -> None:
        await put_limited(broker, Limit("held", concurrency=1), 2)
        assert len(await take(broker, limit=5)) == 1
        started = time.monotonic()
        woken = await broker.wait_for_jobs(["default"], timeout=0.3)
        assert not woken and time.monotonic() - started >= 0.25  # nothing it could claim

    async def test_idle_wait_ends_at_the_next_token(self, broker: FullBroker) -> None:
        limit = Limit("slow", rate=1 / 3600, burst=1.0)  # one token an hour
        await put_limited(broker, limit, 2)
        assert len(await take(broker, limit=5)) == 1
        started = time.monotonic()
        assert not await broker.wait_for_jobs(["default"], timeout=0.3)
        assert time.monotonic() - started >= 0.25  # the next token is an hour away

    async def test_limit_groups_report_active_waiting_and_tokens(self, broker: FullBroker) -> None:
        await put_limited(broker, A, 3)
        await put_limited(broker, rated(20.0), 4)
        await take(broker, limit=10)
        groups = {g.key: g for g in await broker.limit_groups() if g.queue == "default"}
        assert (groups["tenant-a"].active, groups["tenant-a"].waiting, groups["tenant-a"].concurrency) == (
            2,
            1,
            2,
        )
        rated_group = groups["rated"]
        assert (rated_group.active, rated_group.waiting, rated_group.rate) == (2, 2, 20.0)
        assert rated_group.tokens is not None and rated_group.tokens < 1.0
        job = await broker.get_job((await put_limited(broker, A))[0])
        assert job.limit_key == "tenant-a"

    async def test_limit_groups_show_their_limits_before_any_claim(self, broker: FullBroker) -> None:
        await put_limited(broker, A, 2)
        await put_limited(broker, rated(5.0), 1, delay=60)
        groups = {g.key: g for g in await broker.limit_groups() if g.queue == "default"}
        a, rated_group = groups["tenant-a"], groups["rated"]
        assert (a.active, a.waiting, a.concurrency) == (0, 2, 2)
        assert (rated_group.waiting, rated_group.rate, rated_group.tokens) == (1, 5.0, 1.0)

    async def test_limit_groups_show_the_limits_of_prioritized_jobs(self, broker: FullBroker) -> None:
        """A group whose waiting jobs all carry a priority shows its limits too (Redis keeps
        such jobs out of the lane's plain list, ADR 0145)."""
        await put_limited(broker, A, 2, priority=5)
        groups = {g.key: g for g in await broker.limit_groups() if g.queue == "default"}
        assert (groups["tenant-a"].waiting, groups["tenant-a"].concurrency) == (2, 2)

    async def test_limit_groups_list_groups_with_live_jobs_only(self, broker: FullBroker) -> None:
        """A group is listed while it has a waiting or active job, on every backend; once its
        last job has finished or been cancelled it is not, even while the broker still keeps
        its bucket refilling (docs/limits.md, ADR 0140)."""
        solo = Limit("solo", concurrency=1)
        await put_limited(broker, solo, 2)
        await put_limited(broker, rated(20.0, "done"), 1)
        [gone] = await put_limited(broker, Limit("gone", concurrency=1), 1, delay=60)
        leases = {lease.job.limit_key or "-": lease for lease in await take(broker, limit=10)}
        assert sorted(leases) == ["done", "solo"]

        async def listed() -> dict[str, tuple[int, int]]:
            groups = await broker.limit_groups()
            return {g.key: (g.active, g.waiting) for g in groups if g.queue == "default"}

        assert await listed() == {"solo": (1, 1), "done": (1, 0), "gone": (0, 1)}
        assert await broker.ack([leases["solo"], leases["done"]]) == [True, True]
        assert await broker.cancel(gone)
        assert await listed() == {"solo": (0, 1)}  # "done"'s bucket still refills: not listed
        [last] = await take(broker, limit=10)
        assert await listed() == {"solo": (1, 0)}
        assert await broker.ack([last]) == [True]
        assert await listed() == {}
        assert await take(broker, limit=10) == []  # a claim that visits the emptied groups
        assert await listed() == {}

    async def test_listing_shows_limited_jobs_beside_the_others(self, broker: FullBroker) -> None:
        plain = await put(broker, "contract:plain")
        a_ids = await put_limited(broker, A, 3)
        [later] = await put_limited(broker, B, 1, delay=60)
        assert len(await take(broker, limit=10)) == 3  # the plain job and A's two slots

        async def listed(status: JobStatus, **filters: Any) -> set[str]:
            page = await broker.list_jobs(status, **filters)
            assert page.next_offset is None
            return {job.id for job in page.jobs}

        running = await listed(JobStatus.ACTIVE)
        assert plain in running and len(running & set(a_ids)) == 2 and len(running) == 3
        assert await listed(JobStatus.PENDING) == set(a_ids) - running
        assert await listed(JobStatus.SCHEDULED) == {later}
        assert await listed(JobStatus.ACTIVE, type="contract:limited") == running - {plain}
        assert await listed(JobStatus.ACTIVE, queue="default") == running
        first = await broker.list_jobs(JobStatus.ACTIVE, limit=2)
        assert first.next_offset == 2  # pages walk the lanes too, without repeats
        rest = await broker.list_jobs(JobStatus.ACTIVE, limit=2, offset=2)
        assert rest.next_offset is None
        assert {job.id for job in first.jobs + rest.jobs} == running

    async def test_a_delayed_limited_job_waits_for_its_time(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        await put_limited(broker, A, 1, delay=5)
        assert await take(broker, limit=5) == []
        clock.advance(5.01)
        assert len(await take(broker, limit=5)) == 1

    async def test_a_requeued_dead_job_keeps_its_limit(self, broker: FullBroker) -> None:
        ids = await put_limited(broker, Limit("solo", concurrency=1), 2)
        for _ in ids:
            [lease] = await take(broker, limit=5)
            assert await broker.fail(lease, ErrorInfo("Boom", "x"), retry_in=None)
        assert await broker.requeue_dead(job_ids=[ids[0]]) == 1
        assert await broker.requeue_dead() == 1
        leases = await take(broker, limit=5)
        assert [lease.job.limit_key for lease in leases] == ["solo"]
        assert (await broker.get_job(leases[0].job.id)).limit_key == "solo"
