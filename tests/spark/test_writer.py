"""df.write.format("pqueue"): one job per row, claimable, and never twice (ids from the row key)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pqueue.spark
from pqueue.ids import key_id
from pqueue.job import JobStatus
from pqueue.sync import Client
from tests.services import require_spark
from tests.spark.helpers import BROKERS, claim_all, namespaced_dsn

require_spark()
pytestmark = pytest.mark.spark

ROWS = 10_000


@pytest.fixture(params=BROKERS)
def dsn(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from namespaced_dsn(request.param, f"pqs{uuid.uuid4().hex[:12]}")


def test_each_row_becomes_one_claimable_job_and_a_second_write_adds_none(spark: Any, dsn: str) -> None:
    df = spark.range(ROWS).selectExpr("id AS user_id", "concat('user-', id) AS name").repartition(2)
    options = {"dsn": dsn, "type": "email.send", "queue": "emails", "idColumn": "user_id"}
    first = pqueue.spark.enqueue(df, **options)  # format("pqueue") with no register call
    assert (first.rows, first.inserted, first.present, first.partitions) == (ROWS, ROWS, 0, 2)
    again = pqueue.spark.enqueue(df, **options)
    assert (again.rows, again.inserted, again.present) == (ROWS, 0, ROWS)
    leases = claim_all(dsn, "emails")
    jobs = {lease.job.id: lease.job for lease in leases}
    assert len(leases) == len(jobs) == ROWS
    for i in range(ROWS):
        job = jobs[key_id("emails", "email.send", str(i))]
        assert job.type == "email.send" and job.payload == {"user_id": i, "name": f"user-{i}"}


def test_a_task_that_fails_half_way_and_runs_again_leaves_one_job_per_row(
    spark: Any, dsn: str, tmp_path: Path
) -> None:
    from tests.spark.faulty import FaultyDataSource

    spark.dataSource.register(FaultyDataSource)
    marker = tmp_path / "failed-once"
    df = spark.range(2000).selectExpr("id", "id * 2 AS double").repartition(2)
    (
        df.write.format("pqueue_faulty")
        .option("dsn", dsn)
        .option("type", "calc")
        .option("queue", "retried")
        .option("idColumn", "id")
        .option("batchSize", "100")
        .option("failMarker", str(marker))
        .mode("append")
        .save()
    )
    assert marker.exists()  # a task did die half-way and Spark ran it again
    with Client(dsn) as client:
        assert client.stats().total(JobStatus.PENDING, "retried") == 2000
    assert sorted(lease.job.payload["id"] for lease in claim_all(dsn, "retried")) == list(range(2000))


@pytest.mark.parametrize("broker", [pytest.param("redis", marks=pytest.mark.redis)])
def test_a_write_without_a_row_key_is_refused_and_sends_nothing(spark: Any, broker: str) -> None:
    for dsn in namespaced_dsn(broker, f"pqs{uuid.uuid4().hex[:12]}"):
        df = spark.range(10)
        with pytest.raises(Exception, match="idColumn"):
            df.write.format("pqueue").option("dsn", dsn).option("type", "t").mode("append").save()
        with pytest.raises(Exception, match="append"):
            df.write.format("pqueue").option("dsn", dsn).option("type", "t").option("idColumn", "id").mode(
                "overwrite"
            ).save()
        with Client(dsn) as client:
            assert client.list_queues() == []
