"""Middleware hooks around enqueue and each job, and the structured job log records."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from pqueue import AsyncClient, InvalidJob, Job, JobReport, JobSpec, Middleware, Outcome, Router, SkipRetry
from pqueue.clock import ManualClock
from pqueue.job import EnqueueResult
from tests.worker.conftest import MakeWorker, running, settled


class Recorder(Middleware):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def before_enqueue(self, spec: JobSpec) -> JobSpec:
        self.events.append(("before_enqueue", spec.type))
        return dataclasses.replace(spec, meta={**spec.meta, "traceparent": "00-abc-01"})

    def after_enqueue(self, spec: JobSpec, result: EnqueueResult) -> None:
        self.events.append(("after_enqueue", f"{spec.type}:{result.created}"))

    def before_job(self, job: Job) -> None:
        self.events.append(("before_job", job.type))

    def on_error(self, job: Job, error: BaseException) -> None:
        self.events.append(("on_error", type(error).__name__))

    def after_job(self, report: JobReport) -> None:
        self.events.append(("after_job", f"{report.job.type}:{report.outcome}"))


class Broken(Middleware):
    def before_job(self, job: Job) -> None:
        raise RuntimeError("metrics backend down")

    def after_job(self, report: JobReport) -> None:
        raise RuntimeError("metrics backend down")


async def test_hooks_run_around_enqueue_and_each_job(
    backend_dsn: str, clock: ManualClock, client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    metas: list[dict[str, str]] = []

    @router.task("ok")
    async def ok(job: Job) -> None:
        metas.append(dict(job.meta))

    @router.task("bad")
    def bad(job: Job) -> None:
        raise SkipRetry("no")

    recorder = Recorder()
    async with AsyncClient(backend_dsn, clock=clock, middleware=[recorder]) as traced:
        good_id = (await traced.enqueue("ok", meta={"user": "7"})).id
        bad_id = (await traced.enqueue("bad")).id
    async with running(make_worker(router, concurrency=1, middleware=[Broken(), recorder])):
        await settled(client, good_id)
        await settled(client, bad_id)
    assert metas == [{"user": "7", "traceparent": "00-abc-01"}]  # enqueue middleware shaped the job
    assert recorder.events[:4] == [
        ("before_enqueue", "ok"),
        ("after_enqueue", "ok:True"),
        ("before_enqueue", "bad"),
        ("after_enqueue", "bad:True"),
    ]
    # Each job's hooks in order; across jobs only the start order is fixed (one slot, FIFO):
    # after_job runs once the ack lands, and acks are batched (ADR 0125), so the next job
    # may start first (seen on Postgres under load).
    ran = recorder.events[4:]
    ok_hooks = [("before_job", "ok"), ("after_job", "ok:completed")]
    bad_hooks = [("before_job", "bad"), ("on_error", "SkipRetry"), ("after_job", "bad:dead")]
    assert sorted(ran) == sorted(ok_hooks + bad_hooks)
    assert [e for e in ran if e in ok_hooks] == ok_hooks
    assert [e for e in ran if e in bad_hooks] == bad_hooks
    assert ran.index(("before_job", "ok")) < ran.index(("before_job", "bad"))


async def test_every_settled_job_is_logged_with_structured_fields(
    client: AsyncClient, make_worker: MakeWorker, caplog: pytest.LogCaptureFixture
) -> None:
    router = Router()

    @router.task("logged", max_retries=0)
    async def logged(job: Job) -> None:
        if job.payload == "fail":
            raise ValueError("broken input")

    good = (await client.enqueue_task(logged.task("fine"))).id
    bad = (await client.enqueue_task(logged.task("fail"))).id
    with caplog.at_level(logging.INFO, logger="pqueue.job"):
        async with running(make_worker(router, concurrency=1)):
            await settled(client, good)
            await settled(client, bad)
    records = {r.job_id: r for r in caplog.records if r.name == "pqueue.job"}  # type: ignore[attr-defined]
    done, dead = records[good], records[bad]
    for record in (done, dead):
        assert (record.job_type, record.queue, record.attempt) == ("logged", "default", 1)  # type: ignore[attr-defined]
        assert isinstance(record.duration, float) and record.duration >= 0  # type: ignore[attr-defined]
    assert (done.outcome, done.levelno) == (str(Outcome.COMPLETED), logging.INFO)  # type: ignore[attr-defined]
    assert (dead.outcome, dead.levelno) == (str(Outcome.DEAD), logging.ERROR)  # type: ignore[attr-defined]
    assert dead.error == "ValueError: broken input"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "change",
    [{"queue": "bad{q}:x y"}, {"payload_json": "not json"}, {"type": "no spaces allowed"},
     {"meta": {"bad key": "v"}}, {"max_retries": -1}],
)  # fmt: skip
async def test_a_spec_replaced_by_enqueue_middleware_is_checked_again(
    backend_dsn: str, clock: ManualClock, client: AsyncClient, change: dict[str, object]
) -> None:
    class Mangler(Middleware):
        def before_enqueue(self, spec: JobSpec) -> JobSpec:
            return dataclasses.replace(spec, **change)  # type: ignore[arg-type]

    async with AsyncClient(backend_dsn, clock=clock, middleware=[Mangler()]) as mangled:
        with pytest.raises(InvalidJob):
            await mangled.enqueue("ok", {"a": 1})
    assert sum((await client.stats()).totals.values()) == 0  # nothing was stored
