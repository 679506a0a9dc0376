"""The worker never dies of one bad job or one unexpected failure of its claim loop."""

from __future__ import annotations

from typing import Any

import pytest

from pqueue import AsyncClient, Job, JobStatus, Router
from pqueue.broker import FullBroker
from tests.worker.conftest import MakeWorker, running, settled


async def test_an_unexpected_claim_failure_is_logged_and_retried(
    client: AsyncClient,
    make_worker: MakeWorker,
    broker: FullBroker,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    router = Router()
    ran: list[str] = []

    @router.task("r:job")
    async def job(job: Job) -> None:
        ran.append(job.id)

    real_claim = type(broker).claim
    failures = [RuntimeError("something nobody foresaw")]

    async def flaky_claim(self: Any, *args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return await real_claim(self, *args, **kwargs)

    monkeypatch.setattr(type(broker), "claim", flaky_claim)
    job_id = (await client.enqueue("r:job")).id
    async with running(make_worker(router)):
        done = await settled(client, job_id)
    assert done.status is JobStatus.COMPLETED and ran == [job_id]
    assert "claim failed unexpectedly" in caplog.text and "something nobody foresaw" in caplog.text


async def test_a_result_too_deep_for_json_completes_the_job_without_it(
    client: AsyncClient, make_worker: MakeWorker
) -> None:
    router = Router()
    runs: list[int] = []

    @router.task("r:deep")
    async def deep(job: Job) -> object:
        runs.append(job.attempt)
        value: list[object] = []
        for _ in range(50_000):
            value = [value]
        return value

    job_id = (await client.enqueue("r:deep")).id
    async with running(make_worker(router)):
        done = await settled(client, job_id)
    assert (done.status, done.result, runs) == (JobStatus.COMPLETED, None, [1])
