"""Enqueue one partition's rows, and sum up what the partitions did (no pyspark needed).

Each Spark task calls :func:`enqueue_batches` with its partition's Arrow batches: one
sync :class:`pqueue.Client` (one broker connection) for the partition, one batch enqueue
per ``batchSize`` rows. Job ids come from the row key, and an enqueue of an id that
exists stores nothing, so a task that Spark runs twice (a retry after a failure half-way,
a speculative copy) adds no job the first run already added: the second run counts
those rows as ``present``. docs/spark.md and docs/adr/0090-spark-ids-from-row-keys.md.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass

import pyarrow as pa

from pqueue.job import EnqueueResult
from pqueue.spark.options import WriteOptions
from pqueue.spark.rows import Jobs, jobs
from pqueue.sync import Client

log = logging.getLogger("pqueue.spark")


@dataclass(frozen=True, slots=True)
class EnqueueCounts:
    """What one partition (or, summed, one whole write) did."""

    rows: int = 0
    inserted: int = 0
    """Jobs this write created."""
    present: int = 0
    """Rows whose job id (or unique key) was already held: nothing stored for them."""
    partitions: int = 1

    def __add__(self, other: EnqueueCounts) -> EnqueueCounts:
        return EnqueueCounts(
            self.rows + other.rows,
            self.inserted + other.inserted,
            self.present + other.present,
            self.partitions + other.partitions,
        )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"{self.inserted} new jobs, {self.present} already present "
            f"({self.rows} rows in {self.partitions} partitions)"
        )


def _send(client: Client, batch: Jobs, options: WriteOptions) -> list[EnqueueResult]:
    if batch.tasks is not None:
        return client.enqueue_many(batch.tasks)
    return client.enqueue_map(
        options.type,
        batch.payloads,
        queue=options.queue,
        max_retries=options.max_retries,
        max_recoveries=options.max_recoveries,
        timeout=options.timeout,
        job_ids=batch.ids,
    )


def _slices(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for start in range(0, batch.num_rows, size):
            yield batch.slice(start, size)


def enqueue_batches(batches: Iterable[pa.RecordBatch], options: WriteOptions) -> EnqueueCounts:
    """Enqueue every row of ``batches`` as one job, ``batchSize`` rows per broker call.

    One call is in flight while the next slice's rows become jobs (a one-deep pipeline on
    the one connection): the broker's time overlaps the Python work instead of adding to it.
    A failed call stops the partition with its error; Spark retries the task.
    """
    rows = inserted = 0
    client = Client(options.dsn)
    sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pqueue-spark-send")
    pending: Future[list[EnqueueResult]] | None = None
    try:
        for part in _slices(batches, options.batch_size):
            made = jobs(part, options)
            if pending is not None:
                inserted += sum(1 for r in pending.result() if r.created)
            pending = sender.submit(_send, client, made, options)
            rows += part.num_rows
        if pending is not None:
            inserted += sum(1 for r in pending.result() if r.created)
    finally:
        sender.shutdown(wait=True, cancel_futures=True)
        client.close()
    return EnqueueCounts(rows, inserted, rows - inserted)


def summarize(parts: Sequence[EnqueueCounts | None], options: WriteOptions) -> EnqueueCounts:
    """Add up the partitions' counts on the driver; log one line, write ``summaryPath``."""
    total = EnqueueCounts(partitions=0)
    for part in parts:
        if part is not None:
            total += part
    log.info("pqueue: enqueued %s into %s/%s", total, options.queue, options.type)
    if options.summary_path:
        write_summary(options.summary_path, total)
    return total


def write_summary(path: str, counts: EnqueueCounts) -> None:
    """Write ``counts`` as JSON, atomically (a reader never sees half a file)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".pqueue-summary-")
    with os.fdopen(fd, "w") as out:
        json.dump(counts.to_dict(), out)
    os.replace(tmp, path)


def read_summary(path: str) -> EnqueueCounts:
    """The counts a write's commit left in ``summaryPath``."""
    with open(path) as src:
        return EnqueueCounts(**json.load(src))
