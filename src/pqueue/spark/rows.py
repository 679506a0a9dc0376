"""Arrow record batches to pqueue jobs: ids from the row key, payloads from the columns.

Pure pyarrow (no pyspark), so it is tested without a JVM and runs the same in a batch
write, a streaming micro-batch and :func:`pqueue.spark.enqueue_partition`. The rows become
jobs through the public validation only: ``Client.enqueue_map`` (one option set, ids
chosen here) when every row shares the options, else one :class:`~pqueue.Task` per row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pqueue.errors import InvalidOption, InvalidPayload
from pqueue.ids import key_ids
from pqueue.job import JSONValue
from pqueue.spark.options import WriteOptions
from pqueue.task import Task


@dataclass(frozen=True, slots=True)
class Jobs:
    """One slice of a batch, ready for the Client: shared options or one Task per row."""

    payloads: list[JSONValue]
    ids: list[str] | None
    tasks: list[Task] | None = None


def row_keys(batch: pa.RecordBatch, columns: tuple[str, ...]) -> list[str]:
    """Each row's key as text: the value of a single key column, or the JSON array of several.

    A null in a key column is refused: two rows with a null key would share one job.
    """
    values = [batch.column(name) for name in columns]
    for name, column in zip(columns, values, strict=True):
        if column.null_count:
            raise InvalidPayload(f"pqueue writer: key column {name!r} is null in {column.null_count} row(s)")
    if len(columns) == 1:
        return [str(v) for v in _plain(values[0]).to_pylist()]
    lists = [_plain(column).to_pylist() for column in values]
    return [
        json.dumps(list(row), separators=(",", ":"), ensure_ascii=False) for row in zip(*lists, strict=True)
    ]


def _plain(column: pa.Array) -> pa.Array:
    """Times, dates and decimals as text (ISO 8601, exact digits): JSON has no such types."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        fmt = "%Y-%m-%dT%H:%M:%SZ" if kind.tz is not None else "%Y-%m-%dT%H:%M:%S"
        if kind.tz is not None:
            column = column.cast(pa.timestamp(kind.unit, tz="UTC"))
        return pc.strftime(column, format=fmt)
    if pa.types.is_date(kind) or pa.types.is_decimal(kind) or pa.types.is_time(kind):
        return column.cast(pa.string())
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        raise InvalidPayload(
            "pqueue writer: binary columns cannot go in a JSON payload; encode them first "
            "(e.g. base64) or leave them out"
        )
    return column


def payloads(batch: pa.RecordBatch, options: WriteOptions) -> list[JSONValue]:
    """Each row's payload: the decoded JSON of ``payloadColumn``, else an object of the
    row's columns (all but those read as job options)."""
    if options.payload_column is not None:
        texts = batch.column(options.payload_column).to_pylist()
        try:
            return [None if text is None else json.loads(text) for text in texts]
        except (TypeError, ValueError) as exc:
            raise InvalidPayload(
                f"pqueue writer: column {options.payload_column!r} holds text that is not JSON ({exc})"
            ) from exc
    skip = set(options.option_columns)
    names = [name for name in batch.schema.names if name not in skip]
    if not names:
        return [None] * batch.num_rows
    columns = [_plain(batch.column(name)) for name in names]
    rows: list[JSONValue] = pa.RecordBatch.from_arrays(columns, names=names).to_pylist()
    return rows


def _run_at(value: Any, column: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    raise InvalidOption(f"pqueue writer: {column!r} must be a timestamp or epoch seconds, got {value!r}")


def jobs(batch: pa.RecordBatch, options: WriteOptions) -> Jobs:
    """The jobs of ``batch`` (validated later, by the Client, like any enqueue)."""
    bodies = payloads(batch, options)
    ids = None
    if options.key_columns:
        ids = key_ids(options.queue, options.type, row_keys(batch, options.key_columns))
    if not options.per_row:
        return Jobs(bodies, ids)
    n = batch.num_rows
    run_ats: list[Any] = [None] * n
    delays: list[Any] = [None] * n
    uniques: list[Any] = [None] * n
    priorities: list[Any] = [None] * n
    if options.run_at_column:
        run_ats = [_run_at(v, options.run_at_column) for v in batch.column(options.run_at_column).to_pylist()]
    if options.delay_column:
        delays = batch.column(options.delay_column).to_pylist()
    if options.unique_key_column:
        uniques = [None if v is None else str(v) for v in batch.column(options.unique_key_column).to_pylist()]
    if options.priority_column:
        priorities = batch.column(options.priority_column).to_pylist()
    tasks = [
        Task(
            options.type,
            bodies[i],
            queue=options.queue,
            run_at=run_ats[i],
            delay=delays[i],
            max_retries=options.max_retries,
            max_recoveries=options.max_recoveries,
            priority=priorities[i],
            timeout=options.timeout,
            unique_key=uniques[i],
            unique_for=None if uniques[i] is None else options.unique_for,
            unique_until="ttl" if uniques[i] is None else options.unique_until,
            job_id=None if ids is None else ids[i],
        )
        for i in range(n)
    ]
    return Jobs(bodies, ids, tasks)
