"""The dashboard in headless Chromium against a served instance holding real jobs on Redis:
sign in, see each queue's counts, open a dead job, requeue it by clicking (with the
confirmation), see its status change; a wrong token is refused. It also opens already
signed in, from a one-time link or from a header set outside the page (ADR 0160).

Marked ``browser`` (`make browser`, a step of `make test`). With
``PQUEUE_DASHBOARD_SHOT=path`` it also saves the screenshot used in docs/web.md.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import httpx
import pytest

import pqueue
from pqueue.broker import WorkerInfo
from pqueue.job import ErrorInfo
from pqueue.spec import build_spec
from tests.conftest import service_url
from tests.web.browser import CHROMIUM_FLAGS, chromium_path, serving
from tests.web.conftest import ADMIN, READER, bearer

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, pytest.mark.redis]


async def seed(dsn: str) -> str:
    """emails: 3 pending + 1 dead; reports: 2 pending + 1 scheduled; one live worker.
    Returns the dead job's id."""
    broker = pqueue.connect(dsn)
    await broker.open()
    try:
        await broker.enqueue(
            [build_spec("email.send", {"to": "bounce@example.com"}, queue="emails", max_retries=0)]
        )
        [lease] = await broker.claim(["emails"], worker_id="seed", limit=1, lease_for=60)
        error = ErrorInfo("SMTPRecipientRefused", "550 mailbox unavailable", attempt=1)
        assert await broker.fail(lease, error, retry_in=None)
        await broker.enqueue(
            [build_spec("email.send", {"to": f"user{i}@example.com"}, queue="emails") for i in range(3)]
        )
        await broker.enqueue([build_spec("report.build", {"month": m}, queue="reports") for m in (10, 11)])
        await broker.enqueue([build_spec("report.build", {"month": 12}, queue="reports", delay=3600)])
        info = WorkerInfo("worker-1", socket.gethostname(), os.getpid(), ("emails", "reports"), 10, 0.0)
        await broker.register_worker(info, ttl=600)
        return lease.job.id
    finally:
        await broker.close()


def paused_queues(dsn: str) -> list[str]:
    """What the broker has stored (Playwright's sync API holds this thread's event loop)."""
    with pqueue.Client(dsn) as client:
        return client.paused_queues()


@pytest.fixture
def redis_dsn(namespace: str) -> Iterator[str]:
    from tests.backends import redis as backend

    url = service_url("redis")
    yield backend.namespace_dsn(url, namespace)
    asyncio.run(backend.cleanup(url, namespace))


