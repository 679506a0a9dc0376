"""Job hashes <-> pqueue objects. Stored times are integer milliseconds (docs/redis.md).

A hash that cannot be decoded raises :class:`~pqueue.errors.CorruptJob` naming the job,
so one malformed key is reported instead of crashing whoever reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pqueue.broker import WorkerInfo
from pqueue.errors import CorruptJob
from pqueue.job import (
    ErrorInfo,
    Job,
    JobSpec,
    JobStatus,
    Lease,
    errors_from_json,
    unset_from_text,
    unset_to_text,
)

_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def to_ms(seconds: float) -> int:
    """Seconds (an epoch or a duration) -> integer milliseconds."""
    return round(seconds * 1000)


_STATUS = {status.value: status for status in JobStatus}
_fromtimestamp = datetime.fromtimestamp
_loads = json.loads
# json.loads's C scanner (an attribute every JSONDecoder sets; typeshed does not list it)
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _load(text: str) -> Any:
    """Stored JSON text -> value. pqueue stores compact JSON, which the C scanner takes
    whole at a fifth of ``json.loads``'s cost; anything else (whitespace, trailing text,
    malformed) goes through ``json.loads``, which judges it and names the fault."""
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:
        return _loads(text)
    if end != len(text):
        return _loads(text)
    return value


def _when(ms: str | int) -> datetime:
    return _fromtimestamp(int(ms) / 1000, UTC)


def _maybe_when(ms: str | int | None) -> datetime | None:
    return None if ms is None else _fromtimestamp(int(ms) / 1000, UTC)


def pairs(flat: Sequence[str]) -> dict[str, str]:
    """A flat ``HGETALL`` reply -> dict (when a field repeats, the last value wins)."""
    names_values = iter(flat)  # an odd length fails as strict zip does
    return dict(zip(names_values, names_values, strict=True))


def decode_job(job_id: str, queue: str, h: Mapping[str, str]) -> Job:
    """Build a :class:`Job` from its hash; raises :class:`CorruptJob` if it is malformed."""
    try:
        get = h.get
        timeout, result, meta, errors = get("timeout"), get("result"), get("meta"), get("errors")
        return Job(
            id=job_id,
            type=h["type"],
            queue=queue,
            payload=_load(h["payload"]),
            status=_STATUS[h["status"]],
            attempt=int(get("attempt") or 0),
            max_retries=int(h["max_retries"]),
            recoveries=int(get("recoveries") or 0),
            max_recoveries=int(h["max_recoveries"]),
            run_at=_when(h["run_at"]),
            created_at=_when(h["created_at"]),
            timeout=None if timeout is None else float(timeout),
            unique_key=get("unique_key"),
            idempotency_key=get("idempotency_key"),
            started_at=_maybe_when(get("started_at")),
            finished_at=_maybe_when(get("finished_at")),
            errors=errors_from_json(errors) if errors else (),
            result=None if result is None else _load(result),
            meta={} if meta is None else _string_map(_load(meta)),
            **(_flow(h) if "depends_on" in h else {}),
            limit_key=get("limit_key"),
            priority=int(get("priority") or 0),
            unset=unset_from_text(get("unset")),  # absent in a hash an older pqueue stored
        )
    except (KeyError, ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
        raise CorruptJob(f"job {job_id} in queue {queue!r} is malformed in Redis: {exc!r}") from exc


def _flow(h: Mapping[str, str]) -> dict[str, Any]:
    """``depends_on`` and ``parent_results`` (fields presult:<parent id>) of a job with parents."""
    parents = tuple(str(p) for p in _loads(h["depends_on"]))
    results = {p: _loads(h["presult:" + p]) for p in parents if "presult:" + p in h}
    return {"depends_on": parents, "parent_results": results}


def waiting_header(specs: Sequence[JobSpec]) -> str:
    """enqueue_waiting.lua's ARGV[4]: one JSON object per job (absent options left out)."""
    jobs: list[dict[str, Any]] = []
    for s in specs:
        job: dict[str, Any] = {
            "id": s.id,
            "type": s.type,
            "payload": _utf8_json(s.payload_json),
            "max_retries": s.max_retries,
            "max_recoveries": s.max_recoveries,
            "depends_on": list(s.depends_on),
            "on_parent_failure": s.on_parent_failure,
        }
        if s.run_at is not None:
            job["run_at"] = to_ms(s.run_at)
        if s.delay is not None:
            job["delay"] = to_ms(s.delay)
        if s.timeout is not None:
            job["timeout"] = repr(s.timeout)
        if s.idempotency_key is not None:
            job["idempotency_key"] = s.idempotency_key
        if s.meta:
            job["meta"] = _utf8_json(_compact(dict(s.meta)))
        if s.limit is not None:  # kept for its release into the group's lane (ADR 0110)
            job["limit_key"] = s.limit.key
            job["limit"] = s.limit.to_text()
        if s.priority:
            job["priority"] = s.priority
        if s.unset:
            job["unset"] = unset_to_text(s.unset)
        jobs.append(job)
    return _compact(jobs)


