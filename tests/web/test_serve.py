"""``pqueue serve``: refuses unsafe setups before binding, and never shows a password."""

from __future__ import annotations

import os

import httpx
import pytest

from pqueue.cli import main
from pqueue.cli.serve import is_loopback
from tests.conftest import service_url
from tests.ports import free_port
from tests.web.browser import serving
from tests.web.conftest import ADMIN, bearer


@pytest.fixture(autouse=True)
def _no_token_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PQUEUE_API_TOKEN", "PQUEUE_API_READ_TOKEN", "PQUEUE_INSECURE_NO_AUTH", "PQUEUE_HOST"):
        monkeypatch.delenv(name, raising=False)


def test_serve_refuses_to_start_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--dsn", "memory://"]) == 1
    assert "no API token" in capsys.readouterr().err


def test_insecure_no_auth_serves_loopback_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--dsn", "memory://", "--insecure-no-auth", "--host", "0.0.0.0"]) == 1
    assert "loopback only" in capsys.readouterr().err


def test_serve_refuses_a_short_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PQUEUE_API_TOKEN", "short")
    assert main(["serve", "--dsn", "memory://"]) == 1
    assert "at least 16" in capsys.readouterr().err


HOSTS = [("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("10.1.2.3", False)]


@pytest.mark.parametrize(("host", "loopback"), HOSTS)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.redis
def test_a_dsn_password_never_reaches_a_response_or_a_log(
    namespace: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """The served process logs the DSN redacted; the broker refusing the password is a 503
    whose detail does not repeat it."""
    url = service_url("redis")
    assert url is not None
    dsn = url.replace("redis://", "redis://pq:hunter2-secret@", 1) + f"?prefix={namespace}"
    env = {"PQUEUE_API_TOKEN": ADMIN, "PQUEUE_LOG_LEVEL": "INFO", "PQUEUE_ACCESS_LOG": "1"}
    with serving(dsn, env, ready_path="healthz") as base:
        ready = httpx.get(base + "readyz", timeout=30)
        stats = httpx.get(base + "stats", headers=bearer(ADMIN), timeout=30)
        enqueue = httpx.post(base + "jobs", json={"type": "a.b"}, headers=bearer(ADMIN), timeout=30)
    assert ready.status_code == 503 and ready.json()["error"] == "not_ready"
    assert stats.status_code == enqueue.status_code == 503
    out, err = capfd.readouterr()
    for text in (ready.text, stats.text, enqueue.text, out, err):
        assert "hunter2-secret" not in text
        assert "Traceback" not in text
    assert "pq:***@" in err
    assert os.environ.get("PQUEUE_API_TOKEN") is None


def test_serve_warns_once_at_start_when_the_broker_is_unreachable(capfd: pytest.CaptureFixture[str]) -> None:
    """Before, ``serve`` on an unreachable broker started silently and only later requests got
    503. Now it logs one WARNING naming the broker (never its password) and keeps serving."""
    port = free_port()  # nothing listens there
    dsn = f"redis://pq:hunter2-secret@127.0.0.1:{port}/13"
    with serving(dsn, {"PQUEUE_API_TOKEN": ADMIN, "PQUEUE_LOG_LEVEL": "INFO"}, ready_path="healthz") as base:
        health = httpx.get(base + "healthz", timeout=30)
        ready = httpx.get(base + "readyz", timeout=30)
    assert health.status_code == 200
    assert ready.status_code == 503 and ready.json()["error"] == "not_ready"
    err = capfd.readouterr().err
    warnings = [line for line in err.splitlines() if "/readyz is 503 until it is back" in line]
    assert len(warnings) == 1, err
    assert "WARNING" in warnings[0] and f"redis://pq:***@127.0.0.1:{port}/13 unreachable" in warnings[0]
    assert "hunter2-secret" not in err


def test_create_app_gives_its_own_client_the_router_and_refuses_one_beside_yours() -> None:
    """``pqueue serve --app`` is ``create_app(dsn, router=...)``; a client you pass carries
    its own router (``AsyncClient(dsn, router=...)``), so a second one is refused."""
    from pqueue import AsyncClient, Router
    from pqueue.errors import ConfigError
    from pqueue.web import create_app

    router = Router()
    app = create_app("memory://serve-router", token=ADMIN, router=router)
    assert app.state.pqueue_client.router is router
    with pytest.raises(ConfigError, match="give the router to your client"):
        create_app(AsyncClient("memory://serve-router"), token=ADMIN, router=router)
    mine = AsyncClient("memory://serve-router", router=router)
    assert create_app(mine, token=ADMIN, router=router).state.pqueue_client is mine
