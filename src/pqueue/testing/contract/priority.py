"""Strict and weighted priority across queues."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pqueue.broker import FullBroker
from pqueue.priority import QueueSelection
from pqueue.testing.contract.helpers import WORKER, put_many, take

LEASE = 30.0


@pytest.mark.asyncio
class PriorityContract:
    async def test_claim_visits_queues_in_the_given_order(self, broker: FullBroker) -> None:
        low = await put_many(broker, 3, queue="low")
        high = await put_many(broker, 2, queue="high")
        leases = await take(broker, ["high", "low"], limit=4)
        assert [lease.job.id for lease in leases] == high + low[:2]

    async def test_strict_priority_drains_higher_queues_first(self, broker: FullBroker) -> None:
        selection = QueueSelection.parse({"critical": 6, "default": 3, "low": 1}, strict=True)
        for queue in ("low", "default", "critical"):
            await put_many(broker, 20, queue=queue)
        seen: list[str] = []
        while leases := await take(broker, selection.order(), limit=7):
            seen.extend(lease.job.queue for lease in leases)
            assert all(await broker.ack(leases))
        assert seen == ["critical"] * 20 + ["default"] * 20 + ["low"] * 20

    async def test_weighted_priority_claims_in_proportion(self, broker: FullBroker) -> None:
        selection = QueueSelection.parse({"critical": 6, "default": 3, "low": 1})
        for queue in ("critical", "default", "low"):
            await put_many(broker, 700, queue=queue)
        rng = random.Random(7)
        got: Counter[str] = Counter()
        for _ in range(600):  # every queue stays non-empty for all 600 claims
            [lease] = await broker.claim(selection.order(rng), worker_id=WORKER, limit=1, lease_for=LEASE)
            got[lease.job.queue] += 1
        assert 300 <= got["critical"] <= 420, got
        assert 130 <= got["default"] <= 230, got
        assert 30 <= got["low"] <= 95, got

    async def test_weighted_priority_never_starves_a_queue(self, broker: FullBroker) -> None:
        selection = QueueSelection.parse({"busy": 100, "quiet": 1})
        await put_many(broker, 400, queue="busy")
        [quiet] = await put_many(broker, 1, queue="quiet")
        rng = random.Random(3)
        claimed = []
        for _ in range(400):
            claimed += await broker.claim(selection.order(rng), worker_id=WORKER, limit=1, lease_for=LEASE)
        assert quiet in {lease.job.id for lease in claimed}
