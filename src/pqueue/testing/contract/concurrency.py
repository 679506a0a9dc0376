"""No double claims under concurrent claimers; counts stay exact while jobs settle and prune runs."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.errors import JobNotFound
from pqueue.job import JobStatus, Lease
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import LEASE, OpenAnother, boom, drain_ids, put_many, take

JOBS = 5000
CLAIMERS = 8
YEAR = 366 * 24 * 3600.0
"""Past any retention: what finished before it is prunable."""


async def truth(broker: FullBroker, ids: list[str]) -> Counter[tuple[str, JobStatus]]:
    """Jobs per (queue, status), read one by one; pruned and purged ones are gone."""
    seen: Counter[tuple[str, JobStatus]] = Counter()
    for job_id in ids:
        try:
            job = await broker.get_job(job_id)
        except JobNotFound:
            continue
        seen[job.queue, job.status] += 1
    return seen


async def settle(broker: FullBroker, rng: random.Random, leases: list[Lease], held: list[Lease]) -> None:
    """Settle each lease one way at random: ack, dead, retry, cancelled while running, or
    held (neither: its lease expires later)."""
    for lease in leases:
        roll = rng.random()
        if roll < 0.55:
            assert await broker.ack([lease]) == [True]
        elif roll < 0.7:
            assert await broker.fail(lease, boom(), retry_in=None)
        elif roll < 0.8:
            assert await broker.fail(lease, boom(), retry_in=0)
        elif roll < 0.9:
            assert await broker.cancel_active(lease.job.id, reason="contract")
        else:
            held.append(lease)


@pytest.mark.asyncio
class ConcurrencyContract:
    async def test_concurrent_claimers_take_each_job_exactly_once(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        for start in range(0, JOBS, 1000):
            await broker.enqueue([build_spec("contract:job", i) for i in range(start, start + 1000)])
        brokers = [broker, await open_broker()]
        claimed: list[Lease] = []

        async def claimer(n: int) -> None:
            rng = random.Random(n)
            mine = brokers[n % len(brokers)]
            while leases := await mine.claim(
                ["default"], worker_id=f"c{n}", limit=rng.randint(1, 25), lease_for=LEASE
            ):
                claimed.extend(leases)
                assert all(await mine.ack(leases))

        await asyncio.gather(*(claimer(n) for n in range(CLAIMERS)))
        per_job = Counter(lease.job.id for lease in claimed)
        assert len(per_job) == JOBS
        assert set(per_job.values()) == {1}
        assert sorted(lease.job.payload for lease in claimed) == list(range(JOBS))

    async def test_counts_stay_exact_while_jobs_settle_and_prune_runs(
        self, broker: FullBroker, open_broker: OpenAnother, clock: ManualClock
    ) -> None:
        # History past retention, for the prune to delete while the rest moves.
        ids = await put_many(broker, 120, queue="a") + await put_many(broker, 40, queue="b")
        await drain_ids(broker, ["a"], batch=50)
        for job_id in ids[120:140]:
            assert await broker.cancel(job_id)
        clock.advance(YEAR)
        # Fresh jobs: some with no retry or recovery left, some whose parent dies.
        ids += await put_many(broker, 300, queue="a", max_retries=1, max_recoveries=0)
        ids += await put_many(broker, 200, queue="b", start=300, max_retries=0)
        parents = await put_many(broker, 20, queue="c", max_retries=0)
        children = [
            build_spec("contract:job", i, queue="d", depends_on=[parent], on_parent_failure="cancel")
            for i, parent in enumerate(parents)
        ]
        ids += parents + [r.id for r in await broker.enqueue_flow(children)]
        brokers = [broker, await open_broker()]
        held: list[Lease] = []
        admin_done = asyncio.Event()

        async def worker(n: int) -> None:
            rng = random.Random(n)
            mine = brokers[n % 2]
            while True:
                leases = await take(mine, ["a", "b", "c", "d"], limit=rng.randint(1, 8), worker=f"w{n}")
                if not leases and admin_done.is_set():
                    return
                await settle(mine, rng, leases, held)
                await asyncio.sleep(0)

        async def admin() -> None:
            rng = random.Random(99)
            mine = brokers[1]
            for round in range(30):
                await mine.prune(limit=7)
                with contextlib.suppress(JobNotFound):  # pruned or purged already
                    await mine.cancel(rng.choice(ids))  # pending ones move; others say no
                if round % 10 == 3:
                    await mine.requeue_dead(queue="a")
                if round % 10 == 7:
                    dead = await mine.list_jobs(JobStatus.DEAD, queue="b", limit=5)
                    await mine.purge_dead(job_ids=[job.id for job in dead.jobs])
                await asyncio.sleep(0)
            while await mine.prune(limit=7):
                pass
            admin_done.set()

        await asyncio.gather(admin(), *(worker(n) for n in range(4)))
        clock.advance(LEASE + 1)
        await broker.recover()  # held leases: recovered, or dead past max_recoveries
        counts = await broker.counts()
        expected = await truth(broker, ids)
        assert sum(expected.values()) < len(ids)  # some were pruned or purged
        assert expected[("a", JobStatus.COMPLETED)] > 0 and expected[("d", JobStatus.CANCELLED)] > 0
        for queue in {queue for queue, _ in expected} | set(counts):
            for status in JobStatus:
                assert counts[queue][status] == expected[queue, status], (queue, status)
