"""Bad requests: a 4xx JSON error naming the problem, and the broker unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from pqueue import AsyncClient
from pqueue.broker import FullBroker
from pqueue.ids import new_id
from pqueue.spec import build_spec
from pqueue.web import WebSettings, create_app
from tests.web.conftest import ADMIN, BASE, READER, assert_error, bearer, make_dead, stored

JOB_LIMIT = 4096
REQUEST_LIMIT = 64 * 1024


@pytest.fixture
def settings() -> WebSettings:
    return WebSettings(
        token=ADMIN, read_token=READER, max_job_bytes=JOB_LIMIT, max_request_bytes=REQUEST_LIMIT, max_batch=20
    )


@pytest.fixture
async def seeded(broker: FullBroker) -> dict[str, dict[str, int]]:
    """A dead job and a pending one, so 'unchanged' means something."""
    await make_dead(broker)
    await broker.enqueue([build_spec("a.b", queue="keep")])
    return await stored(broker)


async def test_malformed_json_is_400(api: httpx.AsyncClient, broker: FullBroker, seeded: object) -> None:
    for path in ("/jobs", "/jobs/batch", "/dead/requeue"):
        response = await api.post(
            path, content=b'{"type": "a.b",', headers={"Content-Type": "application/json"}
        )
        assert_error(response, 400, "not valid JSON")
    assert await stored(broker) == seeded


@pytest.mark.parametrize(
    ("job", "words"),
    [
        ({}, "type"),
        ({"type": 5}, "type"),
        ({"type": "a.b", "queue": "bad queue"}, "queue name"),
        ({"type": "a.b", "queue": "{x}"}, "queue name"),
        ({"type": "bad type!"}, "job type"),
        ({"type": "a.b", "delay": "10"}, "delay"),
        ({"type": "a.b", "delay": True}, "delay"),
        ({"type": "a.b", "delay": -1}, "delay"),
        ({"type": "a.b", "delay": 1e300}, "delay"),
        ({"type": "a.b", "unique_for": 1e300}, "unique_for"),
        ({"type": "a.b", "max_retries": 1.5}, "max_retries"),
        ({"type": "a.b", "max_retries": False}, "max_retries"),
        ({"type": "a.b", "max_retries": 10**6}, "max_retries"),
        ({"type": "a.b", "timeout": 0}, "timeout"),
        ({"type": "a.b", "run_at": "2026-01-01T00:00:00"}, "run_at"),
        ({"type": "a.b", "run_at": 1700000000}, "run_at"),
        ({"type": "a.b", "delay": 1, "run_at": "2026-01-01T00:00:00Z"}, "delay or run_at"),
        ({"type": "a.b", "unique_key": "k"}, "unique_for"),
        ({"type": "a.b", "unique_for": 10, "unique_key": "has space"}, "unique_key"),
        ({"type": "a.b", "priority": 101}, "priority"),
        ({"type": "a.b", "priority": -101}, "priority"),
        ({"type": "a.b", "priority": 1.5}, "priority"),
        ({"type": "a.b", "priority": "3"}, "priority"),
        ({"type": "a.b", "priority": True}, "priority"),
        ({"type": "a.b", "prio": 3}, "prio"),
        ({"type": "a.b", "rate": "100/x"}, "rate"),
        ({"type": "a.b", "rate": 100}, "rate"),
        ({"type": "a.b", "concurrency": 0}, "concurrency"),
        ({"type": "a.b", "concurrency": 1.5}, "concurrency"),
        ({"type": "a.b", "concurrency": "2"}, "concurrency"),
        ({"type": "a.b", "limit_key": "acme"}, "rate= and/or concurrency="),
        ({"type": "a.b", "limit_key": "has space", "concurrency": 1}, "limit key"),
        ({"type": "a.b", "depends_on": ["not-an-id"]}, "depends_on"),
        ({"type": "a.b", "depends_on": "01a21846-6f63-71c7-8a07-71f988ac91fe"}, "depends_on"),
        ({"type": "a.b", "depends_on": [new_id()], "on_parent_failure": "ignore"}, "on_parent_failure"),
        ({"type": "a.b", "unique_for": 60, "unique_until": "forever"}, "unique_until"),
        ({"type": "a.b", "unique_until": "done"}, "unique_for"),
        ({"type": "a.b", "depends_on": [new_id()], "unique_for": 60}, "depends_on"),
    ],
)
async def test_bad_job_is_422_naming_the_field(
    api: httpx.AsyncClient, broker: FullBroker, seeded: object, job: dict[str, object], words: str
) -> None:
    assert_error(await api.post("/jobs", json=job), 422, words)
    body = assert_error(await api.post("/jobs/batch", json={"jobs": [{"type": "ok.job"}, job]}), 422, words)
    assert "jobs[1]" in body["detail"]
    assert await stored(broker) == seeded


async def test_batch_shape_and_length(api: httpx.AsyncClient, broker: FullBroker, seeded: object) -> None:
    assert_error(await api.post("/jobs/batch", json={"jobs": []}), 422, "jobs")
    assert_error(await api.post("/jobs/batch", json=[{"type": "a.b"}]), 422, "JSON object")
    assert_error(await api.post("/jobs/batch", json={"jobs": [{"type": "a.b"}] * 21}), 422, "at most 20")
    assert await stored(broker) == seeded


async def test_oversized_bodies_are_413(api: httpx.AsyncClient, broker: FullBroker, seeded: object) -> None:
    big = {"type": "a.b", "payload": "x" * JOB_LIMIT}
    assert_error(await api.post("/jobs", json=big), 413, str(JOB_LIMIT))
    batch = {"jobs": [{"type": "a.b", "payload": "x" * 1000}] * 19 * 4}
    assert_error(await api.post("/jobs/batch", json=batch), 413, str(REQUEST_LIMIT))

    async def chunked() -> object:  # no Content-Length: counted while it arrives
        for _ in range(100):
            yield b"x" * 1024

    response = await api.post("/jobs/batch", content=chunked(), headers={"Content-Type": "application/json"})
    assert_error(response, 413, str(REQUEST_LIMIT))
    assert await stored(broker) == seeded


async def test_payload_over_the_per_job_limit_in_a_batch(app_client: AsyncClient, broker: FullBroker) -> None:
    """With the default limits, each job is held to 1 MiB inside a 16 MiB batch."""
    app = create_app(app_client, token=ADMIN, registry=CollectorRegistry())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=bearer(ADMIN)) as api:
        jobs = [{"type": "a.b", "payload": "x" * 1000}, {"type": "a.b", "payload": "x" * (1024 * 1024 + 1)}]
        body = assert_error(await api.post("/jobs/batch", json={"jobs": jobs}), 413, "jobs[1]")
        assert body["error"] == "too_large" and "1048576" in body["detail"]
    assert await stored(broker) == {}


@dataclass(frozen=True)
class BatchRoute:
    """One path that serves a batch: the same rules must hold on each."""

    path: str
    content_type: str
    wrap: Callable[[list[dict[str, Any]]], object]

    async def post(self, api: httpx.AsyncClient, jobs: list[dict[str, Any]]) -> httpx.Response:
        body = json.dumps(self.wrap(jobs))
        return await api.post(self.path, content=body, headers={"Content-Type": self.content_type})


BATCH_ROUTES = {
    "fast": BatchRoute("/jobs/batch", "application/json", lambda jobs: {"jobs": jobs}),  # web/fast.py
    "routed": BatchRoute("/jobs/batch", "application/vnd.api+json", lambda jobs: {"jobs": jobs}),  # FastAPI
    "tasks": BatchRoute("/tasks", "application/json", lambda jobs: jobs),
}


@pytest.mark.parametrize("route", BATCH_ROUTES.values(), ids=BATCH_ROUTES.keys())
async def test_a_batch_with_one_job_over_the_job_limit_is_refused_whole(
    api: httpx.AsyncClient, broker: FullBroker, seeded: object, route: BatchRoute
) -> None:
    """A job that ``POST /jobs`` refuses for its size is refused inside a batch too (the body
    itself is well under the request limit), with the same error, naming the job."""
    alone = {"type": "a.b", "payload": "x" * JOB_LIMIT}
    assert_error(await api.post("/jobs", json=alone), 413, str(JOB_LIMIT))
    jobs = [{"type": "a.b", "payload": "small"}, alone, {"type": "a.b", "payload": "small"}]
    body = assert_error(await route.post(api, jobs), 413, "jobs[1]", str(JOB_LIMIT))
    assert body["error"] == "too_large"
    assert await stored(broker) == seeded
    fits = [{"type": "a.b", "payload": "x" * (JOB_LIMIT - 100)}] * 3  # each fits; together they do not
    response = await route.post(api, fits)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("route", BATCH_ROUTES.values(), ids=BATCH_ROUTES.keys())
@pytest.mark.parametrize(
    "case",
    [
        ({"type": 5}, "jobs[1].type: "),  # refused by the request's schema
        ({"type": "not a type!"}, "jobs[1]: invalid job type"),  # refused by pqueue.spec
    ],
    ids=["schema", "spec"],
)
async def test_a_bad_job_in_a_batch_is_named_jobs_i_on_every_route(
    api: httpx.AsyncClient,
    broker: FullBroker,
    seeded: object,
    route: BatchRoute,
    case: tuple[dict[str, Any], str],
) -> None:
    """One form, the documented one: ``POST /tasks`` named the second job ``[1].type``."""
    job, named = case
    response = await route.post(api, [{"type": "ok.job"}, job])
    assert assert_error(response, 422)["detail"].startswith(named)
    assert await stored(broker) == seeded


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({}, "status"),
        ({"status": "exploded"}, "status"),
        ({"status": "dead", "limit": 0}, "limit"),
        ({"status": "dead", "limit": "ten"}, "limit"),
        ({"status": "dead", "queue": "bad queue"}, "queue name"),
        ({"status": "dead", "cursor": "abc"}, "cursor"),
    ],
)
async def test_bad_list_queries_are_422(
    api: httpx.AsyncClient, params: dict[str, object], words: str
) -> None:
    assert_error(await api.get("/jobs", params=params), 422, words)


async def test_a_single_valued_query_parameter_given_twice_is_422(
    api: httpx.AsyncClient, broker: FullBroker, seeded: object
) -> None:
    """Found by the fuzzer: ``cursor=<junk>&cursor=40`` was answered from the last value."""
    assert_error(await api.get("/jobs?status=dead&cursor=abc&cursor=40"), 422, "'cursor'", "more than once")
    assert_error(await api.delete("/dead?queue=q&queue=other"), 422, "'queue'", "more than once")
    assert await stored(broker) == seeded
    listed = await api.get("/jobs", params={"status": "dead"})
    assert listed.status_code == 200


async def test_bad_dead_actions_are_4xx_and_change_nothing(
    api: httpx.AsyncClient, broker: FullBroker, seeded: object
) -> None:
    assert_error(await api.post("/dead/requeue", json={"all": True}), 422, "all")
    assert_error(await api.post("/dead/requeue", json={"queue": "bad queue"}), 422, "queue name")
    assert_error(await api.post("/dead/requeue", json={"ids": "not-a-list"}), 422, "ids")
    assert_error(await api.delete("/dead", params={"queue": "q", "older_than": "soon"}), 422, "older_than")
    assert_error(await api.delete("/dead", params={"queue": "bad queue"}), 422, "queue name")
    assert (await api.post("/dead/requeue", json={"ids": [new_id(), "junk"]})).json() == {"count": 0}
    assert await stored(broker) == seeded


async def test_unknown_ids_and_paths_are_404(
    api: httpx.AsyncClient, broker: FullBroker, seeded: object
) -> None:
    for job_id in (new_id(), "not-a-uuid"):
        assert_error(await api.get(f"/jobs/{job_id}"), 404, "job")
        assert_error(await api.delete(f"/jobs/{job_id}"), 404, "job")
    assert_error(await api.get("/nope"), 404, "/nope")
    assert_error(await api.put("/jobs"), 405)
    assert await stored(broker) == seeded
