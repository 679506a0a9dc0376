"""A server that answers but turns the client away says why, at once: TLS against a plain
port, a role the server does not know, a schema never migrated (issue 30, items 5 and 7).
The errors are one line, carry no password, and come without the driver's traceback."""

from __future__ import annotations

import subprocess
import sys
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from redis.asyncio.connection import SSLConnection

import pqueue
import pqueue.sync
from pqueue.errors import BrokerUnreachable, SchemaError
from tests.conftest import service_url

TLS_MISMATCH = "TLS handshake failed: is this port TLS?"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pqueue", *args], capture_output=True, text=True, timeout=60, check=False
    )


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}"


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (a connection attempt) and let them through."""
    calls: list[int] = []
    original: Callable[..., Any] = getattr(owner, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.redis
async def test_rediss_on_a_plain_port_says_so_after_one_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handshake on a plain port hangs; open must not retry it for 16 s and call it a timeout."""
    url = service_url("redis")
    assert url is not None
    where = _host_port(url)
    attempts = _counting(monkeypatch, SSLConnection, "_connect")
    with pytest.raises(BrokerUnreachable) as caught:
        async with pqueue.AsyncClient(url.replace("redis://", "rediss://", 1)):
            pass
    error = caught.value
    assert str(error).startswith(f"Redis at {where}: {TLS_MISMATCH} (it answers plain Redis")
    assert error.cause.startswith(TLS_MISMATCH) and error.address == where
    assert len(attempts) == 1  # no retry loop ran
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.postgres
async def test_sslmode_require_on_a_server_without_tls_says_so_after_one_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = service_url("postgres")
    assert url is not None
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW ssl").fetchone()
    if row is None or row[0] != "off":
        pytest.skip("this test needs a Postgres server without TLS")
    attempts = _counting(monkeypatch, psycopg.AsyncConnection, "connect")
    with pytest.raises(BrokerUnreachable) as caught:
        async with pqueue.AsyncClient(f"{url}?sslmode=require"):
            pass
    assert str(caught.value) == (
        f"Postgres at {_host_port(url)}: {TLS_MISMATCH} (the server does not support SSL)"
    )
    assert len(attempts) == 1


@pytest.mark.postgres
def test_an_unknown_role_is_refused_not_unreachable() -> None:
    url = service_url("postgres")
    assert url is not None
    role = f"nobody{uuid.uuid4().hex[:8]}"
    parts = urlsplit(url)
    dsn = parts._replace(netloc=f"{role}:s3cret@{parts.hostname}:{parts.port}").geturl()
    done = _cli("health", "--dsn", dsn)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"pqueue: error: Postgres at {_host_port(url)} refused: authentication failed for role '{role}'"
    ]
    assert "s3cret" not in done.stderr + done.stdout


@pytest.mark.postgres
@pytest.mark.parametrize("first_call", ["with", "enqueue"])
def test_the_sync_client_shows_a_missing_schema_without_its_loop_threads_frames(first_call: str) -> None:
    """The message names the fix; the traceback holds only the caller's frames and the
    Client's own, not 30 lines through the loop thread, the broker and the driver."""
    url = service_url("postgres")
    dsn = f"{url}?schema=pqmissing{uuid.uuid4().hex[:8]}"
    with pytest.raises(SchemaError) as caught:
        if first_call == "with":
            with pqueue.Client(dsn):
                pass
        else:
            client = pqueue.Client(dsn)
            try:
                client.enqueue("t.x", {})
            finally:
                client.close()
    error = caught.value
    [line] = str(error).splitlines()
    assert "run: pqueue migrate --dsn" in line
    assert error.__cause__ is None and error.__suppress_context__
    files = {Path(frame.filename) for frame in traceback.extract_tb(error.__traceback__)}
    assert files <= {Path(__file__), Path(pqueue.sync.__file__)}, files
    assert len(traceback.format_exception(error)) < 12


def test_the_tls_verdict_survives_redis_pys_reconnect_on_send() -> None:
    """redis-py wraps an error raised in its reconnect-on-send as ConnectionError(exc) from
    exc; the broker raises the verdict itself, not 'unreachable: Redis at ...'."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from pqueue.brokers.redis.config import RedisOptions
    from pqueue.brokers.redis.core import RedisCore

    core = RedisCore(RedisOptions.parse("rediss://127.0.0.1:1/0", {}))
    verdict = BrokerUnreachable(f"Redis at 127.0.0.1:1: {TLS_MISMATCH}", address="127.0.0.1:1")
    wrapped = RedisConnectionError(verdict)
    wrapped.__cause__ = verdict
    assert core.translate(wrapped) is verdict
