"""Job history to Parquet: finished jobs, one Hive-style folder per day, safe to re-run.

The broker keeps finished jobs only for its retention window (``?retention=``, a day by
default; dead jobs until purged). ``pqueue export`` copies them out, in the schema of
:mod:`pqueue.spark.history`, to ``DIR/day=YYYY-MM-DD/part-*.parquet`` (the day the job
finished, UTC), the fast input for ``pqueue report`` and for users' own Spark jobs.

A row is one finish of one job, identified by (``id``, ``finished_at``): re-exporting a
window that overlaps an earlier export writes only the finishes not already in that
day's folder, so exports can run on a schedule with overlapping windows. Each new file
is written under a hidden name and renamed into place, so readers never see half of one.
Needs pyarrow only (no Spark).
"""

from __future__ import annotations

import os
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pqueue.broker import JobScan
from pqueue.job import Job, JobStatus
from pqueue.spark.history import JOB_ARROW_SCHEMA, jobs_to_batch
from pqueue.sync import Client

FINISHED = (JobStatus.COMPLETED, JobStatus.DEAD, JobStatus.CANCELLED)
"""What export copies: jobs that will not change again without an admin."""


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What one export did."""

    scanned: int
    """Finished jobs the broker returned for the window."""
    written: int
    """Rows new to the export folder."""
    days: tuple[str, ...]
    """The day folders that received rows."""

    @property
    def already_there(self) -> int:
        return self.scanned - self.written


def _row_keys(table: pa.Table) -> pa.ChunkedArray:
    """(id, finished_at) as one text key per row."""
    micros = pc.cast(pc.cast(table["finished_at"], pa.int64()), pa.string())
    return pc.binary_join_element_wise(table["id"], micros, "@")


def _existing_keys(folder: Path) -> pa.Array | None:
    files = sorted(p for p in folder.glob("*.parquet") if not p.name.startswith((".", "_")))
    if not files:
        return None
    tables = [pq.read_table(path, columns=["id", "finished_at"]) for path in files]
    return pa.concat_arrays([chunk for t in tables for chunk in _row_keys(t).chunks])


def write_day(out: Path, day: str, table: pa.Table) -> int:
    """Append the rows of ``table`` (all finished on ``day``) that the day folder lacks."""
    folder = out / f"day={day}"
    folder.mkdir(parents=True, exist_ok=True)
    existing = _existing_keys(folder)
    keys = _row_keys(table)
    fresh = table
    if existing is not None:
        fresh = table.filter(pc.invert(pc.is_in(keys, value_set=existing)))
    if fresh.num_rows == 0:
        return 0
    name = f"part-{uuid.uuid4().hex}.parquet"
    hidden = folder / f".{name}"
    pq.write_table(fresh, hidden, compression="zstd")
    os.replace(hidden, folder / name)
    return int(fresh.num_rows)


def export_pages(pages: Iterable[Sequence[Job]], out: Path) -> ExportSummary:
    """Write finished jobs from ``pages`` under ``out``, one folder per day."""
    # day -> (id, finished_at) -> job: a job listed twice by one scan (it moved while
    # being read) is one row.
    buffered: dict[str, dict[tuple[str, float], Job]] = defaultdict(dict)
    for page in pages:
        for job in page:
            if job.finished_at is not None:
                day = job.finished_at.strftime("%Y-%m-%d")
                buffered[day][job.id, job.finished_at.timestamp()] = job
    scanned = sum(len(jobs) for jobs in buffered.values())
    written = 0
    days = []
    for day in sorted(buffered):
        batch = jobs_to_batch(list(buffered.pop(day).values()))
        table = pa.Table.from_batches([batch], schema=JOB_ARROW_SCHEMA)
        added = write_day(out, day, table)
        written += added
        if added:
            days.append(day)
    return ExportSummary(scanned, written, tuple(days))


def export(dsn: str, out: Path, *, since: float | None = None, queue: str | None = None) -> ExportSummary:
    """Export the broker's finished jobs (finished at or after ``since``) to ``out``."""
    with Client(dsn) as client:
        scan = JobScan(statuses=FINISHED, queue=queue, since=since, page_size=5000)
        return export_pages(client.scan_jobs(scan), out)
