"""Report numbers against a fixture small enough to work out by hand."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pqueue.cli import main
from tests.services import require_spark

require_spark()

from pqueue.spark.history import JOB_SCHEMA_DDL  # noqa: E402

pytestmark = pytest.mark.spark

T0 = datetime(2026, 5, 4, 12, 0, 0)  # session time zone is UTC


def _row(n: int, queue: str, kind: str, status: str, **extra: Any) -> tuple[Any, ...]:
    wait, run = extra.get("wait", float(n)), extra.get("run", n / 10)
    enqueued = T0 + timedelta(seconds=n)
    started = enqueued + timedelta(seconds=wait)
    finished = started + timedelta(seconds=run)
    error = extra.get("error")
    return (
        f"{queue}-{n}", kind, queue, status, extra.get("attempt", 1), extra.get("recoveries", 0),
        enqueued, started, finished, wait, run,
        None if error is None else error[0], None if error is None else error[1], "{}", {},
        extra.get("priority", 0),
    )  # fmt: skip


def fixture_rows() -> list[tuple[Any, ...]]:
    """Queue a, type t: ten jobs (wait 1..10 s, run 0.1..1 s); 2 died of KeyError, 1 retried
    once after a TimeoutError then completed. Queue b, type u: three jobs, one recovered.
    Finish times: a-1..a-10 end at 12:00:02..12:00:21, so all in minute 12:00; b in 12:01."""
    rows = []
    for n in range(1, 11):
        if n in (3, 7):
            rows.append(_row(n, "a", "t", "dead", error=("KeyError", "no such user")))
        elif n == 5:
            rows.append(_row(n, "a", "t", "completed", attempt=2, error=("TimeoutError", "slow")))
        else:
            rows.append(_row(n, "a", "t", "completed"))
    for n in range(60, 63):
        rows.append(_row(n, "b", "u", "completed", wait=0.5, run=2.0, recoveries=1 if n == 60 else 0))
    return rows


@pytest.fixture(scope="module")
def jobs(spark: Any) -> Any:
    return spark.createDataFrame(fixture_rows(), JOB_SCHEMA_DDL)


def test_rates_count_exactly(jobs: Any) -> None:
    from pqueue.spark.report import collect, rates

    a, b = collect(rates(jobs))
    assert (a["queue"], a["type"], a["jobs"], a["completed"], a["failed"], a["dead"]) == (
        "a",
        "t",
        10,
        8,
        3,
        2,
    )
    assert (a["retried"], a["recovered"], a["failure_rate"], a["dead_rate"], a["retry_rate"]) == (
        1,
        0,
        0.3,
        0.2,
        0.1,
    )
    assert a["mean_attempts"] == pytest.approx(1.1)
    assert (b["jobs"], b["failed"], b["recovered"], b["recovery_rate"]) == (3, 0, 1, pytest.approx(1 / 3))


def test_percentiles_are_within_one_rank(jobs: Any) -> None:
    from pqueue.spark.report import collect, latency

    a, b = collect(latency(jobs))
    assert a["jobs"] == 10
    assert a["wait_p50_s"] in (5.0, 6.0) and a["wait_p95_s"] == 10.0 and a["wait_p99_s"] == 10.0
    assert a["run_p50_s"] == pytest.approx(0.5, abs=0.11) and a["run_p99_s"] == pytest.approx(1.0)
    assert (b["wait_p50_s"], b["run_p95_s"]) == (0.5, 2.0)


def test_throughput_and_top_errors(jobs: Any) -> None:
    from pqueue.spark.report import collect, throughput, top_errors

    buckets = collect(throughput(jobs))
    assert [(r["bucket"], r["queue"], r["finished"], r["dead"], r["jobs_per_minute"]) for r in buckets] == [
        (T0, "a", 10, 2, 10.0),
        (T0 + timedelta(minutes=1), "b", 3, 0, 3.0),
    ]
    errors = collect(top_errors(jobs))
    assert [(r["last_error_kind"], r["jobs"]) for r in errors] == [("KeyError", 2), ("TimeoutError", 1)]


def test_report_command_prints_tables_and_writes_html(
    jobs: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs.write.parquet(str(tmp_path / "export" / "day=2026-05-04"))
    page = tmp_path / "report.html"
    assert main(["report", "--input", str(tmp_path / "export"), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "Rates" in out and "KeyError" in out and "30.00 %" in out
    assert "recovery_rate" in out and "mean_attempts" in out  # whole headers in a pipe (issue 30)
    text = page.read_text()
    assert text.count("<svg") == 2 and "no such user" in text and "<script" not in text


def test_a_cancelled_run_is_its_own_outcome_not_a_failure(spark: Any) -> None:
    """An operator's cancel is neither a failure nor a success: its own column and rate,
    left out of the failure rate and the top errors (docs/spark.md, "Reports")."""
    from pqueue.spark.report import collect, rates, top_errors

    cancelled = ("Cancelled", "cancelled while running")
    one = spark.createDataFrame([_row(1, "c", "t", "cancelled", error=cancelled)], JOB_SCHEMA_DDL)
    [row] = collect(rates(one))
    assert (row["failed"], row["failure_rate"]) == (0, None)  # no run ended to judge (was 1, 100 %)
    assert (row["jobs"], row["completed"], row["cancelled"], row["cancel_rate"]) == (1, 0, 1, 1.0)
    assert collect(top_errors(one)) == []
    assert rates(one).columns == [
        "queue", "type", "jobs", "completed", "failed", "dead", "retried", "recovered", "mean_attempts",
        "cancelled", "failure_rate", "dead_rate", "retry_rate", "recovery_rate", "cancel_rate",
    ]  # fmt: skip  # the new columns after the older ones, which keep their places
    mixed = spark.createDataFrame(
        [
            _row(1, "c", "t", "cancelled", error=cancelled),
            _row(2, "c", "t", "completed"),
            _row(3, "c", "t", "dead", error=("KeyError", "gone")),
        ],
        JOB_SCHEMA_DDL,
    )
    [row] = collect(rates(mixed))
    assert (row["jobs"], row["failed"], row["cancelled"], row["failure_rate"]) == (3, 1, 1, 0.5)
    assert row["cancel_rate"] == pytest.approx(1 / 3)
