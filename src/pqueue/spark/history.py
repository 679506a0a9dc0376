"""Jobs as Arrow rows: the one schema of the Spark reader, ``pqueue export`` and the reports.

Pure pyarrow (no pyspark), so ``pqueue export`` writes Parquet without a JVM and the
reader and the exported files have the same columns. Times are UTC microseconds;
``wait_s`` and ``run_s`` describe the job's last run (docs/spark.md, "Schema").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import pyarrow as pa

from pqueue.job import Job

_TIME = pa.timestamp("us", tz="UTC")

JOB_ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("queue", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("attempt", pa.int32(), nullable=False),
        pa.field("recoveries", pa.int32(), nullable=False),
        pa.field("enqueued_at", _TIME, nullable=False),
        pa.field("started_at", _TIME),
        pa.field("finished_at", _TIME),
        pa.field("wait_s", pa.float64()),
        pa.field("run_s", pa.float64()),
        pa.field("last_error_kind", pa.string()),
        pa.field("last_error_message", pa.string()),
        pa.field("payload", pa.string()),
        pa.field("meta", pa.map_(pa.string(), pa.string())),
        pa.field("priority", pa.int32(), nullable=False),
    ]
)
"""The columns of a job row, in order (``priority``, ADR 0145, last: files exported before
it existed lack only that column)."""

JOB_SCHEMA_DDL = (
    "id STRING NOT NULL, type STRING NOT NULL, queue STRING NOT NULL, status STRING NOT NULL, "
    "attempt INT NOT NULL, recoveries INT NOT NULL, enqueued_at TIMESTAMP NOT NULL, "
    "started_at TIMESTAMP, finished_at TIMESTAMP, wait_s DOUBLE, run_s DOUBLE, "
    "last_error_kind STRING, last_error_message STRING, payload STRING, meta MAP<STRING, STRING>, "
    "priority INT NOT NULL"
)
"""The same schema in Spark's DDL (what ``spark.read.format("pqueue")`` returns)."""


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max((end - start).total_seconds(), 0.0)


def _payload_text(job: Job) -> str:
    return json.dumps(job.payload, separators=(",", ":"), ensure_ascii=False)


def jobs_to_batch(jobs: Sequence[Job]) -> pa.RecordBatch:
    """One Arrow batch of :data:`JOB_ARROW_SCHEMA` rows.

    ``wait_s``: from when the last run was due (``run_at``) to when it started;
    ``run_s``: from that start to the finish. Both are null until the job started/finished.
    """
    columns: dict[str, list[object]] = {name: [] for name in JOB_ARROW_SCHEMA.names}
    for job in jobs:
        error = job.last_error
        columns["id"].append(job.id)
        columns["type"].append(job.type)
        columns["queue"].append(job.queue)
        columns["status"].append(job.status.value)
        columns["attempt"].append(job.attempt)
        columns["recoveries"].append(job.recoveries)
        columns["enqueued_at"].append(job.created_at)
        columns["started_at"].append(job.started_at)
        columns["finished_at"].append(job.finished_at)
        columns["wait_s"].append(_seconds(job.run_at, job.started_at))
        columns["run_s"].append(_seconds(job.started_at, job.finished_at))
        columns["last_error_kind"].append(None if error is None else error.kind)
        columns["last_error_message"].append(None if error is None else error.message)
        columns["payload"].append(_payload_text(job))
        columns["meta"].append(list(job.meta.items()))
        columns["priority"].append(job.priority)
    return pa.RecordBatch.from_pydict(columns, schema=JOB_ARROW_SCHEMA)
