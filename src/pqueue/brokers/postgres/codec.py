"""Rows of the jobs and workers tables to pqueue objects, and specs to enqueue arrays.

Job rows come as tuples in :data:`JOB_COLUMNS` order (queries select ``{job_columns}``):
decoding by position is the claim path's hottest Python. A row that cannot be decoded
raises :class:`~pqueue.errors.CorruptJob` naming the job, never a bare
``KeyError``/``TypeError`` deep inside a worker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pqueue.broker import WorkerInfo
from pqueue.brokers.job_columns import JOB_COLUMNS
from pqueue.errors import CorruptJob
from pqueue.ids import is_job_id
from pqueue.job import (
    NO_META,
    NONE_UNSET,
    EnqueueResult,
    ErrorInfo,
    Job,
    JobSpec,
    JobStatus,
    Lease,
    unset_from_text,
    unset_to_text,
)

Row = Mapping[str, Any]

_EMPTY_META = "{}"

BEFORE_FLOWS = len(JOB_COLUMNS) - 2
"""How many of them existed before migration 0005 (an older hand_off function sends these)."""

_JOB_WIDTH = len(JOB_COLUMNS)

_STATUSES = {status.value: status for status in JobStatus}


def _utc(value: datetime | None) -> datetime | None:
    # Broker sessions run in UTC, so this is the identity unless someone changed that.
    return None if value is None else value.astimezone(UTC)


def _meta(value: object) -> Mapping[str, str]:
    if not value and isinstance(value, dict):
        return NO_META
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"meta must be an object of strings, got {value!r}")
    return value


def _errors(value: object) -> tuple[ErrorInfo, ...]:
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise TypeError(f"errors must be a list of objects, got {value!r}")
    return tuple(ErrorInfo.from_dict(e) for e in value) if value else ()


class _TooDeep:
    """What the JSON loader returns for a value nested too deeply for Python to decode."""

    def __repr__(self) -> str:
        return "<JSON nested too deeply to decode>"


TOO_DEEP: Any = _TooDeep()
"""Stands in for an undecodable JSON column, so :func:`row_to_job` can refuse the row
(raising inside psycopg's fetch would lose every other row of the claim)."""


def row_to_job(row: Sequence[Any]) -> Job:
    """Decode one jobs row in :data:`JOB_COLUMNS` order (JSON columns already parsed)."""
    try:
        (job_id, job_type, queue, payload, status, attempt, max_retries, recoveries, max_recoveries,
         run_at, created_at, timeout, unique_key, idempotency_key, started_at, finished_at, errors,
         result, meta, depends_on, parent_results) = row[:_JOB_WIDTH]  # fmt: skip
        # queries' {job_columns} end with limit_key, priority and unset; a hand-off row
        # carries only unset (handoff.parse_handoff puts None and 0 before it)
        width = len(row)
        limit_key = row[_JOB_WIDTH] if width > _JOB_WIDTH else None
        priority = row[_JOB_WIDTH + 1] if width > _JOB_WIDTH + 1 else 0
        unset = unset_from_text(row[_JOB_WIDTH + 2]) if width > _JOB_WIDTH + 2 else NONE_UNSET
        if payload is TOO_DEEP or result is TOO_DEEP:
            raise ValueError("its payload or result is JSON nested too deeply to decode")
        return Job(
            str(job_id),
            job_type,
            queue,
            payload,
            _STATUSES[status],
            attempt,
            max_retries,
            recoveries,
            max_recoveries,
            run_at.astimezone(UTC),
            created_at.astimezone(UTC),
            timeout,
            unique_key,
            idempotency_key,
            _utc(started_at),
            _utc(finished_at),
            _errors(errors),
            result,
            _meta(meta),
            *_flow(depends_on or (), parent_results),
            limit_key,
            priority,
            unset,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptJob(f"job {row[0] if row else None} in Postgres cannot be decoded: {exc}") from exc


def _flow(
    depends_on: Sequence[Any], results: Mapping[str, Any] | None
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """``Job.depends_on`` and ``Job.parent_results`` (in depends_on order) from their columns."""
    parents = tuple(str(p) for p in depends_on)
    found = results or {}
    return parents, {p: found[p] for p in parents if p in found}


def waiting_params(specs: Sequence[JobSpec]) -> dict[str, list[Any]]:
    """The parameters of ``enqueue_waiting``: jobs with parents, one array per column."""
    return {
        **column_arrays(specs, [s.id for s in specs]),
        "parents": [",".join(s.depends_on) for s in specs],
        "on_parent_failure": [s.on_parent_failure for s in specs],
        "limit_key": [None if s.limit is None else s.limit.key for s in specs],
        "limit_rate": [None if s.limit is None else s.limit.rate for s in specs],
        "limit_burst": [None if s.limit is None else s.limit.burst for s in specs],
        "limit_concurrency": [None if s.limit is None else s.limit.concurrency for s in specs],
    }


def column_arrays(specs: Sequence[JobSpec], ids: list[str]) -> dict[str, list[Any]]:
    """The columns every job insert without unique keys sends, one array per column."""
    return {
        "id": ids,
        "queue": [s.queue for s in specs],
        "type": [s.type for s in specs],
        "payload": [s.payload_json for s in specs],
        "at_epoch": [s.run_at for s in specs],
        "delay": [s.delay for s in specs],
        "max_retries": [s.max_retries for s in specs],
        "max_recoveries": [s.max_recoveries for s in specs],
        "timeout": [s.timeout for s in specs],
        "idempotency_key": [s.idempotency_key for s in specs],
        "meta": [_meta_json(s) for s in specs],
        "priority": [s.priority for s in specs],
        "unset": [unset_to_text(s.unset) for s in specs],
    }


def row_to_lease(token: object, expires_at: Any, row: Sequence[Any]) -> Lease:
    """Decode a claimed row (its lease token and expiry, then the job's columns)."""
    job = row_to_job(row)
    try:
        return Lease(job, str(token), expires_at.timestamp())
    except AttributeError as exc:
        raise CorruptJob(f"job {job.id} was claimed without a lease: {exc}") from exc


def row_to_worker(row: Row) -> WorkerInfo | None:
    """Decode one workers row; None if it is malformed (a listing drops it, as on Redis)."""
    try:
        return WorkerInfo(
            id=row["id"],
            host=row["host"],
            pid=row["pid"],
            queues=tuple(row["queues"]),
            concurrency=row["concurrency"],
            started_at=row["started_at"].timestamp(),
            last_seen=row["last_seen"].timestamp(),
            meta=dict(row["meta"] or {}),
        )
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


def lease_token(lease: Lease) -> int | None:
    """The numeric token of a lease, or None for one this broker never issued."""
    try:
        return int(lease.token)
    except ValueError:
        return None


def lease_arrays(leases: Sequence[Lease]) -> tuple[list[str], list[int | None]]:
    """Ids and tokens of leases as arrays (tokens this broker never issued never match)."""
    ids = [lease.job.id if is_job_id(lease.job.id) else _NIL for lease in leases]
    return ids, [lease_token(lease) for lease in leases]


_NIL = "00000000-0000-0000-0000-000000000000"


def one_params(spec: JobSpec) -> dict[str, Any]:
    """The parameters of the ``enqueue_one`` query (a spec without a unique key)."""
    return {"id": spec.id, "payload": spec.payload_json, **_options(spec)}


@dataclass(frozen=True, slots=True)
class PlainBatch:
    """A batch with distinct ids and no unique keys: the query to store it and its parameters.

    ``enqueue_same`` when the jobs differ only in id and payload (their shared options go
    as scalars: two arrays to send instead of eleven), else ``enqueue_plain``.
    """

    specs: Sequence[JobSpec]
    ids: list[str]
    same: bool
    """All jobs differ only in id and payload: ``enqueue_same`` can store them."""

    @classmethod
    def of(cls, specs: Sequence[JobSpec]) -> PlainBatch | None:
        """The batch, or None when it needs the general statement (unique keys, repeated ids)."""
        ids = [spec.id for spec in specs]
        if len(set(ids)) != len(ids) or any(spec.unique_key is not None for spec in specs):
            return None
        first = specs[0]
        return cls(specs, ids, all(_same_options(s, first) for s in specs))

    def same_params(self) -> dict[str, Any]:
        """The parameters of ``enqueue_same``: the ids and payloads, and the shared options."""
        payloads = [s.payload_json for s in self.specs]
        return {"id": self.ids, "payload": payloads, **_options(self.specs[0])}

    def plain_params(self) -> dict[str, list[Any]]:
        """The parameters of ``enqueue_plain``: one array per column."""
        return column_arrays(self.specs, self.ids)

    def results(self, created: int, created_ids: Sequence[str] | None) -> list[EnqueueResult]:
        """One result per spec: created, unless its id already existed."""
        if created == len(self.ids):
            return [EnqueueResult(job_id, True) for job_id in self.ids]
        made = set(created_ids or ())
        return [EnqueueResult(job_id, job_id in made) for job_id in self.ids]


def _same_options(spec: JobSpec, first: JobSpec) -> bool:
    """Whether two specs differ at most in id and payload (unique keys are None here)."""
    return (
        spec.queue == first.queue
        and spec.type == first.type
        and spec.run_at == first.run_at
        and spec.delay == first.delay
        and spec.max_retries == first.max_retries
        and spec.max_recoveries == first.max_recoveries
        and spec.priority == first.priority
        and spec.timeout == first.timeout
        and spec.idempotency_key == first.idempotency_key
        and (spec.meta is first.meta or spec.meta == first.meta)
        and spec.unset == first.unset
    )


def _options(spec: JobSpec) -> dict[str, Any]:
    """A spec's options besides id, payload and unique key, as query parameters."""
    return {
        "queue": spec.queue,
        "type": spec.type,
        "at_epoch": spec.run_at,
        "delay": spec.delay,
        "max_retries": spec.max_retries,
        "max_recoveries": spec.max_recoveries,
        "timeout": spec.timeout,
        "idempotency_key": spec.idempotency_key,
        "meta": _meta_json(spec),
        "priority": spec.priority,
        "unset": unset_to_text(spec.unset),
    }


def _meta_json(spec: JobSpec) -> str:
    return json.dumps(dict(spec.meta)) if spec.meta else _EMPTY_META


@dataclass(slots=True)
class EnqueueBatch:
    """Specs as the column arrays of the ``enqueue`` query, with in-batch duplicates folded.

    A spec whose id, or unique key in its queue, already appeared earlier in the batch is not sent;
    its result is the earlier spec's holder with ``created=False``.
    """

    columns: dict[str, list[Any]] = field(default_factory=dict)
    sent: int = 0
    alias: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, specs: Sequence[JobSpec]) -> EnqueueBatch:
        """The batch for ``enqueue`` (each job's limit as four more columns; ADR 0110)."""
        batch = cls({name: [] for name in _COLUMNS + _LIMIT_COLUMNS})
        first: dict[str, int] = {}
        for spec in specs:
            earlier = first.get(spec.id)
            if earlier is None and spec.unique_key is not None:
                earlier = first.get(f"key:{spec.queue}:{spec.unique_key}")
            if earlier is not None:
                batch.alias.append(-1 - earlier)
                continue
            first[spec.id] = batch.sent
            if spec.unique_key is not None:
                first[f"key:{spec.queue}:{spec.unique_key}"] = batch.sent
            batch.alias.append(batch.sent)
            batch.sent += 1
            batch._add(spec)
        return batch

    def _add(self, spec: JobSpec) -> None:
        c = self.columns
        c["id"].append(spec.id)
        c["queue"].append(spec.queue)
        c["type"].append(spec.type)
        c["payload"].append(spec.payload_json)
        c["at_epoch"].append(spec.run_at)
        c["delay"].append(spec.delay)
        c["max_retries"].append(spec.max_retries)
        c["max_recoveries"].append(spec.max_recoveries)
        c["timeout"].append(spec.timeout)
        c["unique_key"].append(spec.unique_key)
        c["unique_for"].append(spec.unique_for)
        c["idempotency_key"].append(spec.idempotency_key)
        c["meta"].append(_meta_json(spec))
        c["unique_until_done"].append(spec.unique_until == "done")
        c["priority"].append(spec.priority)
        c["unset"].append(unset_to_text(spec.unset))
        limit = spec.limit
        c["limit_key"].append(None if limit is None else limit.key)
        c["limit_rate"].append(None if limit is None else limit.rate)
        c["limit_burst"].append(None if limit is None else limit.burst)
        c["limit_concurrency"].append(None if limit is None else limit.concurrency)

    def results(self, rows: Sequence[Sequence[Any]]) -> list[EnqueueResult]:
        """Map the query's rows (id, holder, created) back onto every spec, in order."""
        sent = [EnqueueResult(str(holder), bool(created)) for _, holder, created in rows]
        if len(sent) != self.sent:
            raise RuntimeError(f"enqueue returned {len(sent)} rows for {self.sent} jobs")
        out = []
        for index in self.alias:
            out.append(sent[index] if index >= 0 else EnqueueResult(sent[-1 - index].id, False))
        return out


_COLUMNS = (
    "id",
    "queue",
    "type",
    "payload",
    "at_epoch",
    "delay",
    "max_retries",
    "max_recoveries",
    "timeout",
    "unique_key",
    "unique_for",
    "idempotency_key",
    "meta",
    "unique_until_done",
    "priority",
    "unset",
)
_LIMIT_COLUMNS = ("limit_key", "limit_rate", "limit_burst", "limit_concurrency")
