"""Seed 002's producers: ``POST /task`` and ``POST /tasks`` are aliases of ``/jobs`` and
``/jobs/batch``, with ``priority`` naming the queue and ``execute_at`` the due time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock, to_datetime
from tests.web.conftest import assert_error, stored


@pytest.mark.parametrize(
    ("priority", "queue"), [("high", "critical"), ("default", "default"), ("low", "low")]
)
async def test_post_task_maps_the_priority_to_a_queue(
    api: httpx.AsyncClient, broker: FullBroker, priority: str, queue: str
) -> None:
    response = await api.post(
        "/task", json={"type": "email.send", "payload": {"to": 1}, "priority": priority}
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["queue"] == queue and body["status"] == "pending" and body["created"] is True
    job = await broker.get_job(body["id"])
    assert (job.type, job.queue, job.payload) == ("email.send", queue, {"to": 1})


async def test_post_task_defaults_and_execute_at(
    api: httpx.AsyncClient, broker: FullBroker, clock: ManualClock
) -> None:
    plain = await api.post("/task", json={"type": "report.build"})
    assert plain.status_code == 201, plain.text
    assert plain.json()["queue"] == "default"
    later = to_datetime(clock.now()) + timedelta(hours=1)
    response = await api.post(
        "/task",
        json={"type": "report.build", "payload": [1], "priority": "low", "execute_at": later.isoformat()},
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "scheduled" and body["queue"] == "low"
    job = await broker.get_job(body["id"])
    assert job.run_at == later.astimezone(UTC)


async def test_post_tasks_takes_a_plain_array(api: httpx.AsyncClient, broker: FullBroker) -> None:
    response = await api.post(
        "/tasks",
        json=[
            {"type": "email.send", "payload": {"n": 0}, "priority": "high"},
            {"type": "email.send", "payload": {"n": 1}},
            {"type": "sms.send", "payload": {"n": 2}, "priority": "low"},
        ],
    )
    assert response.status_code == 200, response.text
    ids = [item["id"] for item in response.json()["jobs"]]
    assert len(ids) == 3 and all(item["created"] for item in response.json()["jobs"])
    jobs = [await broker.get_job(i) for i in ids]
    assert [(j.type, j.queue, j.payload) for j in jobs] == [
        ("email.send", "critical", {"n": 0}),
        ("email.send", "default", {"n": 1}),
        ("sms.send", "low", {"n": 2}),
    ]


async def test_bad_bodies_are_one_error_and_store_nothing(api: httpx.AsyncClient, broker: FullBroker) -> None:
    assert_error(await api.post("/task", json={"type": "t", "priority": "urgent"}), 422, "priority")
    assert_error(await api.post("/task", json={"type": "t", "queue": "low"}), 422, "queue")
    naive = datetime(2030, 1, 1).isoformat()  # no offset: refused
    assert_error(await api.post("/task", json={"type": "t", "execute_at": naive}), 422, "execute_at")
    assert_error(await api.post("/tasks", json=[]), 422)
    assert_error(await api.post("/tasks", json={"jobs": [{"type": "t"}]}), 422)
    bad_second = [{"type": "ok"}, {"type": "not a type!"}]
    assert_error(await api.post("/tasks", json=bad_second), 422, "jobs[1]")
    assert await stored(broker) == {}


async def test_the_read_token_cannot_post_a_task(reader: httpx.AsyncClient, broker: FullBroker) -> None:
    assert_error(await reader.post("/task", json={"type": "t"}), 403)
    assert_error(await reader.post("/tasks", json=[{"type": "t"}]), 403)
    assert await stored(broker) == {}


def test_the_schema_documents_both_aliases(app: object) -> None:
    paths = app.openapi()["paths"]  # type: ignore[attr-defined]
    assert paths["/tasks"]["post"]["requestBody"]["content"]["application/json"]["schema"]["type"] == "array"
    assert "TaskIn" in str(paths["/task"]["post"]["requestBody"])
