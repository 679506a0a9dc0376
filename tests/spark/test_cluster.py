"""The Spark writer and reader on a ``redis+cluster://`` DSN (issue 24): rows written into
three queues (slots on different masters, some with a priority) are stored once each,
even when the write runs twice, and the reader returns every one of them, whatever
master holds it. Small on purpose: the full writer and reader suites run on one Redis
server and Postgres (test_writer.py, test_stream_and_read.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.services import require_spark
from tests.spark.helpers import claim_all, namespaced_dsn

require_spark()
pytestmark = [pytest.mark.spark, pytest.mark.redis_cluster]

QUEUES = ["q00", "q01", "q02"]
ROWS = 60


@pytest.fixture
def dsn() -> Iterator[str]:
    yield from namespaced_dsn("redis_cluster", f"pqsc{uuid.uuid4().hex[:12]}")


def test_the_writer_and_reader_work_on_a_cluster(spark: Any, dsn: str) -> None:
    df = spark.createDataFrame([(i, i % 3 - 1) for i in range(ROWS)], "user_id long, prio int")
    for queue in QUEUES:
        writer = (
            df.write.format("pqueue").option("dsn", dsn).option("type", "cluster.job").option("queue", queue)
            .option("idColumn", "user_id").option("priorityColumn", "prio").mode("append")
        )  # fmt: skip
        writer.save()
        writer.save()  # the same rows again: nothing new

    read = spark.read.format("pqueue").option("dsn", dsn).option("numPartitions", "2").load()
    rows = read.select("queue", "status", "priority").collect()
    assert len(rows) == ROWS * len(QUEUES)
    assert {q: sum(1 for r in rows if r["queue"] == q) for q in QUEUES} == dict.fromkeys(QUEUES, ROWS)
    assert {r["status"] for r in rows} == {"pending"}
    assert sorted({r["priority"] for r in rows}) == [-1, 0, 1]

    leases = claim_all(dsn, QUEUES[0])
    assert sorted(lease.job.payload["user_id"] for lease in leases) == list(range(ROWS))
    assert leases[0].job.priority == 1, "a prioritized row is claimed first"
