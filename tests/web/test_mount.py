"""create_app inside a user's ASGI app, and the last-resort error path."""

from __future__ import annotations

import logging

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.routing import Mount

from pqueue import AsyncClient
from pqueue.broker import FullBroker
from pqueue.web import create_app
from tests.web.conftest import ADMIN, BASE, assert_error, bearer, stored


@pytest.mark.parametrize("host", [FastAPI, Starlette])
async def test_mounted_under_a_prefix(app_client: AsyncClient, broker: FullBroker, host: type) -> None:
    pqueue_app = create_app(app_client, token=ADMIN, registry=CollectorRegistry())
    if host is FastAPI:
        outer = FastAPI()
        outer.mount("/pqueue", pqueue_app)
    else:
        outer = Starlette(routes=[Mount("/pqueue", app=pqueue_app)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=outer), base_url=BASE) as http:
        assert (await http.get("/pqueue/healthz")).status_code == 200
        assert (await http.get("/pqueue/")).status_code == 200
        assert (await http.get("/pqueue/static/app.js")).status_code == 200
        assert_error(await http.get("/pqueue/stats"), 401)
        assert_error(await http.post("/pqueue/jobs", json={"type": "a.b"}), 401)
        created = await http.post("/pqueue/jobs", json={"type": "a.b"}, headers=bearer(ADMIN))
        assert created.status_code == 201
        listed = await http.get("/pqueue/jobs", params={"status": "pending"}, headers=bearer(ADMIN))
        assert [job["id"] for job in listed.json()["jobs"]] == [created.json()["id"]]
    assert await stored(broker) == {"default": {"pending": 1}}


async def test_an_unexpected_error_is_a_json_500_without_traceback_or_password(
    app_client: AsyncClient,
    api: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken() -> None:
        raise RuntimeError("lost redis://ops:s3cr3t-pw@10.0.0.5:6379/0")

    monkeypatch.setattr(app_client, "stats", broken)
    with caplog.at_level(logging.DEBUG, logger="pqueue.web"):
        response = await api.get("/stats")
    body = assert_error(response, 500)
    assert body == {"error": "internal", "detail": "internal error; the server log has the cause"}
    assert "RuntimeError" in caplog.text and "ops:***@10.0.0.5" in caplog.text
    assert "s3cr3t-pw" not in caplog.text and "Traceback" not in caplog.text
    assert all(record.exc_info is None for record in caplog.records)
