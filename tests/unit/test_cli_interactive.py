"""The terminal-only paths of the admin CLI: ``stats --watch`` and the purge question."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator

import pytest

import pqueue
from pqueue.brokers.memory.broker import drop_store
from pqueue.cli import main, stats
from pqueue.job import ErrorInfo, JobStatus


class Terminal(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def dsn() -> Iterator[str]:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    yield f"memory://{name}"
    drop_store(name)


async def _kill(dsn: str, n: int) -> None:
    async with pqueue.AsyncClient(dsn) as client:
        for i in range(n):
            await client.enqueue("mail:send", i, max_retries=0)
        for lease in await client.broker.claim(["default"], worker_id="w", limit=n, lease_for=30):
            assert await client.broker.fail(lease, ErrorInfo("ValueError", "no"), retry_in=None)


def _dead(dsn: str) -> int:
    with pqueue.Client(dsn) as client:
        return client.stats().total(JobStatus.DEAD)


REPLIES = {"no": ("n\n", 1, 2), "default": ("\n", 1, 2), "yes": ("y\n", 0, 0)}
"""What is typed -> exit code, dead jobs left."""


@pytest.mark.parametrize("reply", list(REPLIES))
async def test_purge_asks_on_a_terminal(
    dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reply: str
) -> None:
    answer, code, left = REPLIES[reply]
    await _kill(dsn, 2)
    monkeypatch.setattr("sys.stdin", Terminal(answer))
    assert main(["dlq", "purge", "--dsn", dsn]) == code
    out = capsys.readouterr().out
    assert "Delete the 2 dead job(s) of every queue? This cannot be undone" in out
    assert _dead(dsn) == left


def test_stats_watch_redraws_until_ctrl_c(
    dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sleeps: list[float] = []
    client = pqueue.Client(dsn)
    seen: list[int] = []

    def sleep(seconds: float) -> None:  # the watch loop's pause: enqueue, then Ctrl-C on the third
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise KeyboardInterrupt
        client.enqueue("mail:send", queue="emails")
        seen.append(client.stats().total(JobStatus.PENDING))

    monkeypatch.setattr(stats.time, "sleep", sleep)
    try:
        assert main(["stats", "--dsn", dsn, "--watch", "2s"]) == 0
    finally:
        client.close()
    assert sleeps == [2.0, 2.0, 2.0] and seen == [1, 2]
    assert "emails" in capsys.readouterr().out


def test_watch_and_json_do_not_mix(dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--dsn", dsn, "--watch", "1", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "choose one" in captured.err
