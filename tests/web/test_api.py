"""Every endpoint's success path, on memory, Redis and Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.ids import new_id
from tests.web.conftest import assert_error, make_dead, stored


async def test_post_job_stores_it_and_answers_201(api: httpx.AsyncClient, broker: FullBroker) -> None:
    response = await api.post("/jobs", json={"type": "email.send", "payload": {"to": "ada@example.com"}})
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"id", "queue", "status", "run_at", "created"}
    assert body["queue"] == "default" and body["status"] == "pending" and body["created"] is True
    job = await broker.get_job(body["id"])
    assert job.type == "email.send" and job.payload == {"to": "ada@example.com"}


async def test_post_job_takes_every_option(
    api: httpx.AsyncClient, broker: FullBroker, clock: ManualClock
) -> None:
    response = await api.post(
        "/jobs",
        json={
            "type": "report.build",
            "payload": [1, 2],
            "queue": "low",
            "delay": 120,
            "max_retries": 7,
            "timeout": 30.5,
            "idempotency_key": "report-2026-11",
            "priority": -20,
        },
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "scheduled" and body["queue"] == "low"
    job = await broker.get_job(body["id"])
    assert job.priority == -20
    assert (await api.get(f"/jobs/{body['id']}")).json()["priority"] == -20
    assert (job.queue, job.max_retries, job.timeout, job.idempotency_key) == (
        "low",
        7,
        30.5,
        "report-2026-11",
    )
    assert job.status.value == "scheduled"
    at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    later = await api.post("/jobs", json={"type": "report.build", "run_at": at.isoformat()})
    assert later.json()["status"] == "scheduled"
    assert (await broker.get_job(later.json()["id"])).run_at == at


async def test_post_job_takes_limits_and_parents(api: httpx.AsyncClient, broker: FullBroker) -> None:
    """The options of docs/limits.md and docs/workflows.md, for producers without Python."""
    limited = await api.post(
        "/jobs", json={"type": "report.export", "limit_key": "acme", "rate": "20/s", "concurrency": 2}
    )
    assert limited.status_code == 201, limited.text
    assert (await broker.get_job(limited.json()["id"])).limit_key == "acme"
    [group] = [g for g in await broker.limit_groups() if g.key == "acme"]
    assert (group.queue, group.waiting, group.concurrency, group.rate) == ("default", 1, 2, 20.0)
    parent = (await api.post("/jobs", json={"type": "report.build"})).json()["id"]
    child = await api.post(
        "/jobs", json={"type": "report.mail", "depends_on": [parent], "on_parent_failure": "run"}
    )
    assert child.status_code == 201, child.text
    assert child.json()["status"] == "waiting" and child.json()["created"] is True
    job = await broker.get_job(child.json()["id"])
    assert (job.status.value, job.depends_on) == ("waiting", (parent,))
    batch = await api.post(
        "/jobs/batch",
        json={
            "jobs": [
                {"type": "report.export", "limit_key": "initech", "concurrency": 1},
                {"type": "report.export", "limit_key": "initech", "concurrency": 1},
                {"type": "report.mail", "depends_on": [parent]},
            ]
        },
    )
    assert batch.status_code == 200, batch.text
    first, second, third = [await broker.get_job(a["id"]) for a in batch.json()["jobs"]]
    assert (first.limit_key, second.limit_key) == ("initech", "initech")
    assert (third.status.value, third.depends_on) == ("waiting", (parent,))
    limited_child = await api.post(
        "/jobs", json={"type": "report.mail", "depends_on": [parent], "limit_key": "acme", "concurrency": 1}
    )
    assert limited_child.status_code == 201, limited_child.text  # limits and parents together
    assert (await broker.get_job(limited_child.json()["id"])).limit_key == "acme"


async def test_a_parent_that_does_not_exist_is_404_and_stores_nothing(
    api: httpx.AsyncClient, broker: FullBroker
) -> None:
    missing = new_id()
    for path, body in (
        ("/jobs", {"type": "report.mail", "depends_on": [missing]}),
        ("/jobs/batch", {"jobs": [{"type": "a.b"}, {"type": "report.mail", "depends_on": [missing]}]}),
    ):
        assert_error(await api.post(path, json=body), 404, missing, "nothing was stored")
    assert await stored(broker) == {}


async def test_unique_key_match_answers_200_with_the_existing_job(
    api: httpx.AsyncClient, broker: FullBroker
) -> None:
    job = {"type": "sync.account", "payload": {"id": 9}, "unique_for": 60, "unique_key": "account-9"}
    first = await api.post("/jobs", json=job)
    second = await api.post("/jobs", json=job)
    assert first.status_code == 201 and second.status_code == 200, second.text
    assert second.json()["id"] == first.json()["id"] and second.json()["created"] is False
    assert second.json()["status"] == "pending"
    assert await stored(broker) == {"default": {"pending": 1}}


async def test_batch_enqueues_in_request_order(api: httpx.AsyncClient, broker: FullBroker) -> None:
    jobs = [{"type": "thumb.make", "payload": {"n": i}, "queue": "images"} for i in range(50)]
    jobs.append({"type": "thumb.make", "payload": {"n": 0}, "unique_for": 60, "unique_key": "k-1"})
    jobs.append({"type": "thumb.make", "payload": {"n": 1}, "unique_for": 60, "unique_key": "k-1"})
    response = await api.post("/jobs/batch", json={"jobs": jobs})
    assert response.status_code == 200, response.text
    answers = response.json()["jobs"]
    assert len(answers) == 52
    assert [a["created"] for a in answers] == [True] * 51 + [False]
    assert answers[51]["id"] == answers[50]["id"]
    for i in (0, 17, 49):
        assert (await broker.get_job(answers[i]["id"])).payload == {"n": i}
    assert await stored(broker) == {"images": {"pending": 50}, "default": {"pending": 1}}


async def test_get_cancel_and_list_jobs(api: httpx.AsyncClient) -> None:
    ids = [
        (await api.post("/jobs", json={"type": "a.b", "payload": i, "queue": "q1"})).json()["id"]
        for i in range(5)
    ]
    job = (await api.get(f"/jobs/{ids[0]}")).json()
    assert job["id"] == ids[0] and job["payload"] == 0 and job["status"] == "pending" and job["errors"] == []
    cancelled = await api.delete(f"/jobs/{ids[0]}")
    assert cancelled.status_code == 200 and cancelled.json() == {"id": ids[0], "cancelled": True}
    assert (await api.get(f"/jobs/{ids[0]}")).json()["status"] == "cancelled"
    first = (await api.get("/jobs", params={"status": "pending", "queue": "q1", "limit": 3})).json()
    assert len(first["jobs"]) == 3 and first["next_cursor"] is not None
    rest = (
        await api.get("/jobs", params={"status": "pending", "limit": 3, "cursor": first["next_cursor"]})
    ).json()
    assert len(rest["jobs"]) == 1 and rest["next_cursor"] is None
    assert {j["id"] for j in first["jobs"] + rest["jobs"]} == set(ids[1:])
    by_type = (await api.get("/jobs", params={"status": "pending", "type": "other.type"})).json()
    assert by_type == {"jobs": [], "next_cursor": None}


async def test_queues_stats_and_workers(api: httpx.AsyncClient, broker: FullBroker) -> None:
    await api.post("/jobs/batch", json={"jobs": [{"type": "a.b", "queue": "fast"}] * 3 + [{"type": "a.b"}]})
    await make_dead(broker, "fast")
    queues = (await api.get("/queues")).json()["queues"]
    assert [q["name"] for q in queues] == ["default", "fast"]
    fast = queues[1]
    assert fast["jobs"]["pending"] == 3 and fast["jobs"]["dead"] == 1
    assert fast["oldest_pending_age"] is not None and fast["done_per_second"] >= 0
    stats = (await api.get("/stats")).json()
    assert stats["totals"]["pending"] == 4 and stats["totals"]["dead"] == 1
    assert set(stats) == {
        "queues",
        "totals",
        "oldest_pending_age",
        "done_per_second",
        "workers",
        "paused",
        "limits",
    }
    assert (await api.get("/workers")).json() == {"workers": []}


async def test_requeue_dead_by_id_and_by_queue(api: httpx.AsyncClient, broker: FullBroker) -> None:
    one, two = await make_dead(broker, "mail", n=2)
    [other] = await make_dead(broker, "sms")
    dead = (await api.get("/jobs", params={"status": "dead", "queue": "mail"})).json()["jobs"]
    assert {j["id"] for j in dead} == {one, two}
    assert dead[0]["errors"][-1]["kind"] == "SMTPError"
    response = await api.post("/dead/requeue", json={"ids": [one]})
    assert response.json() == {"count": 1}
    assert (await broker.get_job(one)).status.value == "pending"
    assert (await api.post("/dead/requeue", json={"queue": "sms"})).json() == {"count": 1}
    assert (await broker.get_job(other)).status.value == "pending"
    assert (await api.post("/dead/requeue", json={})).json() == {"count": 1}  # every dead job
    assert await stored(broker) == {"mail": {"pending": 2}, "sms": {"pending": 1}}


async def test_purge_dead_by_queue_age_and_id(
    api: httpx.AsyncClient, broker: FullBroker, clock: ManualClock
) -> None:
    await make_dead(broker, "mail", n=2)
    [sms] = await make_dead(broker, "sms")
    assert (await api.delete("/dead", params={"queue": "mail", "older_than": "1h"})).json() == {"count": 0}
    clock.advance(7200)
    assert (await api.delete("/dead", params={"queue": "mail", "older_than": "1h"})).json() == {"count": 2}
    assert (await api.delete("/dead", params={"ids": sms})).json() == {"count": 1}
    assert await stored(broker) == {}
    await make_dead(broker, "mail")
    await make_dead(broker, "sms")
    assert (await api.delete("/dead")).json() == {"count": 2}  # no filter: every dead job
    assert await stored(broker) == {}


async def test_probes_metrics_session_and_dashboard(
    api: httpx.AsyncClient, reader: httpx.AsyncClient
) -> None:
    assert (await api.get("/healthz")).json()["status"] == "ok"
    ready = await api.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ok"
    await api.post("/jobs", json={"type": "a.b", "queue": "metered"})
    text = (await api.get("/metrics")).text
    assert 'pqueue_jobs_enqueued_total{queue="metered",type="a.b"} 1.0' in text
    assert 'pqueue_queue_jobs{queue="metered",status="pending"} 1.0' in text
    assert 'pqueue_http_requests_total{method="POST",route="/jobs",status="201"} 1.0' in text
    assert 'pqueue_http_request_seconds_count{method="POST",route="/jobs"} 1.0' in text
    assert (await api.get("/session")).json() == {"role": "admin"}
    assert (await reader.get("/session")).json() == {"role": "read"}
    page = await api.get("/")
    assert page.status_code == 200 and "<title>pqueue</title>" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert (await api.get("/static/app.js")).status_code == 200
    schema = (await api.get("/openapi.json")).json()
    assert {
        "/jobs",
        "/jobs/batch",
        "/jobs/{job_id}",
        "/queues",
        "/stats",
        "/workers",
        "/dead",
        "/dead/requeue",
    } <= set(schema["paths"])
    assert schema["paths"]["/jobs"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in schema["paths"]["/healthz"]["get"]
    assert (await api.get("/docs")).status_code == 200


async def test_batch_of_one_type_and_options_matches_enqueue_semantics(
    api: httpx.AsyncClient, broker: FullBroker
) -> None:
    """A batch whose jobs share type and options goes through Client.enqueue_map: the same
    answers as job-by-job enqueue, derived unique keys included."""
    jobs = [
        {"type": "push.send", "payload": p, "queue": "push", "unique_for": 60, "max_retries": 1}
        for p in (1, 1, 2)
    ]
    answers = (await api.post("/jobs/batch", json={"jobs": jobs})).json()["jobs"]
    assert [a["created"] for a in answers] == [True, False, True]
    assert answers[1]["id"] == answers[0]["id"]
    job = await broker.get_job(answers[2]["id"])
    assert (job.queue, job.payload, job.max_retries) == ("push", 2, 1)
    single = await api.post(
        "/jobs", json={"type": "push.send", "payload": 2, "queue": "push", "unique_for": 60}
    )
    assert single.status_code == 200 and single.json()["id"] == answers[2]["id"]


async def test_post_job_answers_alike_on_the_fast_path_and_the_route(
    api: httpx.AsyncClient, broker: FullBroker
) -> None:
    """application/json takes pqueue.web.fast; another JSON type goes through FastAPI's
    route; both answer with the same function."""
    body = b'{"type": "a.b", "payload": {"k": 1}, "queue": "twice", "delay": 60}'
    fast = await api.post("/jobs", content=body, headers={"Content-Type": "application/json"})
    routed = await api.post("/jobs", content=body, headers={"Content-Type": "application/vnd.pqueue+json"})
    assert fast.status_code == routed.status_code == 201
    assert {k: v for k, v in fast.json().items() if k not in ("id", "run_at")} == {
        k: v for k, v in routed.json().items() if k not in ("id", "run_at")
    }
    bad = b'{"type": "a.b", "queue": 7}'
    for content_type in ("application/json", "application/vnd.pqueue+json"):
        answer = await api.post("/jobs", content=bad, headers={"Content-Type": content_type})
        assert answer.status_code == 422 and answer.json()["detail"].startswith("queue:")
    plain = await api.post("/jobs", content=body, headers={"Content-Type": "text/plain"})
    assert plain.status_code == 422 and "JSON object" in plain.json()["detail"]
    assert await stored(broker) == {"twice": {"scheduled": 2}}


async def test_post_batch_answers_alike_on_the_fast_path_and_the_route(
    api: httpx.AsyncClient, broker: FullBroker
) -> None:
    """The same for ``POST /jobs/batch``: one parse on the fast path, the route's answer."""
    jobs = b'{"jobs": [{"type": "a.b", "payload": 1, "queue": "both"}, {"type": "a.c", "queue": "both"}]}'
    answers = []
    for content_type in ("application/json", "application/vnd.pqueue+json"):
        answer = await api.post("/jobs/batch", content=jobs, headers={"Content-Type": content_type})
        assert answer.status_code == 200
        answers.append([item["created"] for item in answer.json()["jobs"]])
        bad = b'{"jobs": [{"type": "a.b"}, {"type": "a.b", "queue": "no spaces"}]}'
        refused = await api.post("/jobs/batch", content=bad, headers={"Content-Type": content_type})
        assert refused.status_code == 422 and refused.json()["detail"].startswith("jobs[1]"), refused.text
        headers = {"Content-Type": content_type}
        malformed = await api.post("/jobs/batch", content=b'{"jobs": [', headers=headers)
        assert malformed.status_code == 400, malformed.text
    assert answers == [[True, True], [True, True]]
    assert await stored(broker) == {"both": {"pending": 4}}
