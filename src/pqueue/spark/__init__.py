"""pqueue on Apache Spark: the ``pqueue`` data source, export and reports (docs/spark.md).

Install with ``pip install "pqueue-jobs[spark]"`` (PySpark 4.1+, pyarrow). This package does
not import pyspark until a name that needs it is used, so ``pqueue export`` works with
pyarrow alone.

- ``df.write.format("pqueue")`` / ``df.writeStream.format("pqueue")``: enqueue one job
  per row, idempotently (ids from the row key).
- ``spark.read.format("pqueue")``: jobs as rows (:data:`~pqueue.spark.history.JOB_SCHEMA_DDL`).
- :func:`enqueue`: a batch write that returns the counts its commit reported.
- :func:`check_python`: one line naming ``PYSPARK_PYTHON`` when a local session's Python
  workers cannot import pqueue (``DATA_SOURCE_NOT_FOUND`` otherwise).
- :mod:`pqueue.spark.report`: report functions from DataFrame to DataFrame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pqueue.extras import install_hint
from pqueue.ids import key_id

if TYPE_CHECKING:
    from pqueue.spark.datasource import PqueueDataSource
    from pqueue.spark.writer import EnqueueCounts

__all__ = ["PqueueDataSource", "EnqueueCounts", "check_python", "enqueue", "key_id", "register"]

_INSTALL_HINT = f"pqueue.spark needs PySpark and pyarrow: {install_hint('spark')}"


def __getattr__(name: str) -> Any:
    if name == "PqueueDataSource":
        try:
            from pqueue.spark.datasource import PqueueDataSource
        except ImportError as exc:
            raise ImportError(f"{_INSTALL_HINT} ({exc})") from exc
        return PqueueDataSource
    if name == "EnqueueCounts":
        from pqueue.spark.writer import EnqueueCounts

        return EnqueueCounts
    raise AttributeError(f"module 'pqueue.spark' has no attribute {name!r}")


def check_python(spark: Any) -> None:
    """Raise :class:`~pqueue.errors.ConfigError` in one line naming ``PYSPARK_PYTHON`` when
    ``spark`` (a local session) starts Python workers that cannot import pqueue, the cause
    of ``DATA_SOURCE_NOT_FOUND`` for ``format("pqueue")`` (docs/spark.md)."""
    from pqueue.spark.workers import check_python as check

    check(spark)


def register(spark: Any) -> None:
    """Register ``format("pqueue")`` on ``spark`` by hand (when auto-registration is off);
    first :func:`check_python`, since a registered source would fail the same way."""
    check_python(spark)
    from pqueue.spark.datasource import PqueueDataSource

    spark.dataSource.register(PqueueDataSource)


def enqueue(df: Any, **options: str) -> EnqueueCounts:
    """``df.write.format("pqueue").options(**options).mode("append").save()``, returning the
    counts (rows, jobs inserted, already present) that the driver's commit wrote."""
    import os
    import tempfile

    from pqueue.spark.writer import read_summary

    check_python(df.sparkSession)
    fd, path = tempfile.mkstemp(prefix="pqueue-write-", suffix=".json")
    os.close(fd)
    try:
        df.write.format("pqueue").options(**options).option("summaryPath", path).mode("append").save()
        return read_summary(path)
    finally:
        os.unlink(path)
