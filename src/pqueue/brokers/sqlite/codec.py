"""Rows of the SQLite jobs and workers tables to pqueue objects.

Job rows come as tuples in :data:`JOB_COLUMNS` order, then ``limit_key``, ``priority`` and
``unset``; times are REAL epoch seconds and JSON columns TEXT. A row that cannot be decoded raises
:class:`~pqueue.errors.CorruptJob` naming the job.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pqueue.broker import WorkerInfo
from pqueue.clock import to_datetime
from pqueue.errors import CorruptJob
from pqueue.job import NO_META, Job, JobStatus, errors_from_json, unset_from_text

_STATUSES = {status.value: status for status in JobStatus}


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def row_to_job(row: Sequence[Any]) -> Job:
    """Decode one jobs row (``{job_columns}`` of queries.sql)."""
    try:
        (job_id, job_type, queue, payload, status, attempt, max_retries, recoveries, max_recoveries,
         run_at, created_at, timeout, unique_key, idempotency_key, started_at, finished_at, errors,
         result, meta, depends_on, parent_results, limit_key, priority, unset) = row  # fmt: skip
        parents = tuple(json.loads(depends_on)) if depends_on else ()
        results = _json(parent_results) or {}
        meta_map = json.loads(meta) if meta else {}
        if not isinstance(meta_map, dict):
            raise TypeError(f"meta must be an object, got {meta_map!r}")
        return Job(
            id=job_id,
            type=job_type,
            queue=queue,
            payload=json.loads(payload),
            status=_STATUSES[status],
            attempt=attempt,
            max_retries=max_retries,
            recoveries=recoveries,
            max_recoveries=max_recoveries,
            run_at=to_datetime(run_at),
            created_at=to_datetime(created_at),
            timeout=timeout,
            unique_key=unique_key,
            idempotency_key=idempotency_key,
            started_at=None if started_at is None else to_datetime(started_at),
            finished_at=None if finished_at is None else to_datetime(finished_at),
            errors=errors_from_json(errors),
            result=_json(result),
            meta=meta_map or NO_META,
            depends_on=parents,
            parent_results={p: results[p] for p in parents if p in results},
            limit_key=limit_key,
            priority=priority,
            unset=unset_from_text(unset),
        )
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise CorruptJob(f"job {row[0] if row else None} in SQLite cannot be decoded: {exc}") from exc


def row_to_worker(row: Sequence[Any]) -> WorkerInfo | None:
    """Decode one workers row; None if it is malformed (a listing drops it)."""
    try:
        wid, host, pid, queues, concurrency, started_at, last_seen, meta = row
        return WorkerInfo(
            id=wid,
            host=host,
            pid=pid,
            queues=tuple(json.loads(queues)),
            concurrency=concurrency,
            started_at=started_at,
            last_seen=last_seen,
            meta=dict(json.loads(meta) or {}),
        )
    except (ValueError, TypeError):
        return None
