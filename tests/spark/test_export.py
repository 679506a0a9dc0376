"""``pqueue export``: finished jobs to Parquet by day, re-runs add nothing (pyarrow, no Spark)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pqueue
from pqueue.brokers.memory.broker import drop_store
from pqueue.cli import main
from pqueue.clock import ManualClock
from pqueue.job import ErrorInfo
from tests.services import require_spark

require_spark()

import pyarrow.parquet as pq  # noqa: E402

from pqueue.spark.export import export  # noqa: E402

pytestmark = pytest.mark.spark

DAY1 = datetime(2026, 3, 1, 23, 0, tzinfo=UTC).timestamp()


def _history(dsn: str, clock: ManualClock) -> None:
    """Day 1: 2 completed, 1 dead; day 2: 1 completed; 1 job left pending."""

    async def run() -> None:
        broker = pqueue.connect(dsn, clock=clock)
        async with pqueue.AsyncClient(dsn, clock=clock) as client:
            await client.enqueue_map("t", range(5), queue="q", max_retries=0)
            leases = await broker.claim(["q"], worker_id="w", limit=4, lease_for=60)
            clock.advance(10)
            assert await broker.ack(leases[:2]) == [True, True]
            assert await broker.fail(leases[2], ErrorInfo("KeyError", "k"), retry_in=None)
            clock.advance(3600)  # past midnight UTC
            assert await broker.ack(leases[3:]) == [True]

    asyncio.run(run())


@pytest.fixture
def dsn() -> object:
    name = f"export-{uuid.uuid4().hex[:8]}"
    yield f"memory://{name}"
    drop_store(name)


def test_export_writes_finished_jobs_by_day_and_a_rerun_adds_nothing(dsn: str, tmp_path: Path) -> None:
    _history(dsn, ManualClock(DAY1))
    first = export(dsn, tmp_path)
    assert (first.scanned, first.written, first.days) == (4, 4, ("2026-03-01", "2026-03-02"))
    again = export(dsn, tmp_path, since=DAY1)
    assert (again.scanned, again.written, again.already_there) == (4, 0, 4)
    table = pq.read_table(tmp_path)
    assert table.num_rows == 4
    rows = table.to_pylist()
    assert sorted((str(r["day"]), r["status"]) for r in rows) == [
        ("2026-03-01", "completed"),
        ("2026-03-01", "completed"),
        ("2026-03-01", "dead"),
        ("2026-03-02", "completed"),
    ]
    dead = next(r for r in rows if r["status"] == "dead")
    assert (dead["last_error_kind"], dead["run_s"]) == ("KeyError", 10.0)


def test_export_command_line_since_and_report_line(
    dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _history(dsn, ManualClock(DAY1))
    assert main(["export", "--dsn", dsn, "--out", str(tmp_path), "--since", "2026-03-02"]) == 0
    assert "exported 1 new rows" in capsys.readouterr().out
    assert main(["export", "--dsn", dsn, "--out", str(tmp_path)]) == 0
    assert "exported 3 new rows" in capsys.readouterr().out and pq.read_table(tmp_path).num_rows == 4
    assert main(["export", "--dsn", dsn, "--out", str(tmp_path), "--since", "yesterday"]) == 1
