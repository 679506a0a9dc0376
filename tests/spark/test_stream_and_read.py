"""The streaming sink (each key once across restarts) and the reader (jobs a worker ran)."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pqueue
from pqueue.ids import key_id
from pqueue.job import ErrorInfo, JobStatus
from pqueue.sync import Client
from tests.services import require_spark
from tests.spark.helpers import BROKERS, namespaced_dsn

require_spark()
pytestmark = pytest.mark.spark


@pytest.fixture(params=BROKERS)
def dsn(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from namespaced_dsn(request.param, f"pqs{uuid.uuid4().hex[:12]}")


def _events(folder: Path, name: str, keys: range) -> None:
    lines = (json.dumps({"key": k, "body": f"event {k}"}) for k in keys)
    (folder / name).write_text("\n".join(lines) + "\n")


def _run_stream(spark: Any, source: Path, checkpoint: Path, dsn: str) -> None:
    query = (
        spark.readStream.schema("key LONG, body STRING")
        .json(str(source))
        .writeStream.format("pqueue")
        .option("dsn", dsn)
        .option("type", "event.handle")
        .option("queue", "events")
        .option("idColumn", "key")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None


def test_stream_restarted_from_its_checkpoint_enqueues_each_key_once(
    spark: Any, dsn: str, tmp_path: Path
) -> None:
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    _events(source, "a.json", range(100))
    _run_stream(spark, source, checkpoint, dsn)
    with Client(dsn) as client:
        assert client.stats().total(JobStatus.PENDING, "events") == 100
    # A crash after the sink wrote batch 0 but before Spark recorded it: the restart
    # replays batch 0, and a new file brings keys 50-149 (50 of them seen before).
    shutil.rmtree(checkpoint / "commits")
    _events(source, "b.json", range(50, 150))
    _run_stream(spark, source, checkpoint, dsn)
    with Client(dsn) as client:
        assert client.stats().total(JobStatus.PENDING, "events") == 150
        job = client.get_job(key_id("events", "event.handle", "120"))
        assert job.payload == {"key": 120, "body": "event 120"}


def _work(dsn: str) -> dict[str, str]:
    """Run jobs as a worker would: 3 succeed, 1 fails for good, 1 fails and waits to retry,
    1 stays pending. Returns id -> expected status."""

    async def run() -> dict[str, str]:
        broker = pqueue.connect(dsn)
        await broker.open()
        try:
            async with pqueue.AsyncClient(dsn) as client:
                results = await client.enqueue_map("report.build", [{"n": i} for i in range(6)], queue="r")
            ids = [r.id for r in results]
            leases = await broker.claim(["r"], worker_id="w", limit=5, lease_for=60)
            await asyncio.sleep(0.05)  # a measurable run time
            assert await broker.ack(leases[:3]) == [True] * 3
            assert await broker.fail(leases[3], ErrorInfo("ValueError", "bad input"), retry_in=None)
            assert await broker.fail(leases[4], ErrorInfo("TimeoutError", "slow"), retry_in=3600)
            statuses = ["completed"] * 3 + ["dead", "retry", "pending"]
            return dict(zip([lease.job.id for lease in leases] + ids[5:], statuses, strict=True))
        finally:
            await broker.close()

    return asyncio.run(run())


def test_reader_returns_the_jobs_a_worker_ran_with_their_timings(spark: Any, dsn: str) -> None:
    expected = _work(dsn)
    df = spark.read.format("pqueue").option("dsn", dsn).option("numPartitions", "2").load()
    assert df.columns == [
        "id", "type", "queue", "status", "attempt", "recoveries", "enqueued_at", "started_at",
        "finished_at", "wait_s", "run_s", "last_error_kind", "last_error_message", "payload", "meta",
        "priority",
    ]  # fmt: skip
    rows = {row["id"]: row for row in df.collect()}
    assert {i: row["status"] for i, row in rows.items()} == expected
    assert {row["priority"] for row in rows.values()} == {0}
    for row in rows.values():
        ran = row["status"] != "pending"
        assert row["attempt"] == (1 if ran else 0) and row["queue"] == "r" and row["type"] == "report.build"
        assert (row["started_at"] is not None) == ran and row["enqueued_at"] is not None
        assert json.loads(row["payload"]).keys() == {"n"}
    for row in (r for r in rows.values() if r["status"] in ("completed", "dead")):
        assert row["finished_at"] >= row["started_at"] >= row["enqueued_at"]
        assert 0.04 <= row["run_s"] < 60 and 0 <= row["wait_s"] < 60
    dead = spark.read.format("pqueue").option("dsn", dsn).option("status", "dead").option("queue", "r").load()
    [row] = dead.collect()
    assert (row["last_error_kind"], row["last_error_message"]) == ("ValueError", "bad input")
    future = spark.read.format("pqueue").option("dsn", dsn).option("since", "2999-01-01").load()
    assert future.count() == 0


@pytest.mark.parametrize("broker", [pytest.param("redis", marks=pytest.mark.redis)])
def test_report_command_reads_the_broker_through_the_data_source(
    spark: Any, broker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from pqueue.cli import main

    for dsn in namespaced_dsn(broker, f"pqs{uuid.uuid4().hex[:12]}"):
        _work(dsn)
        assert main(["report", "--dsn", dsn, "--since", "1h"]) == 0
        out = capsys.readouterr().out
        assert "report.build" in out and "ValueError" in out and "bad input" in out
        assert "33.33 %" in out  # 2 of 6 jobs failed (one dead, one waiting to retry)
