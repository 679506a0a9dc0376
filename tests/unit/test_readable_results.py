"""``Stats``, ``Job`` and ``WorkerInfo`` print for people and ``to_dict()`` for JSON."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from pqueue import AsyncClient, Client, WorkerInfo
from pqueue.brokers.memory.broker import drop_store
from pqueue.clock import ManualClock
from pqueue.durations import format_duration, parse_duration
from pqueue.errors import InvalidRequest
from pqueue.job import ErrorInfo, JobStatus

START = 1_800_000_000.0  # 2027-01-15T08:00:00Z


@pytest.fixture
def client() -> Iterator[Client]:
    name = f"readable-{uuid.uuid4().hex[:8]}"
    with Client(f"memory://{name}", clock=ManualClock(START)) as c:
        yield c
    drop_store(name)


async def test_job_to_dict_is_json_with_iso_times_and_errors() -> None:
    name = f"readable-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(f"memory://{name}", clock=ManualClock(START)) as client:
        job_id = (await client.enqueue("email:send", {"to": "a@example.com"}, max_retries=0)).id
        [lease] = await client.broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
        error = ErrorInfo("ValueError", "bad address", traceback="Traceback ...\nValueError: bad address")
        assert await client.broker.fail(lease, error, retry_in=None)
        job = await client.get_job(job_id)
    drop_store(name)
    data = job.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["status"] == "dead" and data["payload"] == {"to": "a@example.com"}
    assert data["created_at"] == "2027-01-15T08:00:00+00:00" and data["finished_at"] is not None
    assert data["errors"] == [
        {
            "kind": "ValueError",
            "message": "bad address",
            "traceback": "Traceback ...\nValueError: bad address",
            "attempt": 1,
            "at": "2027-01-15T08:00:00+00:00",
        }
    ]


def test_job_prints_as_one_readable_line(client: Client) -> None:
    job = client.get_job(client.enqueue("report:build", queue="low").id)
    assert str(job) == f"job {job.id} report:build on low: pending, attempt 0/4"


def test_stats_print_as_a_table_and_to_dict_as_json(client: Client) -> None:
    client.enqueue("a:job", queue="alpha")
    client.enqueue("a:job", queue="alpha", delay=60)
    text = str(client.stats())
    assert "JobStatus" not in text
    header, row, workers = text.splitlines()
    assert header.split() == [
        "queue", "waiting", "pending", "scheduled", "active", "retry", "completed", "dead", "cancelled",
        "done/s", "oldest", "pending"
    ]  # fmt: skip
    assert row.split() == ["alpha", "0", "1", "1", "0", "0", "0", "0", "0", "0.00", "0.0s"]
    assert workers == "workers: 0"
    data = client.stats().to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["queues"]["alpha"]["pending"] == 1 and data["totals"]["scheduled"] == 1
    assert data["oldest_pending_age"] == {"alpha": 0.0} and data["done_per_second"] == {"alpha": 0.0}


def test_worker_to_dict_has_iso_times() -> None:
    info = WorkerInfo("w-1", "box", 42, ("a", "b"), 8, started_at=START, last_seen=START + 5)
    assert info.to_dict() == {
        "id": "w-1",
        "host": "box",
        "pid": 42,
        "queues": ["a", "b"],
        "concurrency": 8,
        "started_at": "2027-01-15T08:00:00+00:00",
        "last_seen": "2027-01-15T08:00:05+00:00",
        "meta": {},
    }


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("30s", 30.0),
        ("10m", 600.0),
        ("2h", 7200.0),
        ("7d", 604800.0),
        ("1.5h", 5400.0),
        ("0", 0.0),
    ],
)
def test_durations_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-5", "10x", "1e3", "2 h 3m", "nan", "inf", "h"])
def test_bad_durations_are_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(InvalidRequest, match=r"use seconds or a number with s, m, h or d"):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [0.0, 4.2, 59.9, 60.0, 754.0, 5400.0, 86400.0, 1_000_000.0])
def test_formatted_durations_read_back_close_to_the_original(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, rel=0.05, abs=0.05)


def test_job_status_values_are_the_json_words() -> None:
    assert [s.value for s in JobStatus] == [
        "pending", "scheduled", "active", "retry", "completed", "dead", "cancelled", "waiting"
    ]  # fmt: skip