def decode_lease(queue: str, job_id: str, flat: Sequence[str], expires_at: float) -> Lease:
    """A claim script reply entry -> :class:`Lease`; :class:`CorruptJob` if malformed."""
    h = pairs(flat)
    return Lease(decode_job(job_id, queue, h), h["token"], expires_at)


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise TypeError("meta is not an object of strings")
    return value


def _shared(values: list[Any]) -> Any:
    """One value when every job has it (sent once), else the whole column."""
    return values[0] if values.count(values[0]) == len(values) else values


_OPTIONAL_COLUMNS: tuple[tuple[str, Callable[[JobSpec], Any]], ...] = (
    ("run_at", lambda s: None if s.run_at is None else to_ms(s.run_at)),
    ("delay", lambda s: None if s.delay is None else to_ms(s.delay)),
    ("timeout", lambda s: None if s.timeout is None else repr(s.timeout)),
    ("unique_key", lambda s: s.unique_key),
    ("unique_for", lambda s: None if s.unique_for is None else max(1, to_ms(s.unique_for))),
    ("idempotency_key", lambda s: s.idempotency_key),
    ("meta", lambda s: _compact(dict(s.meta)) if s.meta else None),
    ("limit_key", lambda s: None if s.limit is None else s.limit.key),
    ("limit", lambda s: None if s.limit is None else s.limit.to_text()),
    ("unique_done", lambda s: 1 if s.unique_until == "done" else None),
    ("priority", lambda s: s.priority or None),
)
"""enqueue.lua's optional columns: name, and a job's value (None: the job does not set it)."""


def _sets_options(spec: JobSpec) -> bool:
    """Whether ``spec`` sets any optional column (most jobs set none: a cheaper header).
    Names every field :data:`_OPTIONAL_COLUMNS` reads; the header's unit tests check each."""
    return not (
        spec.run_at is None
        and spec.delay is None
        and spec.timeout is None
        and spec.unique_key is None
        and spec.unique_for is None
        and spec.idempotency_key is None
        and not spec.meta
        and spec.limit is None
        and not spec.priority
    )


def enqueue_header(specs: Sequence[JobSpec]) -> str:
    """enqueue.lua's ARGV[6]: the batch as JSON columns (see the script's header).

    Columns rather than rows: shared values travel once and an absent option costs
    nothing, which halves the server's decoding time for typical batches.
    """
    header: dict[str, Any] = {
        "id": [s.id for s in specs],
        "payload": [s.payload_json for s in specs],
        "type": _shared([s.type for s in specs]),
        "max_retries": _shared([s.max_retries for s in specs]),
        "max_recoveries": _shared([s.max_recoveries for s in specs]),
    }
    if any(s.unset for s in specs):  # options left to the handler (ADR 0157): one value, usually
        header["unset"] = _shared([unset_to_text(s.unset) for s in specs])
    optioned = [s for s in specs if _sets_options(s)]
    if optioned:
        for name, value_of in _OPTIONAL_COLUMNS:
            if any(value_of(s) is not None for s in optioned):
                header[name] = [value_of(s) for s in specs]
    text = _compact(header)
    if not _is_utf8(text):
        header["payload"] = [_utf8_json(p) for p in header["payload"]]
        if "meta" in header:
            header["meta"] = [None if m is None else _utf8_json(m) for m in header["meta"]]
        text = _compact(header)
    return text


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _utf8_json(text: str) -> str:
    """The same JSON value, sendable as UTF-8: a lone surrogate (legal in a Python str, not
    in UTF-8) is re-encoded as its ``\\uXXXX`` escape. Cheap when nothing needs it."""
    if _is_utf8(text):
        return text
    return json.dumps(json.loads(text), ensure_ascii=True, separators=(",", ":"))


def encode_leases(
    leases: Sequence[Lease], results: Sequence[str | None] | None = None, *, unique: bool = False
) -> str:
    """The ``{id, token[, result][, unique]}`` columns that ack/extend/release.lua take as one
    ARGV; with ``unique``, each job's unique key when some job has one (ack.lua frees the
    keys held until done, ADR 0152)."""
    batch: dict[str, list[Any]] = {
        "id": [lease.job.id for lease in leases],
        "token": [lease.token for lease in leases],
    }
    if results is not None and results.count(None) != len(results):
        batch["result"] = [None if r is None else _utf8_json(r) for r in results]
    if unique and any(lease.job.unique_key is not None for lease in leases):
        batch["unique"] = [lease.job.unique_key for lease in leases]
    return _compact(batch)


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
    except (KeyError, ValueError, TypeError, AttributeError, RecursionError):
        return None
