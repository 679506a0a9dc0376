"""A task's declarations hold wherever its jobs come from, in real processes (issue 34 §4).

The README's case: ``@router.task("charge:card", max_retries=1)`` and a job enqueued by
``pqueue enqueue charge:card`` (no router in that process) ran 4 times; the worker now
takes the task's max_retries. The queue is chosen before any worker sees the job, so
``pqueue enqueue --app`` and ``pqueue serve --app`` (``PQUEUE_APP``) load the router and
apply its declarations as ``Client(dsn, router=...)`` does.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from pqueue import AsyncClient, JobStatus
from tests.conftest import only_backends
from tests.records import record_lines
from tests.web.browser import serving
from tests.web.conftest import ADMIN, bearer
from tests.worker.conftest import eventually
from tests.worker.test_cli import pqueue

APP = "tests.worker.apps.declared_app:router"


async def _finished(proc_args: tuple[str, ...]) -> tuple[int, str, str]:
    proc = pqueue(*proc_args)
    out, err = await asyncio.to_thread(proc.communicate, timeout=60)
    return proc.returncode, out, err


@only_backends("redis", "postgres", "sqlite")
async def test_pqueue_enqueue_without_the_router_runs_the_tasks_max_retries(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    code, out, err = await _finished(("enqueue", "charge:card", "--dsn", backend_dsn, "--payload", "{}"))
    assert code == 0, err
    job_id = out.strip()
    worker = pqueue("worker", APP, "--dsn", backend_dsn, "--queues", "default", record=record)
    try:
        async with AsyncClient(backend_dsn) as client:

            async def dead() -> bool:
                return (await client.get_job(job_id)).status is JobStatus.DEAD

            await eventually(dead, timeout=60, what="the job to be dead")
            job = await client.get_job(job_id)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, worker_err = await asyncio.to_thread(worker.communicate, timeout=60)
    assert worker.returncode == 0, worker_err
    assert job.attempt == 2  # max_retries=1: two runs, not the default's four
    assert [fields[1:] for fields in record_lines(record)] == [[job_id, "1"], [job_id, "1"]]


@only_backends("redis", "sqlite")
async def test_pqueue_enqueue_app_applies_the_tasks_queue_and_refuses_unknown_types(
    backend_dsn: str, pqueue_open_broker: object
) -> None:
    code, out, err = await _finished(("enqueue", "--app", APP, "email:welcome", "--dsn", backend_dsn))
    assert code == 0, err
    routed = out.strip()
    code, out, err = await _finished(("enqueue", "email:welcome", "--dsn", backend_dsn))
    assert code == 0, err
    plain = out.strip()
    code, out, err = await _finished(("enqueue", "--app", APP, "email:welcom", "--dsn", backend_dsn))
    assert code != 0 and out == ""
    assert "did you mean 'email:welcome'?" in err and err.count("\n") == 1
    code, out, err = await _finished(
        ("enqueue", "--app", "tests.worker.apps.nowhere:router", "x", "--dsn", backend_dsn)
    )
    assert code != 0 and "cannot import" in err
    async with AsyncClient(backend_dsn) as client:
        assert (await client.get_job(routed)).queue == "critical"
        assert (await client.get_job(plain)).queue == "default"  # no router: the default
        assert (await client.stats()).total(JobStatus.PENDING) == 2  # the typo stored nothing


@pytest.mark.parametrize("via", ["flag", "env"])
@only_backends("sqlite")
def test_pqueue_serve_app_applies_the_tasks_queue(
    backend_dsn: str, pqueue_open_broker: object, via: str
) -> None:
    env = {"PQUEUE_API_TOKEN": ADMIN}
    if via == "env":
        env["PQUEUE_APP"] = APP
    with serving(backend_dsn, env, extra=["--app", APP] if via == "flag" else []) as base:
        one = httpx.post(base + "jobs", json={"type": "email:welcome"}, headers=bearer(ADMIN), timeout=30)
        batch = httpx.post(
            base + "jobs/batch",
            json={"jobs": [{"type": "email:welcome", "payload": i} for i in range(2)]},
            headers=bearer(ADMIN),
            timeout=30,
        )
        unknown = httpx.post(base + "jobs", json={"type": "email:welcom"}, headers=bearer(ADMIN), timeout=30)
        ids = [one.json()["id"], *(job["id"] for job in batch.json()["jobs"])]
        stored = [httpx.get(base + f"jobs/{i}", headers=bearer(ADMIN), timeout=30).json() for i in ids]
        pending = httpx.get(base + "stats", headers=bearer(ADMIN), timeout=30).json()
    assert (one.status_code, one.json()["queue"]) == (201, "critical")
    assert batch.status_code == 200, batch.text
    assert [job["queue"] for job in stored] == ["critical"] * 3
    assert unknown.status_code == 422 and "did you mean 'email:welcome'?" in unknown.json()["detail"]
    assert set(pending["queues"]) == {"critical"}, pending
