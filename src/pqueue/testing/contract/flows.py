"""Dependencies between jobs (``depends_on``, the ``waiting`` status) and waiting for a job
to finish (``wait_finished``): ADRs 0115-0117, docs/workflows.md."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pqueue.broker import FullBroker
from pqueue.broker_flows import PARENT_FAILED
from pqueue.clock import ManualClock
from pqueue.errors import InvalidOption, JobNotFound
from pqueue.ids import new_id
from pqueue.job import JobSpec, JobStatus
from pqueue.spec import build_spec
from pqueue.testing.contract.helpers import OpenAnother, boom, put, status_of, take, take_one


def spec(payload: Any = None, *, after: tuple[str, ...] = (), **options: Any) -> JobSpec:
    return build_spec("contract:job", payload, depends_on=after or None, **options)


async def store(broker: FullBroker, *specs: JobSpec) -> list[str]:
    results = await broker.enqueue_flow(list(specs))
    assert all(r.created for r in results)
    return [r.id for r in results]


async def finish(broker: FullBroker, result: Any = None, queue: str = "default") -> str:
    """Claim one job of ``queue`` and complete it with ``result``; returns its id."""
    lease = await take_one(broker, [queue])
    assert await broker.ack([lease], [json.dumps(result)]) == [True]
    return lease.job.id


async def kill(broker: FullBroker, queue: str = "default") -> str:
    """Claim one job of ``queue`` and make it dead; returns its id."""
    lease = await take_one(broker, [queue])
    assert await broker.fail(lease, boom(), retry_in=None) is True
    return lease.job.id


@pytest.mark.asyncio
class FlowContract:
    async def test_child_waits_until_every_parent_completed(self, broker: FullBroker) -> None:
        a, b = spec("a"), spec("b")
        c = spec("c", after=(a.id, b.id))
        await store(broker, a, b, c)
        assert await status_of(broker, c.id) is JobStatus.WAITING
        assert (await broker.counts())["default"][JobStatus.WAITING] == 1
        assert [j.id for j in (await broker.list_jobs(JobStatus.WAITING)).jobs] == [c.id]
        first = await take_one(broker)
        assert first.job.id == a.id
        assert await broker.ack([first], ['"A"']) == [True]
        assert await status_of(broker, c.id) is JobStatus.WAITING
        second = await take_one(broker)
        assert second.job.id == b.id  # the child is not claimable while b runs
        assert await take(broker) == []
        assert await broker.ack([second], ['{"n": 2}']) == [True]
        child = await take_one(broker)
        assert child.job.id == c.id
        assert child.job.depends_on == (a.id, b.id)
        assert child.job.parent_results == {a.id: "A", b.id: {"n": 2}}
        assert await broker.ack([child]) == [True]

    async def test_parents_and_children_in_different_queues(self, broker: FullBroker) -> None:
        a = spec(1, queue="flow-a")
        b = spec(2, queue="flow-b", after=(a.id,))
        c = spec(3, queue="flow-a", after=(b.id,))
        await store(broker, c, b, a)  # any order within the batch
        assert await take(broker, ["flow-b"]) == []
        await finish(broker, "one", "flow-a")
        lease = await take_one(broker, ["flow-b"])
        assert lease.job.parent_result() == "one"
        assert await broker.ack([lease], ['"two"']) == [True]
        last = await take_one(broker, ["flow-a"])
        assert last.job.id == c.id and last.job.parent_result() == "two"

    async def test_a_dead_parent_cancels_dependants_recursively(self, broker: FullBroker) -> None:
        a = spec()
        b = spec(after=(a.id,), queue="other")
        c = spec(after=(b.id,))
        side = spec()
        await store(broker, a, b, c, side)
        assert await kill(broker) == a.id
        for job_id in (b.id, c.id):
            job = await broker.get_job(job_id)
            assert job.status is JobStatus.CANCELLED
            assert job.last_error is not None and job.last_error.kind == PARENT_FAILED
        assert (await broker.get_job(b.id)).last_error.message.endswith(f"{a.id} is dead")  # type: ignore[union-attr]
        assert (await take_one(broker)).job.id == side.id  # unrelated jobs untouched

    async def test_policy_run_lets_dependants_run_without_the_result(self, broker: FullBroker) -> None:
        a, ok = spec(), spec()
        b = spec(after=(a.id, ok.id), on_parent_failure="run")
        await store(broker, a, ok, b)
        await kill(broker)
        assert await status_of(broker, b.id) is JobStatus.WAITING  # ok has not finished yet
        await finish(broker, 7)
        lease = await take_one(broker)
        assert lease.job.id == b.id and lease.job.parent_results == {ok.id: 7}

    async def test_cancelling_a_parent_cancels_its_dependants(self, broker: FullBroker) -> None:
        a = spec()
        b = spec(after=(a.id,))
        await store(broker, a, b)
        assert await broker.cancel(a.id) is True
        assert await status_of(broker, b.id) is JobStatus.CANCELLED

    async def test_a_waiting_job_can_be_cancelled_and_its_parent_still_runs(self, broker: FullBroker) -> None:
        a = spec()
        b = spec(after=(a.id,))
        c = spec(after=(b.id,))
        await store(broker, a, b, c)
        assert await broker.cancel(b.id) is True
        assert await status_of(broker, c.id) is JobStatus.CANCELLED
        await finish(broker)
        assert await status_of(broker, b.id) is JobStatus.CANCELLED
        assert await take(broker) == []

    async def test_a_parent_dead_by_recoveries_cancels_dependants(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        a = spec(max_recoveries=0)
        b = spec(after=(a.id,))
        await store(broker, a, b)
        await take_one(broker, lease_for=5)
        clock.advance(6)
        assert (await broker.recover()).dead == (a.id,)
        assert await status_of(broker, b.id) is JobStatus.CANCELLED

    async def test_a_chain_survives_a_lost_lease_in_its_middle_step(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        a = spec()
        b = spec(after=(a.id,))
        c = spec(after=(b.id,))
        await store(broker, a, b, c)
        await finish(broker, 1)
        lost = await take_one(broker, lease_for=5)  # b; then its worker dies
        assert lost.job.id == b.id
        clock.advance(6)
        assert (await broker.recover()).recovered == (b.id,)
        assert await status_of(broker, c.id) is JobStatus.WAITING
        assert await broker.ack([lost], ['"late"']) == [False]  # the dead worker's ack is fenced
        again = await take_one(broker)
        assert again.job.id == b.id and again.job.parent_result() == 1
        assert await broker.ack([again], ["2"]) == [True]
        last = await take_one(broker)
        assert last.job.id == c.id and last.job.parent_result() == 2
        assert await broker.ack([last]) == [True]
        assert await take(broker) == []  # nothing runs twice

    async def test_retry_is_not_death(self, broker: FullBroker) -> None:
        a = spec(max_retries=1)
        b = spec(after=(a.id,))
        await store(broker, a, b)
        lease = await take_one(broker)
        assert await broker.fail(lease, boom(), retry_in=0) is True
        assert await status_of(broker, b.id) is JobStatus.WAITING
        await finish(broker, "second try")
        assert (await take_one(broker)).job.parent_result() == "second try"

    async def test_depends_on_an_unknown_job_stores_nothing(self, broker: FullBroker) -> None:
        a = spec()
        b = spec(after=(a.id, new_id()))
        with pytest.raises(JobNotFound):
            await broker.enqueue_flow([a, b])
        for job_id in (a.id, b.id):
            with pytest.raises(JobNotFound):
                await broker.get_job(job_id)

    async def test_a_cycle_stores_nothing(self, broker: FullBroker) -> None:
        x, y = new_id(), new_id()
        a = spec(job_id=x, after=(y,))
        b = spec(job_id=y, after=(x,))
        with pytest.raises(InvalidOption):
            await broker.enqueue_flow([a, b])
        with pytest.raises(JobNotFound):
            await broker.get_job(x)

    async def test_depends_on_an_already_completed_job(self, broker: FullBroker) -> None:
        parent = await put(broker)
        await finish(broker, {"done": True})
        [child] = await store(broker, spec(after=(parent,)))
        lease = await take_one(broker)
        assert lease.job.id == child and lease.job.parent_result() == {"done": True}

    async def test_depends_on_an_already_dead_job(self, broker: FullBroker) -> None:
        parent = await put(broker)
        await kill(broker)
        cancelled, runs = await store(
            broker, spec(after=(parent,)), spec(after=(parent,), on_parent_failure="run")
        )
        assert await status_of(broker, cancelled) is JobStatus.CANCELLED
        lease = await take_one(broker)
        assert lease.job.id == runs and lease.job.parent_results == {}

    async def test_depends_on_a_running_job_from_a_later_enqueue(self, broker: FullBroker) -> None:
        parent = await put(broker)
        lease = await take_one(broker)
        [child] = await store(broker, spec(after=(parent,)))
        assert await status_of(broker, child) is JobStatus.WAITING
        assert await broker.ack([lease], ["5"]) == [True]
        assert (await take_one(broker)).job.parent_result() == 5

    async def test_many_children_of_one_parent(self, broker: FullBroker) -> None:
        a = spec()
        kids = [spec(i, after=(a.id,)) for i in range(5)]
        await store(broker, a, *kids)
        await finish(broker, "x")
        leases = await take(broker, limit=10)
        assert sorted(lease.job.payload for lease in leases) == [0, 1, 2, 3, 4]

    async def test_concurrent_batches_on_one_parent(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        parent = await put(broker)
        lease = await take_one(broker)
        others = [await open_broker() for _ in range(3)]
        batches = [[spec(i, after=(parent,)), spec(i, after=(parent,))] for i in range(9)]
        stored = await asyncio.gather(*(others[i % 3].enqueue_flow(b) for i, b in enumerate(batches)))
        assert all(r.created for results in stored for r in results)
        assert await broker.ack([lease], ["1"]) == [True]
        leases = await take(broker, limit=50)
        assert len(leases) == 18 and all(x.job.parent_result() == 1 for x in leases)

    async def test_jobs_without_dependencies_report_none(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        job = (await take_one(broker)).job
        assert job.id == job_id and job.depends_on == () and job.parent_results == {}

    # -- waiting for a job to finish ---------------------------------------------

    async def test_wait_finished_answers_at_once_for_a_finished_job(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        await finish(broker, [1, 2])
        job = await broker.wait_finished(job_id, 5.0)
        assert job is not None and job.status is JobStatus.COMPLETED and job.result == [1, 2]

    async def test_wait_finished_is_woken_by_the_ack(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        lease = await take_one(broker)
        waiter = asyncio.create_task(broker.wait_finished(job_id, 30.0))
        await asyncio.sleep(0.3)
        assert not waiter.done()
        assert await broker.ack([lease], ['"hi"']) == [True]
        loop = asyncio.get_running_loop()
        acked = loop.time()
        job = await asyncio.wait_for(waiter, 10)
        assert job is not None and job.result == "hi"
        # Pushed, not polled: well within a second of the ack although it could wait 30 s.
        assert loop.time() - acked < 1.0

    async def test_wait_finished_is_woken_by_death_and_cancel(self, broker: FullBroker) -> None:
        a = spec()
        b = spec(after=(a.id,))
        await store(broker, a, b)
        waiters = [asyncio.create_task(broker.wait_finished(i, 30.0)) for i in (a.id, b.id)]
        await asyncio.sleep(0.3)
        await kill(broker)
        dead, cancelled = await asyncio.wait_for(asyncio.gather(*waiters), 10)
        assert dead is not None and dead.status is JobStatus.DEAD
        assert cancelled is not None and cancelled.status is JobStatus.CANCELLED

    async def test_cancelling_a_running_parent_cancels_dependants_and_wakes_waiters(
        self, broker: FullBroker
    ) -> None:
        a = spec()
        b = spec(after=(a.id,), queue="other")
        await store(broker, a, b)
        lease = await take_one(broker)
        assert lease.job.id == a.id
        waiters = [asyncio.create_task(broker.wait_finished(i, 30.0)) for i in (a.id, b.id)]
        await asyncio.sleep(0.3)
        assert await broker.cancel_active(a.id) is True
        parent, child = await asyncio.wait_for(asyncio.gather(*waiters), 10)
        assert parent is not None and parent.status is JobStatus.CANCELLED
        assert child is not None and child.status is JobStatus.CANCELLED
        assert child.last_error is not None and child.last_error.kind == PARENT_FAILED
        assert await broker.ack([lease]) == [False]  # the worker's late ack changes nothing
        assert await take(broker, ["default", "other"]) == []

    async def test_wait_finished_times_out(self, broker: FullBroker) -> None:
        job_id = await put(broker)
        assert await broker.wait_finished(job_id, 0.2) is None
        with pytest.raises(JobNotFound):
            await broker.wait_finished(new_id(), 0.2)
