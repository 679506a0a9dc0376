"""``Client`` (the blocking facade) across ``close()``: no caller is ever left hanging."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from pqueue import AsyncClient, BrokerUnavailable, Client, ClientClosed, JobStatus, Stats, Task
from pqueue import sync as sync_module
from pqueue.errors import InvalidRequest, ResultTimeout


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    """Run ``fn`` on a daemon thread; the list receives its result or exception."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except BaseException as error:  # noqa: BLE001 - handed to the test to inspect
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def _client_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "pqueue-client" and t.is_alive()}


def test_close_cancels_calls_still_in_flight_on_other_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()

    async def never_answers(self: AsyncClient, *args: Any) -> Any:  # a broker that never replies
        started.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(AsyncClient, "stats", never_answers)
    monkeypatch.setattr(AsyncClient, "enqueue_task", never_answers)
    monkeypatch.setattr(sync_module, "CLOSE_GRACE", 0.05)
    client = Client("memory://sync-close-cancels")
    blocking, blocking_outcome = _in_thread(client.stats)
    assert started.wait(10)
    started.clear()
    awaiting, awaiting_outcome = _in_thread(lambda: asyncio.run(client.enqueue_task_async(Task("t"))))
    assert started.wait(10)

    client.close()
    for thread in (blocking, awaiting):
        thread.join(10)
        assert not thread.is_alive(), "a call in flight was left hanging by close()"
    for outcome in (blocking_outcome, awaiting_outcome):
        assert len(outcome) == 1 and isinstance(outcome[0], ClientClosed), outcome
        assert "in flight" in str(outcome[0])


def test_close_lets_a_call_in_flight_finish_within_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    real_stats = AsyncClient.stats

    async def slow_stats(self: AsyncClient) -> Stats:
        started.set()
        await asyncio.to_thread(release.wait)
        return await real_stats(self)

    monkeypatch.setattr(AsyncClient, "stats", slow_stats)
    client = Client("memory://sync-close-finishes")
    call, call_outcome = _in_thread(client.stats)
    assert started.wait(10)
    closing, close_outcome = _in_thread(lambda: client.close(grace=60))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # close() has begun once a new call is refused
        try:
            client.list_queues()
        except ClientClosed:
            break
    else:
        pytest.fail("close() did not start refusing new calls")
    release.set()
    for thread in (call, closing):
        thread.join(10)
        assert not thread.is_alive()
    assert close_outcome == [None]
    assert len(call_outcome) == 1 and isinstance(call_outcome[0], Stats), call_outcome


def test_calls_after_close_raise_until_open() -> None:
    client = Client("memory://sync-closed-calls")
    client.enqueue("t")
    client.close()
    client.close()  # idempotent
    with pytest.raises(ClientClosed, match="closed"):
        client.enqueue("t")
    with pytest.raises(ClientClosed):
        client.stats()
    with client:  # open() reopens
        assert client.enqueue("t").created
    with pytest.raises(ClientClosed):
        client.list_queues()


def test_a_failed_with_block_stops_its_loop_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    async def unreachable(self: AsyncClient) -> None:
        raise BrokerUnavailable("no server")

    monkeypatch.setattr(AsyncClient, "open", unreachable)
    before = _client_threads()
    for _ in range(3):
        with pytest.raises(BrokerUnavailable), Client("memory://sync-failed-open"):
            pytest.fail("the body must not run")
    assert _client_threads() - before == set()


def test_wait_job_returns_the_finished_job_as_async_client_does() -> None:
    with Client("memory://wait-job") as client:
        assert client.is_open
        job_id = client.enqueue("report:build", {"n": 1}).id
        with pytest.raises(ResultTimeout):
            client.wait_job(job_id, timeout=0.01)
        assert client.cancel(job_id)
        assert client.wait_job(job_id).status is JobStatus.CANCELLED

        async def awaited() -> JobStatus:
            return (await client.wait_job_async(job_id, timeout=5)).status

        assert asyncio.run(awaited()) is JobStatus.CANCELLED
        with pytest.raises(InvalidRequest):
            client.wait_job(job_id, timeout=-1)
    assert not client.is_open
