"""No double claims under concurrent claimers."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from pqueue.broker import FullBroker
from pqueue.job import Lease
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import LEASE, OpenAnother

JOBS = 5000
CLAIMERS = 8


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
