"""The options of ``format("pqueue")``, checked once on the driver (no pyspark needed).

Spark hands a data source its options as strings in a case-insensitive map. This module
turns them into frozen dataclasses, refusing anything unclear with
:class:`~pqueue.errors.InvalidOption` that names the option, so a typo fails the job on
the driver before a single row is sent. The dataclasses are plain data: the writer and
reader objects that carry them are pickled to the executors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from pqueue.durations import UNITS, parse_duration
from pqueue.errors import InvalidOption, InvalidRequest
from pqueue.job import JobStatus
from pqueue.spec import (
    DEFAULT_MAX_RECOVERIES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_QUEUE,
    UNIQUE_UNTIL,
    validate_job_type,
    validate_queue_name,
)

DEFAULT_BATCH_SIZE = 5000
"""Rows per broker call: big enough to amortise the round trip, small enough to bound memory."""

WRITE_OPTIONS = frozenset(
    {
        "dsn",
        "type",
        "queue",
        "idcolumn",
        "keycolumns",
        "allowduplicates",
        "payloadcolumn",
        "runatcolumn",
        "delaycolumn",
        "uniquekeycolumn",
        "prioritycolumn",
        "uniquefor",
        "uniqueuntil",
        "maxretries",
        "maxrecoveries",
        "timeout",
        "batchsize",
        "summarypath",
    }
)
JOB_OPTIONS: dict[str, str] = {
    "queue": "queue",
    "delay": "delayColumn",
    "run_at": "runAtColumn",
    "max_retries": "maxRetries",
    "timeout": "timeout",
    "unique_for": "uniqueFor",
    "unique_key": "uniqueKeyColumn",
    "unique_until": "uniqueUntil",
    "max_recoveries": "maxRecoveries",
    "priority": "priorityColumn",
    "job_id": "idColumn",
}
"""Each job option (:data:`pqueue.options.OPTION_NAMES`) the writer sets, and the writer
option that sets it (``idColumn`` or ``keyColumns`` make ``job_id``)."""
JOB_OPTIONS_NOT_OFFERED: dict[str, str] = {
    "idempotency_key": "not offered yet: the row key (idColumn) already makes a re-sent row a no-op",
    "meta": "not offered yet: no column or option carries tags",
    "depends_on": "rows are independent jobs; a flow needs Client.enqueue_many or workflows",
    "on_parent_failure": "rows have no parents (see depends_on)",
    "limit_key": "not offered yet: the writer's Client has no router and no per-row limit",
    "rate": "not offered yet: the writer's Client has no router and no per-row limit",
    "concurrency": "not offered yet: the writer's Client has no router and no per-row limit",
}
"""The job options the writer does not offer, and why; tests/unit/test_option_parity.py
fails when an option is in neither table."""
READ_OPTIONS = frozenset({"dsn", "status", "queue", "since", "numpartitions", "pagesize"})
# Spark adds "path" when save()/load() get one; streaming adds its own bookkeeping keys.
_SPARK_OPTIONS = frozenset({"path", "checkpointlocation", "queryname"})


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _check_known(options: Mapping[str, str], known: frozenset[str], what: str) -> None:
    unknown = sorted(set(options) - known - _SPARK_OPTIONS)
    if unknown:
        raise InvalidOption(f"pqueue {what}: unknown option(s) {', '.join(unknown)}; known: {_names(known)}")


def _names(known: frozenset[str]) -> str:
    spelled = {
        "idcolumn": "idColumn",
        "keycolumns": "keyColumns",
        "allowduplicates": "allowDuplicates",
        "payloadcolumn": "payloadColumn",
        "runatcolumn": "runAtColumn",
        "delaycolumn": "delayColumn",
        "uniquekeycolumn": "uniqueKeyColumn",
        "prioritycolumn": "priorityColumn",
        "uniquefor": "uniqueFor",
        "uniqueuntil": "uniqueUntil",
        "maxretries": "maxRetries",
        "maxrecoveries": "maxRecoveries",
        "batchsize": "batchSize",
        "summarypath": "summaryPath",
        "numpartitions": "numPartitions",
        "pagesize": "pageSize",
    }
    return ", ".join(sorted(spelled.get(k, k) for k in known))


def _required(options: Mapping[str, str], key: str, name: str) -> str:
    value = options.get(key, "").strip()
    if not value:
        raise InvalidOption(f'pqueue: option "{name}" is required')
    return value


def _int(options: Mapping[str, str], key: str, name: str, default: int, least: int) -> int:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidOption(f'pqueue: option "{name}" must be an integer, got {text!r}') from None
    if value < least:
        raise InvalidOption(f'pqueue: option "{name}" must be >= {least}, got {value}')
    return value


def _seconds(options: Mapping[str, str], key: str, name: str) -> float | None:
    text = options.get(key)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InvalidOption(f'pqueue: option "{name}" must be a number of seconds, got {text!r}') from None
    if not math.isfinite(value) or value <= 0:
        raise InvalidOption(f'pqueue: option "{name}" must be > 0 seconds, got {text!r}')
    return value


def _bool(options: Mapping[str, str], key: str, name: str) -> bool:
    text = options.get(key, "false").strip().lower()
    if text not in ("true", "false"):
        raise InvalidOption(f'pqueue: option "{name}" must be true or false, got {text!r}')
    return text == "true"


def _column(options: Mapping[str, str], key: str) -> str | None:
    value = options.get(key, "").strip()
    return value or None


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """How rows become jobs (``df.write.format("pqueue").option(...)``)."""

    dsn: str
    type: str
    queue: str = DEFAULT_QUEUE
    key_columns: tuple[str, ...] = ()
    """The row key: its values make each job's id (:func:`pqueue.ids.key_id`)."""
    allow_duplicates: bool = False
    """Random ids: a retried task may enqueue a row twice (opt-in)."""
    payload_column: str | None = None
    """One column of JSON text that is the whole payload; else the row's other columns are."""
    run_at_column: str | None = None
    delay_column: str | None = None
    unique_key_column: str | None = None
    priority_column: str | None = None
    """An integer column: each row's job priority, -100..100 (null: 0; docs/priority.md)."""
    unique_for: float | None = None
    unique_until: str = "ttl"
    """``"done"``: each row's unique key is freed when its job completes (ADR 0152)."""
    max_retries: int | None = None
    """None: the worker takes the task's declaration (else 3), as for any job enqueued
    without the router (ADR 0157)."""
    max_recoveries: int = DEFAULT_MAX_RECOVERIES
    timeout: float | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    summary_path: str | None = None
    """A file on the driver's host where the commit writes its counts as JSON."""

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> WriteOptions:
        """Check the writer's options; raises :class:`InvalidOption` naming the bad one."""
        options = _lower(raw)
        _check_known(options, WRITE_OPTIONS, "writer")
        id_column = _column(options, "idcolumn")
        key_text = _column(options, "keycolumns")
        if id_column and key_text:
            raise InvalidOption('pqueue: give "idColumn" or "keyColumns", not both')
        keys = (
            (id_column,) if id_column else tuple(c.strip() for c in (key_text or "").split(",") if c.strip())
        )
        allow = _bool(options, "allowduplicates", "allowDuplicates")
        if not keys and not allow:
            raise InvalidOption(
                'pqueue writer: name the row key with option "idColumn" (or "keyColumns"): job ids '
                "are made from it, so a Spark task that runs twice enqueues nothing twice. To accept "
                'duplicates on retries instead, set option "allowDuplicates" to "true".'
            )
        if keys and allow:
            raise InvalidOption('pqueue writer: "allowDuplicates" makes random ids; drop it or the row key')
        run_at, delay = _column(options, "runatcolumn"), _column(options, "delaycolumn")
        if run_at and delay:
            raise InvalidOption('pqueue writer: give "runAtColumn" or "delayColumn", not both')
        unique_column = _column(options, "uniquekeycolumn")
        unique_for = _seconds(options, "uniquefor", "uniqueFor")
        if (unique_column is None) != (unique_for is None):
            raise InvalidOption(
                'pqueue writer: "uniqueKeyColumn" and "uniqueFor" (seconds the key is held) go together'
            )
        unique_until = options.get("uniqueuntil", "ttl").strip()
        if unique_until not in UNIQUE_UNTIL:
            raise InvalidOption(f'pqueue writer: "uniqueUntil" must be "ttl" or "done", got {unique_until!r}')
        if unique_until == "done" and unique_for is None:
            raise InvalidOption('pqueue writer: "uniqueUntil" needs "uniqueKeyColumn" and "uniqueFor"')
        return cls(
            dsn=_required(options, "dsn", "dsn"),
            type=validate_job_type(_required(options, "type", "type")),
            queue=validate_queue_name(options.get("queue", DEFAULT_QUEUE)),
            key_columns=keys,
            allow_duplicates=allow,
            payload_column=_column(options, "payloadcolumn"),
            run_at_column=run_at,
            delay_column=delay,
            unique_key_column=unique_column,
            priority_column=_column(options, "prioritycolumn"),
            unique_for=unique_for,
            unique_until=unique_until,
            max_retries=None
            if options.get("maxretries") is None
            else _int(options, "maxretries", "maxRetries", DEFAULT_MAX_RETRIES, 0),
            max_recoveries=_int(options, "maxrecoveries", "maxRecoveries", DEFAULT_MAX_RECOVERIES, 0),
            timeout=_seconds(options, "timeout", "timeout"),
            batch_size=_int(options, "batchsize", "batchSize", DEFAULT_BATCH_SIZE, 1),
            summary_path=_column(options, "summarypath"),
        )

    @property
    def option_columns(self) -> tuple[str, ...]:
        """Columns read as job options, so left out of a payload made of the row's columns."""
        named = (self.run_at_column, self.delay_column, self.unique_key_column, self.priority_column)
        return tuple(c for c in named if c is not None)

    @property
    def per_row(self) -> bool:
        """Whether some option differs per row (then each row becomes its own Task)."""
        return bool(self.option_columns)

    def check_columns(self, columns: list[str]) -> None:
        """Every column the options name must exist in the DataFrame."""
        present = set(columns)
        named = [*self.key_columns, *self.option_columns]
        if self.payload_column:
            named.append(self.payload_column)
        missing = [c for c in named if c not in present]
        if missing:
            raise InvalidOption(
                f"pqueue writer: no column(s) {', '.join(missing)} in the DataFrame; "
                f"it has {', '.join(columns)}"
            )


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Which jobs to read (``spark.read.format("pqueue").option(...)``)."""

    dsn: str
    statuses: tuple[JobStatus, ...] = tuple(JobStatus)
    queue: str | None = None
    since: float | None = None
    """Epoch seconds: only jobs enqueued or finished at or after it."""
    num_partitions: int = 1
    page_size: int = 1000

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> ReadOptions:
        """Check the reader's options; raises :class:`InvalidOption` naming the bad one."""
        options = _lower(raw)
        _check_known(options, READ_OPTIONS, "reader")
        statuses = tuple(JobStatus)
        if options.get("status", "").strip():
            statuses = tuple(_status(s.strip()) for s in options["status"].split(",") if s.strip())
        queue = options.get("queue", "").strip() or None
        return cls(
            dsn=_required(options, "dsn", "dsn"),
            statuses=statuses,
            queue=None if queue is None else validate_queue_name(queue),
            since=None if not options.get("since", "").strip() else parse_since(options["since"]),
            num_partitions=_int(options, "numpartitions", "numPartitions", 1, 1),
            page_size=_int(options, "pagesize", "pageSize", 1000, 1),
        )


def _status(text: str) -> JobStatus:
    try:
        return JobStatus(text)
    except ValueError:
        known = ", ".join(s.value for s in JobStatus)
        raise InvalidOption(f'pqueue reader: unknown "status" {text!r}; known: {known}') from None


def parse_since(text: str, *, now: datetime | None = None) -> float:
    """``since`` as epoch seconds: an ISO 8601 time (UTC unless it says), epoch seconds,
    or a span back from now such as ``90s``, ``30m``, ``12h``, ``7d``."""
    text = text.strip()
    problem = f'pqueue: "since" must be an ISO time, epoch seconds or a span like 7d or 12h, got {text!r}'
    if text[-1:].lower() in UNITS:  # a span back from now, read as every duration is
        try:
            span = parse_duration(text)
        except InvalidRequest:
            raise InvalidOption(problem) from None
        return (now or datetime.now(UTC)).timestamp() - span
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidOption(problem) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
