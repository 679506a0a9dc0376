"""Operational reports over job rows: DataFrame in, DataFrames out.

The input is any DataFrame with the columns of :data:`pqueue.spark.history.JOB_SCHEMA_DDL`
(``spark.read.parquet(export_dir)`` or ``spark.read.format("pqueue")``), so users run
these functions in their own Spark jobs. Every figure is per queue and type; time buckets
use the session time zone (set ``spark.sql.session.timeZone=UTC``).

Definitions (docs/spark.md, "Reports"):
- a job was *cancelled* when its status is cancelled (an operator's decision, neither a
  failure nor a success); it *failed* when it was not cancelled and has an error recorded
  (``last_error_kind``); *dead* when its status is dead; *retried* when it ran more than
  once (``attempt > 1``); *recovered* when a lost lease put it back at least once
  (``recoveries > 0``). ``failure_rate`` is over the rows not cancelled (null when every
  row was); the other rates are over all rows.
- percentiles come from one ``percentile_approx(x, array(0.5, 0.95, 0.99))`` per column
  (one pass, approximate within ``1/accuracy`` of the rank).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the usual name

KEYS = ("queue", "type")
QUANTILES = (0.5, 0.95, 0.99)
ACCURACY = 1000


def _quantiles(column: str) -> list[Column]:
    """p50/p95/p99 of ``column`` from one ``percentile_approx`` call."""
    q = F.percentile_approx(column, F.array(*[F.lit(x) for x in QUANTILES]), ACCURACY)
    name = column.removesuffix("_s")
    return [q.getItem(i).alias(f"{name}_p{round(x * 100)}_s") for i, x in enumerate(QUANTILES)]


def _finished(jobs: DataFrame) -> DataFrame:
    return jobs.where(F.col("finished_at").isNotNull())


def throughput(jobs: DataFrame, window: str = "1 minute") -> DataFrame:
    """Jobs finished per ``window`` bucket:
    ``bucket, queue, type, finished, completed, dead, jobs_per_minute``."""
    bucket = F.window("finished_at", window)
    minutes = (F.col("bucket.end").cast("long") - F.col("bucket.start").cast("long")) / 60.0
    return (
        _finished(jobs)
        .groupBy(bucket.alias("bucket"), *KEYS)
        .agg(
            F.count(F.lit(1)).alias("finished"),
            F.count(F.when(F.col("status") == "completed", 1)).alias("completed"),
            F.count(F.when(F.col("status") == "dead", 1)).alias("dead"),
        )
        .withColumn("jobs_per_minute", F.col("finished") / minutes)
        .select(
            F.col("bucket.start").alias("bucket"), *KEYS, "finished", "completed", "dead", "jobs_per_minute"
        )
        .orderBy("bucket", *KEYS)
    )


def latency(jobs: DataFrame) -> DataFrame:
    """Wait and run percentiles: ``queue, type, jobs, wait_p50_s … wait_p99_s, run_p50_s … run_p99_s``."""
    return (
        jobs.groupBy(*KEYS)
        .agg(F.count(F.col("started_at")).alias("jobs"), *_quantiles("wait_s"), *_quantiles("run_s"))
        .orderBy(*KEYS)
    )


def latency_over_time(jobs: DataFrame, window: str = "1 minute") -> DataFrame:
    """p50/p95/p99 of wait and run per ``window`` bucket (all queues): ``bucket, wait_p50_s, …``."""
    return (
        _finished(jobs)
        .groupBy(F.window("finished_at", window).alias("w"))
        .agg(*_quantiles("wait_s"), *_quantiles("run_s"))
        .withColumn("bucket", F.col("w.start"))
        .drop("w")
        .orderBy("bucket")
    )


def _cancelled() -> Column:
    """A row an operator cancelled: its own outcome, never a failure."""
    return F.col("status") == "cancelled"


def _failed() -> Column:
    """A row with an error recorded that was not cancelled (a cancel records one too)."""
    return F.col("last_error_kind").isNotNull() & ~_cancelled()


def rates(jobs: DataFrame) -> DataFrame:
    """Counts and rates: ``queue, type, jobs, completed, failed, dead, retried, recovered,
    mean_attempts, cancelled, failure_rate, dead_rate, retry_rate, recovery_rate, cancel_rate``
    (``cancelled`` and ``cancel_rate`` come after the older columns, which keep their places).

    ``failure_rate`` is over the jobs not cancelled (null when all were), the others over all.
    """
    counts = jobs.groupBy(*KEYS).agg(
        F.count(F.lit(1)).alias("jobs"),
        F.count(F.when(F.col("status") == "completed", 1)).alias("completed"),
        F.count(F.when(_failed(), 1)).alias("failed"),
        F.count(F.when(F.col("status") == "dead", 1)).alias("dead"),
        F.count(F.when(F.col("attempt") > 1, 1)).alias("retried"),
        F.count(F.when(F.col("recoveries") > 0, 1)).alias("recovered"),
        F.avg("attempt").alias("mean_attempts"),
        F.count(F.when(_cancelled(), 1)).alias("cancelled"),
    )
    ended = F.col("jobs") - F.col("cancelled")
    counts = counts.withColumn("failure_rate", F.when(ended > 0, F.col("failed") / ended))
    for name, part in (
        ("dead", "dead"),
        ("retry", "retried"),
        ("recovery", "recovered"),
        ("cancel", "cancelled"),
    ):
        counts = counts.withColumn(f"{name}_rate", F.col(part) / F.col("jobs"))
    return counts.orderBy(*KEYS)


def top_errors(jobs: DataFrame, limit: int = 10) -> DataFrame:
    """The most frequent last errors of the jobs not cancelled:
    ``queue, type, last_error_kind, last_error_message, jobs``."""
    columns = (*KEYS, "last_error_kind", "last_error_message")
    return (
        jobs.where(_failed())
        .groupBy(*columns)
        .agg(F.count(F.lit(1)).alias("jobs"))
        .orderBy(F.desc("jobs"), *columns)
        .limit(limit)
    )


@dataclass(frozen=True, slots=True)
class Report:
    """Every table of a report, as DataFrames (nothing is computed until used)."""

    rates: DataFrame
    latency: DataFrame
    throughput: DataFrame
    latency_over_time: DataFrame
    top_errors: DataFrame


def report(jobs: DataFrame, *, window: str = "1 minute", errors: int = 10) -> Report:
    """All report tables over ``jobs`` (cached: each table reads it once more)."""
    cached = jobs.cache()
    return Report(
        rates=rates(cached),
        latency=latency(cached),
        throughput=throughput(cached, window),
        latency_over_time=latency_over_time(cached, window),
        top_errors=top_errors(cached, errors),
    )


def collect(frame: DataFrame) -> list[dict[str, Any]]:
    """A small result table as plain dicts (for printing and the HTML report)."""
    return [row.asDict() for row in frame.collect()]
