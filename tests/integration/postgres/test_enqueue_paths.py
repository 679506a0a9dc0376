"""The four enqueue statements (one job; a batch of jobs that differ only in payload; a
plain batch; a batch with unique keys or repeated ids) store the same jobs and answer the
same way."""

from __future__ import annotations

from datetime import UTC, datetime

from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg


async def test_a_plain_batch_reports_the_ids_that_already_existed(open_pg: OpenPg) -> None:
    broker = await open_pg()
    old = build_spec("p:job", 0)
    [first] = await broker.enqueue([old])  # the one-job statement
    assert first.created
    specs = [build_spec("p:job", 1), old, build_spec("p:job", 2)]
    results = await broker.enqueue(specs)  # the plain batch statement
    assert [(r.id, r.created) for r in results] == [(specs[0].id, True), (old.id, False), (specs[2].id, True)]
    assert (await broker.get_job(old.id)).payload == 0


async def test_every_path_stores_the_same_job(open_pg: OpenPg) -> None:
    clock = ManualClock(1_800_000_000.0)
    broker = await open_pg(clock=clock)
    options = {
        "queue": "mail",
        "max_retries": 7,
        "max_recoveries": 2,
        "timeout": 1.5,
        "idempotency_key": "idem-1",
        "meta": {"trace": "t1"},
        "delay": 30,
    }
    one, same, same_too, plain = (build_spec("p:job", {"n": 1}, **options) for _ in range(4))  # type: ignore[arg-type]
    general = build_spec("p:job", {"n": 1}, unique_key="k", unique_for=60, **options)  # type: ignore[arg-type]
    await broker.enqueue([one])
    await broker.enqueue([same, same_too])
    await broker.enqueue([plain, build_spec("p:job", None)])
    await broker.enqueue([general, build_spec("p:job", None)])
    jobs = [await broker.get_job(spec.id) for spec in (one, same, plain, general)]
    fields = [
        (j.type, j.queue, j.status, j.max_retries, j.max_recoveries, j.timeout, j.idempotency_key,
         dict(j.meta), j.run_at, j.created_at, j.payload)
        for j in jobs
    ]  # fmt: skip
    due = datetime.fromtimestamp(1_800_000_030.0, UTC)
    now = datetime.fromtimestamp(1_800_000_000.0, UTC)
    meta = {"trace": "t1"}
    expected = ("p:job", "mail", JobStatus.SCHEDULED, 7, 2, 1.5, "idem-1", meta, due, now, {"n": 1})
    assert fields == [expected] * 4
    assert [j.unique_key for j in jobs] == [None, None, None, "k"]


async def test_a_job_due_at_a_past_time_is_pending(open_pg: OpenPg) -> None:
    clock = ManualClock(1_800_000_000.0)
    broker = await open_pg(clock=clock)
    past = datetime.fromtimestamp(1_700_000_000.0, UTC)
    single = build_spec("p:job", run_at=past)
    batch = [build_spec("p:job", run_at=past), build_spec("p:job", run_at=past)]
    await broker.enqueue([single])
    await broker.enqueue(batch)
    for spec in (single, *batch):
        job = await broker.get_job(spec.id)
        assert (job.status, job.run_at) == (JobStatus.PENDING, past)
