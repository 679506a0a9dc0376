"""Tokens: missing and wrong tokens get 401, the read-only token 403 on writes, and a
refused request writes nothing. Open paths stay open; settings refuse unsafe setups."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client import CollectorRegistry

from pqueue import AsyncClient
from pqueue.broker import FullBroker
from pqueue.errors import ConfigError
from pqueue.web import WebSettings, create_app
from pqueue.web.auth import Role, Tokens
from tests.web.conftest import ADMIN, BASE, READER, assert_error, bearer, make_dead, stored

WRITES = [
    ("POST", "/jobs", {"type": "a.b"}),
    ("POST", "/jobs/batch", {"jobs": [{"type": "a.b"}]}),
    ("POST", "/dead/requeue", {}),
]


@pytest.mark.parametrize("write", WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "no bearer token"),
        (bearer("wrong-token-0123456789abcdef"), "a wrong bearer token"),
        ({"Authorization": f"Basic {ADMIN}"}, "lacks the 'Bearer ' scheme"),
        ({"Authorization": ADMIN}, "lacks the 'Bearer ' scheme"),
        ({"Authorization": "Bearer"}, "an empty bearer token"),
    ],
    ids=["missing", "wrong", "not-bearer", "no-scheme", "empty"],
)
async def test_no_valid_token_is_401_and_writes_nothing(
    anon: httpx.AsyncClient,
    broker: FullBroker,
    write: tuple[str, str, object],
    headers: dict[str, str],
    why: str,
) -> None:
    method, path, body = write
    dead = await make_dead(broker)
    before = await stored(broker)
    response = await anon.request(method, path, json=body, headers=headers)
    detail = assert_error(response, 401, why, "send Authorization: Bearer <token>")["detail"]
    assert ADMIN not in detail  # what was sent is never echoed
    assert response.headers["www-authenticate"] == "Bearer"
    assert await stored(broker) == before
    assert (await broker.get_job(dead[0])).status.value == "dead"


async def test_no_token_is_401_before_the_body_is_read(anon: httpx.AsyncClient, broker: FullBroker) -> None:
    """Malformed or huge bodies without a token are refused as unauthorised, unparsed."""
    assert_error(await anon.post("/jobs", content=b"{not json"), 401)
    assert_error(await anon.post("/jobs/batch", content=b"x" * (17 * 1024 * 1024)), 401)
    assert await stored(broker) == {}


@pytest.mark.parametrize(
    "path", ["/jobs?status=pending", "/queues", "/stats", "/workers", "/session", "/metrics", "/jobs/x"]
)
async def test_reads_need_a_token(anon: httpx.AsyncClient, path: str) -> None:
    assert_error(await anon.get(path), 401)


async def test_read_only_token_reads_but_cannot_write(reader: httpx.AsyncClient, broker: FullBroker) -> None:
    [dead] = await make_dead(broker)
    before = await stored(broker)
    for path in ("/queues", "/stats", "/workers", "/jobs?status=dead", f"/jobs/{dead}", "/metrics"):
        assert (await reader.get(path)).status_code == 200, path
    for method, path, body in [*WRITES, ("DELETE", f"/jobs/{dead}", None), ("DELETE", "/dead", None)]:
        assert_error(await reader.request(method, path, json=body), 403, "read-only")
    assert await stored(broker) == before


async def test_probes_and_pages_without_data_are_open(anon: httpx.AsyncClient) -> None:
    for path in ("/healthz", "/readyz", "/", "/static/app.js", "/openapi.json", "/docs"):
        assert (await anon.get(path)).status_code == 200, path


async def test_metrics_can_be_public(app_client: AsyncClient) -> None:
    app = create_app(app_client, token=ADMIN, metrics_public=True, registry=CollectorRegistry())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as anon:
        assert (await anon.get("/metrics")).status_code == 200
        assert_error(await anon.get("/stats"), 401)


async def test_insecure_no_auth_lets_everyone_in(app_client: AsyncClient, broker: FullBroker) -> None:
    app = create_app(app_client, insecure_no_auth=True, registry=CollectorRegistry())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as anon:
        assert (await anon.post("/jobs", json={"type": "a.b"})).status_code == 201
        assert (await anon.get("/session")).json() == {"role": "admin"}
        assert "security" not in (await anon.get("/openapi.json")).json()["paths"]["/jobs"]["post"]
    assert await stored(broker) == {"default": {"pending": 1}}


def test_tokens_role_compares_every_token() -> None:
    tokens = Tokens(ADMIN, READER)
    assert tokens.role(f"Bearer {ADMIN}".encode()) is Role.ADMIN
    assert tokens.role(f"bearer {READER}".encode()) is Role.READ
    assert tokens.role(f"Bearer {ADMIN}x".encode()) is None
    assert tokens.role(b"Bearer \xff\xfe") is None
    assert tokens.role(None) is None and tokens.role(b"") is None
    assert Tokens(ADMIN, None).role(f"Bearer {READER}".encode()) is None


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({}, "no API token"),
        ({"token": "short"}, "at least 16"),
        ({"token": "has a space in it, sadly"}, "without spaces"),
        ({"token": ADMIN, "read_token": ADMIN}, "must differ"),
        ({"read_token": READER, "insecure_no_auth": True}, "needs token"),
        ({"token": ADMIN, "max_batch": 0}, "max_batch"),
        ({"token": ADMIN, "max_job_bytes": 10, "max_request_bytes": 5}, "max_job_bytes"),
    ],
)
def test_settings_refuse_unsafe_or_broken_setups(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        WebSettings(**kwargs)  # type: ignore[arg-type]


def test_create_app_refuses_to_run_without_a_token() -> None:
    with pytest.raises(ConfigError, match="no API token"):
        create_app("memory://")
