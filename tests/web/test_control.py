"""The control endpoints: pause/resume a queue (admin token), paused state in the answers,
and DELETE /jobs/{id} reaching running jobs; on memory, Redis and Postgres."""

from __future__ import annotations

import httpx

from pqueue.broker import FullBroker
from pqueue.job import JobStatus
from pqueue.spec import build_spec
from tests.web.conftest import stored


async def test_pause_and_resume_a_queue(api: httpx.AsyncClient, broker: FullBroker) -> None:
    await broker.enqueue([build_spec("email.send", 1, queue="mail")])
    paused = await api.post("/queues/mail/pause")
    assert paused.status_code == 200 and paused.json() == {"queue": "mail", "paused": True, "changed": True}
    assert (await api.post("/queues/mail/pause")).json()["changed"] is False
    assert await broker.claim(["mail"], worker_id="w", limit=5, lease_for=30) == []
    assert (await api.get("/queues/paused")).json() == {"paused": ["mail"]}
    [queue] = (await api.get("/queues")).json()["queues"]
    assert queue["name"] == "mail" and queue["paused"] is True
    assert (await api.get("/stats")).json()["paused"] == ["mail"]
    resumed = await api.post("/queues/mail/resume")
    assert resumed.json() == {"queue": "mail", "paused": False, "changed": True}
    assert (await api.get("/queues")).json()["queues"][0]["paused"] is False
    assert len(await broker.claim(["mail"], worker_id="w", limit=5, lease_for=30)) == 1


async def test_pausing_needs_the_admin_token_and_a_queue_name(
    api: httpx.AsyncClient, reader: httpx.AsyncClient, anon: httpx.AsyncClient, broker: FullBroker
) -> None:
    assert (await anon.post("/queues/mail/pause")).status_code == 401
    assert (await reader.post("/queues/mail/pause")).status_code == 403
    assert (await reader.get("/queues/paused")).json() == {"paused": []}  # reading is allowed
    bad = await api.post("/queues/no%20spaces/pause")
    assert bad.status_code == 422, bad.text
    assert await broker.paused_queues() == [] and await stored(broker) == {}


async def test_delete_job_cancels_a_running_job(api: httpx.AsyncClient, broker: FullBroker) -> None:
    [result] = await broker.enqueue([build_spec("email.send", 1)])
    [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
    answer = await api.delete(f"/jobs/{result.id}")
    assert answer.json() == {"id": result.id, "cancelled": True}
    assert (await broker.get_job(result.id)).status is JobStatus.CANCELLED
    assert await broker.ack([lease]) == [False]
    assert (await api.delete(f"/jobs/{result.id}")).json()["cancelled"] is False
