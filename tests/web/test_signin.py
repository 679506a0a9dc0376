"""One-time sign-in links for the dashboard (ADR 0160): a token holder mints a link, the
page trades its code once for a session of the same role; no session outlives its time,
mints a link, or is stronger than the token behind it; no code or token reaches a log."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.routing import Mount

from pqueue.brokers.memory import drop_store
from pqueue.web import create_app
from pqueue.web.auth import LINK_SECONDS, MAX_LINKS, SESSION_SECONDS, Role, SignIns
from tests.web.conftest import ADMIN, BASE, READER, assert_error, bearer


class Ticks:
    """A monotonic clock that moves when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def header(token: str) -> bytes:
    return f"Bearer {token}".encode()


def test_a_link_opens_one_session_of_its_role_for_its_time() -> None:
    ticks = Ticks()
    signins = SignIns(ticks)
    code = signins.mint(Role.READ)
    opened = signins.redeem(code)
    assert opened is not None
    token, role = opened
    assert role is Role.READ and signins.role(header(token)) is Role.READ
    assert signins.redeem(code) is None  # once
    ticks.now += SESSION_SECONDS - 1
    assert signins.role(header(token)) is Role.READ
    ticks.now += 1
    assert signins.role(header(token)) is None  # over


def test_a_link_not_opened_in_time_is_dead_and_a_late_try_spends_it() -> None:
    ticks = Ticks()
    signins = SignIns(ticks)
    late, spent = signins.mint(Role.ADMIN), signins.mint(Role.ADMIN)
    ticks.now += LINK_SECONDS
    assert signins.redeem(late) is None
    ticks.now -= LINK_SECONDS  # even were the clock to step back
    assert signins.redeem(late) is None
    assert signins.redeem("no-such-code") is None
    assert signins.redeem(spent) is not None


@pytest.mark.parametrize(
    "value", [None, b"", b"Basic abc", b"Bearer", b"Bearer " + b"x" * 43, header(ADMIN)], ids=repr
)
def test_only_a_live_session_token_has_a_role(value: bytes | None) -> None:
    assert SignIns().role(value) is None


def test_unused_links_are_bounded_oldest_forgotten_first() -> None:
    signins = SignIns(Ticks())
    codes = [signins.mint(Role.READ) for _ in range(MAX_LINKS + 1)]
    assert signins.redeem(codes[0]) is None
    assert all(signins.redeem(code) is not None for code in codes[1:])


@pytest_asyncio.fixture
async def web() -> AsyncIterator[httpx.AsyncClient]:
    """The app on a memory store of its own with both tokens; requests carry no token unless given."""
    store = f"signin-{uuid.uuid4().hex[:12]}"
    app = create_app(f"memory://{store}", token=ADMIN, read_token=READER, registry=CollectorRegistry())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield http
    drop_store(store)


async def open_link(http: httpx.AsyncClient, token: str, **kwargs: Any) -> tuple[dict[str, Any], str]:
    """Mint a link with ``token``, open it; returns the link's answer and the session token."""
    minted = await http.post("/session/link", headers=bearer(token), **kwargs)
    assert minted.status_code == 201, minted.text
    link = minted.json()
    code = link["fragment"].removeprefix("#signin=")
    opened = await http.post("/session/redeem", json={"code": code})
    assert opened.status_code == 200, opened.text
    assert opened.json()["role"] == link["role"]
    assert opened.headers["cache-control"] == minted.headers["cache-control"] == "no-store"
    return link, opened.json()["token"]


async def test_an_admin_link_opens_an_admin_session(web: httpx.AsyncClient) -> None:
    link, session = await open_link(web, ADMIN)
    assert link["url"] == f"{BASE}/{link['fragment']}" and link["role"] == "admin"
    assert link["expires_in"] == LINK_SECONDS
    assert (await web.get("/session", headers=bearer(session))).json() == {"role": "admin"}
    created = await web.post("/jobs", json={"type": "a.b"}, headers=bearer(session))
    assert created.status_code == 201, created.text


async def test_a_read_only_token_mints_only_a_read_only_session(web: httpx.AsyncClient) -> None:
    link, session = await open_link(web, READER, json={"role": "admin"})  # asking is not getting
    assert link["role"] == "read"
    assert (await web.get("/session", headers=bearer(session))).json() == {"role": "read"}
    assert (await web.get("/stats", headers=bearer(session))).status_code == 200
    assert_error(await web.post("/jobs", json={"type": "a.b"}, headers=bearer(session)), 403, "read-only")
    assert (await web.get("/stats", headers=bearer(ADMIN))).json()["totals"]["pending"] == 0


async def test_a_link_opens_once(web: httpx.AsyncClient) -> None:
    minted = (await web.post("/session/link", headers=bearer(READER))).json()
    code = minted["fragment"].removeprefix("#signin=")
    assert (await web.post("/session/redeem", json={"code": code})).status_code == 200
    again = await web.post("/session/redeem", json={"code": code})
    assert_error(again, 401, "already used or expired")


async def test_a_session_cannot_mint_a_link(web: httpx.AsyncClient) -> None:
    """Else a session that leaked could renew itself past its expiry, forever."""
    _, session = await open_link(web, ADMIN)
    assert_error(await web.post("/session/link", headers=bearer(session)), 403, "use an API token")


async def test_minting_needs_a_token_and_redeeming_a_code(web: httpx.AsyncClient) -> None:
    assert_error(await web.post("/session/link"), 401)
    assert_error(await web.post("/session/link", headers=bearer("not-a-token-0123456789")), 401)
    assert_error(await web.post("/session/redeem", json={"code": "guess"}), 401, "sign-in link")
    assert_error(await web.post("/session/redeem", json={}), 422, "code")
    assert_error(await web.post("/session/redeem", json={"code": "x" * 101}), 422, "code")
    assert_error(await web.get("/stats", headers=bearer("guess")), 401)


async def test_no_code_or_token_is_logged(web: httpx.AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        link, session = await open_link(web, ADMIN)
        await web.post("/session/redeem", json={"code": link["fragment"].removeprefix("#signin=")})
    code = link["fragment"].removeprefix("#signin=")
    assert "sign-in link minted (role admin" in caplog.text and "session opened" in caplog.text
    assert "refused" in caplog.text
    assert code not in caplog.text and session not in caplog.text and ADMIN not in caplog.text


async def test_the_schema_says_redeem_needs_no_token_and_link_does() -> None:
    app = create_app("memory://", token=ADMIN, registry=CollectorRegistry())
    paths = app.openapi()["paths"]
    assert "security" not in paths["/session/redeem"]["post"]
    assert paths["/session/link"]["post"]["security"] == [{"bearer": []}]


async def test_a_mounted_app_links_to_its_own_dashboard() -> None:
    pqueue_app = create_app("memory://", token=ADMIN, registry=CollectorRegistry())
    outer = Starlette(routes=[Mount("/pqueue", app=pqueue_app)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=outer), base_url=BASE) as http:
        minted = await http.post("/pqueue/session/link", headers=bearer(ADMIN))
        assert minted.json()["url"] == f"{BASE}/pqueue/{minted.json()['fragment']}"
        code = minted.json()["fragment"].removeprefix("#signin=")
        session = (await http.post("/pqueue/session/redeem", json={"code": code})).json()["token"]
        assert (await http.get("/pqueue/session", headers=bearer(session))).json() == {"role": "admin"}
