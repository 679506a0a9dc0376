"""Read jobs into Spark: plan the partitions on the driver, page through each on an executor.

Partitions follow the broker's layout through one Inspector call, ``scan_jobs``: one per
queue (a Redis queue's keys live together), each cut into ``numPartitions`` slices (on
Postgres a slice is a range of ``seq mod n`` read through a server-side cursor). Each
partition opens one sync :class:`pqueue.Client`, so the broker sees one connection per
running task.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from pqueue.broker import JobScan
from pqueue.spark.history import JOB_SCHEMA_DDL, jobs_to_batch
from pqueue.spark.options import ReadOptions
from pqueue.sync import Client

__all__ = ["JOB_SCHEMA_DDL", "ScanPart", "plan_parts", "read_part"]


@dataclass(frozen=True, slots=True)
class ScanPart:
    """One Spark input partition: a queue (None: all) and one slice of it."""

    queue: str | None
    part: int
    parts: int


def plan_parts(options: ReadOptions) -> list[ScanPart]:
    """The partitions of a read: ``numPartitions`` slices of the queue, or of every queue."""
    n = options.num_partitions
    if options.queue is not None:
        queues: list[str | None] = [options.queue]
    else:
        client = Client(options.dsn)
        try:
            queues = list(client.list_queues()) or [None]
        finally:
            client.close()
    return [ScanPart(queue, i, n) for queue in queues for i in range(n)]


def read_part(options: ReadOptions, part: ScanPart) -> Iterator[pa.RecordBatch]:
    """The jobs of one partition as Arrow batches of at most ``pageSize`` rows."""
    scan = JobScan(
        statuses=options.statuses,
        queue=part.queue,
        since=options.since,
        part=part.part,
        parts=part.parts,
        page_size=options.page_size,
    )
    client = Client(options.dsn)
    try:
        for page in client.scan_jobs(scan):
            yield jobs_to_batch(page)
    finally:
        client.close()
