"""Fixtures for the HTTP API tests: the app over each backend, driven in process.

``api`` is an httpx client on the ASGI app (no port) holding the admin token;
``anon``/``reader`` send no token / the read-only token. The app's client reaches this
test's namespace (``backend_dsn``) with the test's clock, and ``broker`` (the contract
suite's fixture) sees the same namespace, so tests can seed jobs and check what was
written behind the API's back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pqueue import AsyncClient
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.job import ErrorInfo, JobStatus
from pqueue.metrics import JobMetrics
from pqueue.spec import build_spec
from pqueue.web import WebSettings, create_app

ADMIN = "admin-token-for-tests-0123456789"
READER = "read-token-for-tests-0123456789"
BASE = "http://pqueue.test"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def settings() -> WebSettings:
    """Override in a module for other limits (small ones make the size tests cheap)."""
    return WebSettings(token=ADMIN, read_token=READER)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest_asyncio.fixture
async def app_client(
    broker: FullBroker, backend_dsn: str, clock: ManualClock, registry: CollectorRegistry
) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(backend_dsn, clock=clock, middleware=[JobMetrics(registry)]) as client:
        yield client


@pytest.fixture
def app(app_client: AsyncClient, settings: WebSettings, registry: CollectorRegistry) -> Any:
    return create_app(app_client, settings=settings, registry=registry)


def http_client(app: Any, token: str | None = None) -> httpx.AsyncClient:
    """An httpx client calling ``app`` in process, sending ``token`` when given."""
    headers = bearer(token) if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, headers=headers)


@pytest_asyncio.fixture
async def anon(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(app) as http:
        yield http


@pytest_asyncio.fixture
async def api(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(app, ADMIN) as http:
        yield http


@pytest_asyncio.fixture
async def reader(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(app, READER) as http:
        yield http


async def stored(broker: FullBroker) -> dict[str, dict[str, int]]:
    """Everything the broker holds, as counts per queue and status (the 'unchanged' check)."""
    counts = {q: {s.value: n for s, n in per.items() if n} for q, per in (await broker.counts()).items()}
    return {queue: per for queue, per in counts.items() if per}


async def make_dead(
    broker: FullBroker, queue: str = "mail", n: int = 1, message: str = "SMTP 550"
) -> list[str]:
    """``n`` dead jobs of type ``email.send`` in ``queue``, each with one error ``message``."""
    specs = [build_spec("email.send", {"n": i}, queue=queue, max_retries=0) for i in range(n)]
    await broker.enqueue(specs)
    leases = await broker.claim([queue], worker_id="test", limit=n, lease_for=60)
    for lease in leases:
        assert await broker.fail(lease, ErrorInfo("SMTPError", message, attempt=1), retry_in=None)
    return [spec.id for spec in specs]


def assert_error(response: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    """The answer is the JSON error shape with ``status``, and its detail names ``words``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    for word in words:
        assert word in body["detail"], (word, body)
    return dict(body)


__all__ = ["ADMIN", "READER", "JobStatus", "assert_error", "bearer", "make_dead", "stored"]
