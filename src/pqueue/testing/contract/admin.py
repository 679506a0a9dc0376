"""Inspection and admin: get, counts, paging, cancel, requeue and purge of dead jobs, workers."""

from __future__ import annotations

from typing import Any

import pytest

from pqueue.broker import DONE_WINDOW, FullBroker, QueueActivity, WorkerInfo
from pqueue.clock import ManualClock
from pqueue.errors import InvalidRequest, JobNotFound
from pqueue.ids import new_id
from pqueue.job import JobStatus
from pqueue.testing.contract.helpers import boom, drain_ids, put, put_many, status_of, take, take_one


async def _kill(broker: FullBroker, n: int, queue: str = "default") -> list[str]:
    """Make ``n`` dead jobs in ``queue``."""
    ids = await put_many(broker, n, queue=queue, max_retries=0)
    for lease in await take(broker, [queue], limit=n):
        assert await broker.fail(lease, boom("poison"), retry_in=None)
    return ids


@pytest.mark.asyncio
class AdminContract:
    async def test_unknown_job_id_is_a_typed_error(self, broker: FullBroker) -> None:
        with pytest.raises(JobNotFound):
            await broker.get_job(new_id())
        with pytest.raises(JobNotFound):
            await broker.get_job("not-a-uuid")
        with pytest.raises(JobNotFound):
            await broker.cancel(new_id())

    async def test_counts_by_queue_and_status(self, broker: FullBroker, clock: ManualClock) -> None:
        await put_many(broker, 3, queue="a")
        await put_many(broker, 2, queue="a", delay=60)
        await put_many(broker, 4, queue="b")
        done = await take(broker, ["b"], limit=2)
        assert await broker.ack(done[:1]) == [True]
        await _kill(broker, 1, queue="c")
        counts = await broker.counts()
        assert set(counts) == {"a", "b", "c"}
        assert all(set(per) == set(JobStatus) for per in counts.values())
        assert counts["a"][JobStatus.PENDING] == 3 and counts["a"][JobStatus.SCHEDULED] == 2
        assert counts["b"][JobStatus.PENDING] == 2 and counts["b"][JobStatus.ACTIVE] == 1
        assert counts["b"][JobStatus.COMPLETED] == 1 and counts["c"][JobStatus.DEAD] == 1
        clock.advance(60)
        await broker.promote()
        counts = await broker.counts()
        assert counts["a"][JobStatus.PENDING] == 5 and counts["a"][JobStatus.SCHEDULED] == 0

    async def test_list_jobs_pages_through_every_job_once(self, broker: FullBroker) -> None:
        ids = await put_many(broker, 23, queue="p")
        await put_many(broker, 5, queue="other")
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await broker.list_jobs(JobStatus.PENDING, queue="p", limit=10, offset=offset)
            assert len(page.jobs) <= 10
            seen.extend(job.id for job in page.jobs)
            offset = page.next_offset
        assert sorted(seen) == sorted(ids) and len(seen) == 23
        everywhere = await broker.list_jobs(JobStatus.PENDING, limit=100)
        assert len(everywhere.jobs) == 28 and everywhere.next_offset is None

    @pytest.mark.parametrize(
        ("status", "limit", "offset"),
        [("bogus", 10, 0), (JobStatus.PENDING, 0, 0), (JobStatus.PENDING, 10, -1), (JobStatus.DEAD, True, 0)],
    )
    async def test_list_jobs_refuses_bad_arguments(
        self, broker: FullBroker, status: JobStatus, limit: int, offset: int
    ) -> None:
        await put(broker)
        with pytest.raises(InvalidRequest):
            await broker.list_jobs(status, limit=limit, offset=offset)

    async def test_cancel_pending_scheduled_and_retry_jobs(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        pending = await put(broker)
        scheduled = await put(broker, delay=60)
        retrying = await put(broker, queue="r")
        assert await broker.fail(await take_one(broker, ["r"]), boom(), retry_in=5)
        for job_id in (pending, scheduled, retrying):
            assert await broker.cancel(job_id) is True
            assert await status_of(broker, job_id) is JobStatus.CANCELLED
        clock.advance(120)
        assert await take(broker, ["default", "r"], limit=10) == []
        assert await broker.cancel(pending) is False  # already cancelled

    async def test_active_and_finished_jobs_cannot_be_cancelled(self, broker: FullBroker) -> None:
        active = await put(broker)
        lease = await take_one(broker)
        assert await broker.cancel(active) is False
        assert await broker.ack([lease]) == [True]
        assert await broker.cancel(active) is False
        assert await status_of(broker, active) is JobStatus.COMPLETED

    async def test_requeue_one_dead_job(self, broker: FullBroker) -> None:
        dead = await _kill(broker, 3)
        assert await broker.requeue_dead(job_ids=[dead[1]]) == 1
        job = await broker.get_job(dead[1])
        assert job.status is JobStatus.PENDING and job.attempt == 0 and len(job.errors) == 1
        assert await drain_ids(broker) == [dead[1]]
        assert await broker.requeue_dead(job_ids=[dead[1], new_id()]) == 0  # not dead any more

    async def test_requeue_all_dead_jobs_of_a_queue_or_everywhere(self, broker: FullBroker) -> None:
        a = await _kill(broker, 3, queue="a")
        b = await _kill(broker, 2, queue="b")
        assert await broker.requeue_dead(queue="a") == 3
        assert sorted(await drain_ids(broker, ["a"])) == sorted(a)
        assert {await status_of(broker, i) for i in b} == {JobStatus.DEAD}
        assert await broker.requeue_dead() == 2
        assert sorted(await drain_ids(broker, ["b"])) == sorted(b)

    async def test_purge_dead_jobs(self, broker: FullBroker) -> None:
        a = await _kill(broker, 3, queue="a")
        b = await _kill(broker, 2, queue="b")
        assert await broker.purge_dead(job_ids=[a[0]]) == 1
        with pytest.raises(JobNotFound):
            await broker.get_job(a[0])
        assert await broker.purge_dead(queue="a") == 2
        assert await broker.purge_dead() == 2
        for job_id in a + b:
            with pytest.raises(JobNotFound):
                await broker.get_job(job_id)
        counts = await broker.counts()
        assert sum(per[JobStatus.DEAD] for per in counts.values()) == 0

    async def test_workers_register_and_expire(self, broker: FullBroker, clock: ManualClock) -> None:
        info = WorkerInfo(
            id="w-1", host="box", pid=42, queues=("a", "b"), concurrency=8, started_at=clock.now()
        )
        await broker.register_worker(info, ttl=30)
        [seen] = await broker.list_workers()
        assert (seen.id, seen.host, seen.pid, seen.queues, seen.concurrency) == (
            "w-1",
            "box",
            42,
            ("a", "b"),
            8,
        )
        assert abs(seen.last_seen - clock.now()) < 0.002
        clock.advance(20)
        await broker.register_worker(info, ttl=30)
        clock.advance(20)
        assert [w.id for w in await broker.list_workers()] == ["w-1"]
        clock.advance(11)
        assert await broker.list_workers() == []
        await broker.register_worker(info, ttl=30)
        await broker.unregister_worker("w-1")
        assert await broker.list_workers() == []

    async def test_activity_measures_oldest_due_job_and_jobs_done(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        assert await broker.activity() == QueueActivity({}, {})
        await put_many(broker, 2, queue="a")
        clock.advance(5)
        await put(broker, queue="b")
        await put(broker, queue="c", delay=30)  # scheduled: not due, so not waiting yet
        clock.advance(2)
        seen = await broker.activity()
        assert set(seen.oldest_pending_age) == {"a", "b"}
        assert seen.oldest_pending_age["a"] == pytest.approx(7, abs=0.01)
        assert seen.oldest_pending_age["b"] == pytest.approx(2, abs=0.01)
        assert seen.done == {"a": 0, "b": 0, "c": 0} and seen.window == DONE_WINDOW
        [lease] = await take(broker, ["a"])
        assert await broker.ack([lease]) == [True]
        [lease] = await take(broker, ["b"])
        assert await broker.fail(lease, boom("poison"), retry_in=None)
        clock.advance(31)  # c's job is due (since 3 s) but no promote pass has run
        seen = await broker.activity()
        assert seen.oldest_pending_age["a"] == pytest.approx(38, abs=0.01)
        assert seen.oldest_pending_age["c"] == pytest.approx(3, abs=0.01)
        assert "b" not in seen.oldest_pending_age
        assert seen.done == {"a": 1, "b": 1, "c": 0}
        assert (await broker.activity(window=10)).done == {"a": 0, "b": 0, "c": 0}
        clock.advance(30)  # 61 s after they finished
        assert (await broker.activity()).done == {"a": 0, "b": 0, "c": 0}

    async def test_list_jobs_filters_by_type(self, broker: FullBroker) -> None:
        wanted: list[str] = []
        for i in range(4):
            wanted.append(await put(broker, "kind:a", i, queue="q1"))
            await put(broker, "kind:b", i, queue="q1")
        wanted.append(await put(broker, "kind:a", 9, queue="q2"))
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await broker.list_jobs(JobStatus.PENDING, type="kind:a", limit=2, offset=offset)
            assert len(page.jobs) <= 2 and {job.type for job in page.jobs} <= {"kind:a"}
            seen.extend(job.id for job in page.jobs)
            offset = page.next_offset
        assert sorted(seen) == sorted(wanted)
        one_queue = await broker.list_jobs(JobStatus.PENDING, queue="q1", type="kind:a", limit=10)
        assert (
            sorted(job.id for job in one_queue.jobs) == sorted(wanted[:4]) and one_queue.next_offset is None
        )
        assert (await broker.list_jobs(JobStatus.PENDING, type="kind:none")).jobs == ()

    async def test_purge_dead_older_than(self, broker: FullBroker, clock: ManualClock) -> None:
        old = await _kill(broker, 2, queue="a")
        clock.advance(100)
        young = await _kill(broker, 1, queue="a")
        assert await broker.purge_dead(job_ids=[*old, *young], older_than=150) == 0
        assert await broker.purge_dead(job_ids=[old[0], young[0]], older_than=50) == 1
        assert await broker.purge_dead(queue="a", older_than=50) == 1
        for job_id in old:
            with pytest.raises(JobNotFound):
                await broker.get_job(job_id)
        assert await status_of(broker, young[0]) is JobStatus.DEAD
        clock.advance(100)
        assert await broker.purge_dead(older_than=50) == 1

    @pytest.mark.parametrize(
        "call",
        [
            {"list": {"queue": "no spaces"}},
            {"list": {"type": "bad type!"}},
            {"requeue": {"queue": "{slot}"}},
            {"purge": {"queue": ""}},
            {"purge": {"older_than": -1}},
            {"purge": {"older_than": float("nan")}},
        ],
    )
    async def test_admin_filters_refuse_bad_names_and_ages(
        self, broker: FullBroker, call: dict[str, dict[str, Any]]
    ) -> None:
        dead = await _kill(broker, 1)
        [(what, kwargs)] = call.items()
        with pytest.raises(InvalidRequest):
            if what == "list":
                await broker.list_jobs(JobStatus.DEAD, **kwargs)
            elif what == "requeue":
                await broker.requeue_dead(**kwargs)
            else:
                await broker.purge_dead(**kwargs)
        assert await status_of(broker, dead[0]) is JobStatus.DEAD

    async def test_check_health_says_what_it_checked(self, broker: FullBroker) -> None:
        described = await broker.check_health()
        assert isinstance(described, str) and described