@contextmanager
def dashboard(redis_dsn: str, headers: dict[str, str] | None = None) -> Iterator[tuple[Page, str, str]]:
    """A page in headless chromium (sending ``headers`` with every request), the served
    dashboard's URL, and the seeded dead job's id."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    dead_id = asyncio.run(seed(redis_dsn))
    env = {"PQUEUE_API_TOKEN": ADMIN, "PQUEUE_API_READ_TOKEN": READER, "PQUEUE_LOG_LEVEL": "WARNING"}
    with serving(redis_dsn, env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 640}, extra_http_headers=headers)
            yield page, url, dead_id
        finally:
            browser.close()


def test_dashboard_signs_in_shows_counts_and_requeues_a_dead_job(redis_dsn: str) -> None:
    with dashboard(redis_dsn) as (page, url, dead_id):
        from playwright.sync_api import expect

        page.goto(url)

        page.get_by_label("token").fill("not-the-token-0123456789")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#login-error")).to_have_text("Wrong token.")
        expect(page.locator("#nav")).to_be_hidden()

        page.get_by_label("token").fill(ADMIN)
        page.get_by_role("button", name="Sign in").click()
        emails, reports = (
            page.locator('tr[data-queue="emails"]'),
            page.locator('tr[data-queue="reports"]'),
        )
        expect(emails.locator('[data-status="pending"]')).to_have_text("3")
        expect(emails.locator('[data-status="dead"]')).to_have_text("1")
        expect(reports.locator('[data-status="pending"]')).to_have_text("2")
        expect(reports.locator('[data-status="scheduled"]')).to_have_text("1")
        if shot := os.environ.get("PQUEUE_DASHBOARD_SHOT"):
            page.wait_for_timeout(2500)  # two polls: the throughput line has points
            page.screenshot(path=shot, full_page=True)

        expect(page.locator("#schedules-panel")).to_contain_text("No schedules.")  # none registered here

        expect(reports.locator("[data-state]")).to_have_text("running")
        reports.get_by_role("button", name="Pause").click()
        expect(page.locator("#message")).to_have_text("Queue reports paused.")
        expect(reports.locator("[data-state]")).to_have_text("paused")
        assert paused_queues(redis_dsn) == ["reports"]
        reports.get_by_role("button", name="Resume").click()
        expect(page.locator("#message")).to_have_text("Queue reports resumed.")
        expect(reports.locator("[data-state]")).to_have_text("running")
        assert paused_queues(redis_dsn) == []

        page.get_by_role("link", name="Dead jobs").click()
        row = page.locator(f'tr[data-job="{dead_id}"]')
        expect(row).to_contain_text("SMTPRecipientRefused: 550 mailbox unavailable")
        row.get_by_role("link", name=dead_id).click()
        expect(page.locator("#job-status")).to_have_text("dead")

        page.locator("#job-requeue").click()
        expect(page.locator("#confirm-text")).to_have_text("Requeue this job?")
        page.get_by_role("button", name="Confirm").click()
        expect(page.locator("#job-status")).to_have_text("pending")
        expect(page.locator("#message")).to_have_text("Requeued 1 job.")

        page.get_by_role("link", name="Queues").click()
        expect(emails.locator('[data-status="pending"]')).to_have_text("4")
        expect(emails.locator('[data-status="dead"]')).to_have_text("0")


def test_read_only_token_sees_no_admin_actions(redis_dsn: str) -> None:
    with dashboard(redis_dsn) as (page, url, dead_id):
        from playwright.sync_api import expect

        page.goto(url)
        page.get_by_label("token").fill(READER)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#role")).to_have_text("read-only")
        expect(page.get_by_role("link", name="Enqueue")).to_be_hidden()
        page.goto(f"{url}#job/{dead_id}")
        expect(page.locator("#job-status")).to_have_text("dead")
        expect(page.locator("#job-requeue")).to_be_hidden()
        page.get_by_role("link", name="Queues").click()
        expect(page.locator('tr[data-queue="emails"] [data-state]')).to_have_text("running")
        expect(page.get_by_role("button", name="Pause")).to_have_count(0)  # no admin actions shown


SCHEDULES = {
    "schedules": [
        {
            "name": "nightly-report",
            "type": "report.build",
            "queue": "reports",
            "cron": "0 3 * * *",
            "every": None,
            "tz": "Europe/Paris",
            "next_run_at": "2030-01-02T02:00:00Z",
            "last_run_at": None,
            "missed": 2,
            "catch_up": True,
        },
        {
            "name": "heartbeat",
            "type": "ping",
            "queue": "default",
            "cron": None,
            "every": 90.0,
            "tz": None,
            "next_run_at": "2030-01-01T00:01:30Z",
            "last_run_at": "2030-01-01T00:00:00Z",
            "missed": 0,
            "catch_up": False,
        },
    ]
}


def test_schedules_panel_lists_what_get_schedules_answers(redis_dsn: str) -> None:
    """The panel draws what GET /schedules answers (stood in for in the browser)."""
    with dashboard(redis_dsn) as (page, url, _):
        from playwright.sync_api import Route, expect

        def answer(route: Route) -> None:
            route.fulfill(status=200, json=SCHEDULES)

        page.route("**/schedules", answer)
        page.goto(url)
        page.get_by_label("token").fill(READER)
        page.get_by_role("button", name="Sign in").click()
        nightly = page.locator('tr[data-schedule="nightly-report"]')
        expect(nightly).to_contain_text("cron 0 3 * * *")
        expect(nightly).to_contain_text("Europe/Paris")
        expect(nightly.locator("td.num")).to_have_text("2")
        expect(page.locator('tr[data-schedule="heartbeat"]')).to_contain_text("every 1.5m")
        expect(page.locator("#message")).to_have_text("")


def test_schedules_panel_hides_when_the_server_has_no_schedules_endpoint(redis_dsn: str) -> None:
    """An older server answers 404 for GET /schedules: the panel goes away quietly."""
    with dashboard(redis_dsn) as (page, url, _):
        from playwright.sync_api import Route, expect

        def missing(route: Route) -> None:
            route.fulfill(status=404, json={"error": "not_found", "detail": "Not Found"})

        page.route("**/schedules", missing)
        page.goto(url)
        page.get_by_label("token").fill(READER)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator('tr[data-queue="emails"]')).to_be_visible()
        expect(page.locator("#schedules-panel")).to_be_hidden()
        expect(page.locator("#message")).to_have_text("")


def test_a_sign_in_link_opens_the_dashboard_signed_in_once(redis_dsn: str) -> None:
    """No token typed and none in the URL the server sees: the code rides in the fragment,
    leaves the address bar at once, and opens a read-only session for a read-only token."""
    with dashboard(redis_dsn) as (page, url, _):
        from playwright.sync_api import expect

        minted = httpx.post(f"{url}session/link", headers=bearer(READER), timeout=10)
        link = minted.json()["url"]
        assert minted.status_code == 201 and link == f"{url}{minted.json()['fragment']}"
        page.goto(link)
        expect(page.locator("#role")).to_have_text("read-only")
        expect(page.locator('tr[data-queue="emails"] [data-status="pending"]')).to_have_text("3")
        assert "signin" not in page.url
        page.goto(f"{url}#workers")  # away and back: the session holds in this tab
        expect(page.locator("#role")).to_have_text("read-only")

        page.goto(link)  # twice: refused
        expect(page.locator("#login")).to_be_visible()
        expect(page.locator("#login-error")).to_contain_text("already used")


def test_a_header_set_outside_the_page_signs_the_dashboard_in(redis_dsn: str) -> None:
    """Playwright's extra_http_headers (or a proxy) carries the token: nothing to type."""
    with dashboard(redis_dsn, headers=bearer(ADMIN)) as (page, url, _):
        from playwright.sync_api import expect

        page.goto(url)
        expect(page.locator("#role")).to_have_text("admin")
        expect(page.locator('tr[data-queue="reports"] [data-status="scheduled"]')).to_have_text("1")
        expect(page.locator("#login")).to_be_hidden()
