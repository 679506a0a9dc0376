"""``format("pqueue")``: the PySpark Python Data Source (PySpark 4.1+).

- ``df.write.format("pqueue")...save()``: one job per row, an Arrow writer per partition
  (:mod:`pqueue.spark.writer`), counts summed by the driver-side commit.
- ``df.writeStream.format("pqueue")...``: the same per micro-batch; ids from the row key
  make a batch replayed from the checkpoint add nothing.
- ``spark.read.format("pqueue")...load()``: jobs as rows of :data:`JOB_SCHEMA`
  (:mod:`pqueue.spark.reader`).

Spark pickles the writer and reader objects to its executors, so they hold only the
parsed options; connections are opened inside ``write``/``read``, one per task.
It is registered under the name ``pqueue`` by the ``pyspark_pqueue`` module (Spark
imports every ``pyspark_*`` module's ``DefaultSource``), or by hand with
``spark.dataSource.register(PqueueDataSource)``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from pqueue.errors import InvalidOption
from pqueue.spark.options import ReadOptions, WriteOptions
from pqueue.spark.reader import JOB_SCHEMA_DDL, ScanPart, plan_parts, read_part
from pqueue.spark.writer import EnqueueCounts, enqueue_batches, summarize

log = logging.getLogger("pqueue.spark")


class EnqueueCommit(WriterCommitMessage):
    """One task's counts, sent to the driver's commit."""

    def __init__(self, counts: EnqueueCounts) -> None:
        self.counts = counts


def _announce(counts: EnqueueCounts, options: WriteOptions, batch: int | None = None) -> None:
    """The commit's log line. Spark runs the commit in a Python worker with no logging set
    up, so the line goes to stderr (the driver's console) unless the user configured logging."""
    where = f" (micro-batch {batch})" if batch is not None else ""
    if not logging.getLogger().handlers and not log.handlers:
        print(f"pqueue: enqueued {counts} into {options.queue}/{options.type}{where}", file=sys.stderr)


def _counts(messages: Sequence[Any]) -> list[EnqueueCounts | None]:
    return [m.counts if isinstance(m, EnqueueCommit) else None for m in messages]


class PqueueWriter(DataSourceArrowWriter):
    """Batch writer: each task enqueues its partition, the driver adds up the counts."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> EnqueueCommit:
        return EnqueueCommit(enqueue_batches(iterator, self.options))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _announce(summarize(_counts(messages), self.options), self.options)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        done = summarize(_counts(messages), self.options)
        log.error(
            "pqueue: write failed; tasks that finished enqueued %s (re-run it: ids make that safe)", done
        )


class PqueueStreamWriter(DataSourceStreamArrowWriter):
    """Streaming sink: every micro-batch like a batch write, with the same row-key ids."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> EnqueueCommit:
        return EnqueueCommit(enqueue_batches(iterator, self.options))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        _announce(summarize(_counts(messages), self.options), self.options, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        log.error("pqueue: micro-batch %s failed; it is replayed from the checkpoint", batchId)


class PqueueReader(DataSourceReader):
    """Jobs, one partition per queue (and ``numPartitions`` slices of each)."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(part) for part in plan_parts(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        part: ScanPart = partition.value
        yield from read_part(self.options, part)


class PqueueDataSource(DataSource):
    """The ``pqueue`` data source; see the module docstring and docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return "pqueue"

    def schema(self) -> str:
        return JOB_SCHEMA_DDL

    def _write_options(self, schema: StructType, overwrite: bool) -> WriteOptions:
        if overwrite:
            raise InvalidOption(
                'pqueue writer: only mode("append") is supported (jobs are never overwritten)'
            )
        options = WriteOptions.parse(self.options)
        options.check_columns(list(schema.fieldNames()))
        return options

    def writer(self, schema: StructType, overwrite: bool) -> PqueueWriter:
        return PqueueWriter(self._write_options(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> PqueueStreamWriter:  # noqa: N802
        return PqueueStreamWriter(self._write_options(schema, overwrite))

    def reader(self, schema: StructType) -> PqueueReader:
        return PqueueReader(ReadOptions.parse(self.options))
