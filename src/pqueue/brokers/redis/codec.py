"""Job hashes <-> pqueue objects. Stored times are integer milliseconds (docs/redis.md).

A hash that cannot be decoded raises :class:`~pqueue.errors.CorruptJob` naming the job,
so one malformed key is reported instead of crashing whoever reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pqueue.broker import WorkerInfo
from pqueue.errors import CorruptJob
from pqueue.job import ErrorInfo, Job, JobSpec, JobStatus, Lease, errors_from_json

_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def to_ms(seconds: float) -> int:
    """Seconds (an epoch or a duration) -> integer milliseconds."""
    return round(seconds * 1000)


def _when(ms: str) -> datetime:
    return datetime.fromtimestamp(int(ms) / 1000, UTC)


def _maybe_when(ms: str | None) -> datetime | None:
    return None if ms is None else _when(ms)


def pairs(flat: Sequence[str]) -> dict[str, str]:
    """A flat ``HGETALL`` reply -> dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def decode_job(job_id: str, queue: str, h: Mapping[str, str]) -> Job:
    """Build a :class:`Job` from its hash; raises :class:`CorruptJob` if it is malformed."""
    try:
        get = h.get
        timeout, result, meta = get("timeout"), get("result"), get("meta")
        return Job(
            id=job_id,
            type=h["type"],
            queue=queue,
            payload=json.loads(h["payload"]),
            status=JobStatus(h["status"]),
            attempt=int(get("attempt", 0)),
            max_retries=int(h["max_retries"]),
            recoveries=int(get("recoveries", 0)),
            max_recoveries=int(h["max_recoveries"]),
            run_at=_when(h["run_at"]),
            created_at=_when(h["created_at"]),
            timeout=None if timeout is None else float(timeout),
            unique_key=get("unique_key"),
            idempotency_key=get("idempotency_key"),
            started_at=_maybe_when(get("started_at")),
            finished_at=_maybe_when(get("finished_at")),
            errors=errors_from_json(get("errors")),
            result=None if result is None else json.loads(result),
            meta={} if meta is None else _string_map(json.loads(meta)),
        )
    except (KeyError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise CorruptJob(f"job {job_id} in queue {queue!r} is malformed in Redis: {exc!r}") from exc


def decode_lease(queue: str, job_id: str, flat: Sequence[str]) -> Lease:
    """A claim script reply entry -> :class:`Lease`; :class:`CorruptJob` if malformed."""
    h = pairs(flat)
    job = decode_job(job_id, queue, h)
    try:
        return Lease(job, h["token"], int(h["lease_expires_at"]) / 1000)
    except (KeyError, ValueError) as exc:
        raise CorruptJob(f"job {job_id} in queue {queue!r} has a malformed lease: {exc!r}") from exc


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise TypeError("meta is not an object of strings")
    return value


def spec_header(spec: JobSpec) -> list[Any]:
    """The per-job entry of enqueue.lua's JSON header (the payload travels apart)."""
    return [
        spec.id,
        spec.type,
        None if spec.run_at is None else to_ms(spec.run_at),
        None if spec.delay is None else to_ms(spec.delay),
        spec.max_retries,
        spec.max_recoveries,
        None if spec.timeout is None else repr(spec.timeout),
        spec.unique_key,
        None if spec.unique_for is None else max(1, to_ms(spec.unique_for)),
        spec.idempotency_key,
        _compact(dict(spec.meta)) if spec.meta else None,
    ]


def encode_headers(headers: list[list[Any]]) -> str:
    return _compact(headers)


def _clean(text: str) -> str:
    """Text safe to send as UTF-8 (lone surrogates from odd exceptions are replaced)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def encode_error(error: ErrorInfo) -> str:
    """The error record fail.lua completes with attempt and at."""
    return _compact(
        {"kind": _clean(error.kind), "message": _clean(error.message), "traceback": _clean(error.traceback)}
    )


def encode_worker(info: WorkerInfo, *, now: float, expires_at: float) -> str:
    return _compact(
        {
            "id": info.id,
            "host": info.host,
            "pid": info.pid,
            "queues": list(info.queues),
            "concurrency": info.concurrency,
            "started_at": info.started_at,
            "last_seen": now,
            "expires_at": expires_at,
            "meta": dict(info.meta),
        }
    )


def decode_worker(text: str) -> tuple[WorkerInfo, float] | None:
    """A worker registration and its expiry, or None if it is malformed (it is dropped)."""
    try:
        d = json.loads(text)
        info = WorkerInfo(
            id=str(d["id"]),
            host=str(d["host"]),
            pid=int(d["pid"]),
            queues=tuple(str(q) for q in d["queues"]),
            concurrency=int(d["concurrency"]),
            started_at=float(d["started_at"]),
            last_seen=float(d["last_seen"]),
            meta={str(k): str(v) for k, v in d.get("meta", {}).items()},
        )
        return info, float(d["expires_at"])
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
