"""Limits and dependencies together (ADRs 0110, 0115): a job under a rate or concurrency
limit may wait for parents; once released it is claimed under its limit like any other
limited job, on every backend."""

from __future__ import annotations

import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import ErrorInfo, JobStatus
from pqueue.limits import Limit, burst_for
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import put, status_of, take, take_one


@pytest.mark.asyncio
class LimitedFlowContract:
    async def test_limited_children_wait_for_their_parent_then_keep_their_limit(
        self, broker: FullBroker
    ) -> None:
        parent = build_spec("contract:job", "parent")
        solo = Limit("solo", concurrency=1)
        children = [build_spec("contract:limited", i, limit=solo, depends_on=[parent.id]) for i in range(3)]
        results = await broker.enqueue_flow([parent, *children])
        assert all(r.created for r in results)
        assert {await status_of(broker, c.id) for c in children} == {JobStatus.WAITING}
        assert [g.key for g in await broker.limit_groups()] == []  # waiting outside the group
        [lease] = await take(broker, limit=10)  # the children wait: only the parent is due
        assert lease.job.id == parent.id
        assert await broker.ack([lease], ['"done"']) == [True]
        first = await take(broker, limit=10)
        assert [x.job.limit_key for x in first] == ["solo"]  # released, but one at a time
        assert first[0].job.parent_results == {parent.id: "done"}
        assert await take(broker, limit=10) == []
        [group] = await broker.limit_groups()
        assert (group.key, group.active, group.waiting) == ("solo", 1, 2)
        assert await broker.ack(first) == [True]
        assert len(await take(broker, limit=10)) == 1

    async def test_a_limited_child_of_a_stored_parent_is_released_under_its_rate(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        parent = await put(broker)
        rate = Limit("rated", rate=1.0, burst=burst_for(1.0))
        children = [build_spec("contract:limited", i, limit=rate, depends_on=[parent]) for i in range(2)]
        await broker.enqueue_flow(children)
        assert await broker.ack([await take_one(broker)]) == [True]
        assert len(await take(broker, limit=10)) == 1
        assert await take(broker, limit=10) == []  # no token left
        clock.advance(1.01)
        assert len(await take(broker, limit=10)) == 1

    async def test_a_failed_parent_cancels_its_limited_children(self, broker: FullBroker) -> None:
        parent = await put(broker, max_retries=0)
        [child] = await broker.enqueue_flow(
            [build_spec("contract:limited", limit=Limit("g", concurrency=1), depends_on=[parent])]
        )
        lease = await take_one(broker)
        assert await broker.fail(lease, ErrorInfo("Boom", "x"), retry_in=None) is True
        assert await status_of(broker, child.id) is JobStatus.CANCELLED
        assert await take(broker, limit=10) == []
