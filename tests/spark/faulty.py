"""A ``pqueue`` data source whose first task dies half-way through its partition, once.

Registered by the retry test as ``pqueue_faulty``. The first attempt enqueues the first
half of its first Arrow batch, leaves a marker file and raises; Spark runs the task again,
which sees the marker and writes the whole partition (ids from the row key keep it to one
job per row). Importable by Spark's Python workers (tests/spark/conftest.py sets PYTHONPATH).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.types import StructType

from pqueue.spark.datasource import EnqueueCommit, PqueueDataSource, PqueueWriter
from pqueue.spark.writer import enqueue_batches


class InjectedFailure(RuntimeError):
    """The failure this test source raises on purpose."""


class FaultyWriter(PqueueWriter):
    def __init__(self, writer: PqueueWriter, marker: str) -> None:
        super().__init__(writer.options)
        self.marker = marker

    def write(self, iterator: Iterator[pa.RecordBatch]) -> EnqueueCommit:
        def batches() -> Iterator[pa.RecordBatch]:
            for batch in iterator:
                half = batch.num_rows // 2
                yield batch.slice(0, half)
                try:
                    fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    pass
                else:
                    os.close(fd)
                    raise InjectedFailure("injected: task dies after enqueuing half its batch")
                yield batch.slice(half)

        return EnqueueCommit(enqueue_batches(batches(), self.options))


class FaultyDataSource(PqueueDataSource):
    @classmethod
    def name(cls) -> str:
        return "pqueue_faulty"

    def writer(self, schema: StructType, overwrite: bool) -> PqueueWriter:
        marker = self.options.pop("failmarker")
        return FaultyWriter(super().writer(schema, overwrite), marker)
