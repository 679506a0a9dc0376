"""Validate enqueue requests and turn them into :class:`~pqueue.job.JobSpec`.

All input checks live here, in front of every broker, so a bad request is refused
before anything is written and every backend refuses the same things.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING

from pqueue.clock import to_epoch
from pqueue.errors import InvalidName, InvalidOption, InvalidPayload, PayloadTooLarge
from pqueue.ids import is_job_id, new_id, new_ids
from pqueue.job import NO_META, NONE_UNSET, JobSpec, JSONValue, unset_of
from pqueue.options import RUN_TIME_OPTIONS

if TYPE_CHECKING:
    from pqueue.limits import Limit

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_RECOVERIES = 5
DEFAULT_PRIORITY = 0
MIN_PRIORITY = -100
MAX_PRIORITY = 100
"""Job priorities run from MIN_PRIORITY to MAX_PRIORITY (Django's range); higher runs sooner."""
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
MAX_META_ENTRIES = 32
MAX_PARENTS = 1000
"""Most parents one job may depend on."""
PARENT_FAILURE_POLICIES = ("cancel", "run")
UNIQUE_UNTIL = ("ttl", "done")
"""Values of ``unique_until``: hold a unique key for its whole TTL, or until the job completes (ADR 0152)."""
"""``on_parent_failure`` values: cancel the dependant (default) or run it anyway."""
MAX_COUNT = 10_000
"""Upper bound for max_retries and max_recoveries (storage uses 32-bit integers)."""
MAX_SECONDS = 100 * 365 * 86400.0
"""Upper bound for delay, timeout and unique_for: 100 years. A due time must stay a date
every backend and ``datetime`` can hold, or the job could never be listed again."""

QUEUE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
"""Queue names: letters, digits, ``_ . -``; no ``{ } :`` so Redis keys stay well-formed."""
JOB_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-/]{0,127}\Z")
KEY_RE = re.compile(r"^[\x21-\x7e]{1,200}\Z")
"""Unique and idempotency keys: 1-200 printable ASCII characters, no spaces."""
META_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}\Z")


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_json_encoder = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=True
)
# One C encoder for every payload (JSONEncoder.encode builds a new one per call: half the
# cost of encoding a small payload). No circularity markers, so it is safe to share
# between threads: a circular payload fails on the recursion limit instead.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode_chunks = (
    _c_make_encoder(None, _refuse, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    if _c_make_encoder is not None
    else None
)


def _encode(payload: JSONValue) -> str:
    if _encode_chunks is None or type(payload) is str:
        return _json_encoder.encode(payload)
    return "".join(_encode_chunks(payload, 0))


@functools.lru_cache(maxsize=1024)
def _is_queue_name(name: str) -> bool:
    return QUEUE_NAME_RE.match(name) is not None


@functools.lru_cache(maxsize=4096)
def _is_job_type(name: str) -> bool:
    return JOB_TYPE_RE.match(name) is not None


def validate_queue_name(name: object) -> str:
    """Return ``name`` if it is a valid queue name, else raise :class:`InvalidName`."""
    if not isinstance(name, str) or not _is_queue_name(name):
        raise InvalidName(
            f"invalid queue name {name!r}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def validate_job_type(name: object) -> str:
    """Return ``name`` if it is a valid job type, else raise :class:`InvalidName`."""
    if not isinstance(name, str) or not _is_job_type(name):
        raise InvalidName(f"invalid job type {name!r}: use 1-128 letters, digits, '_', '.', ':', '-' or '/'")
    return name


def validate_parent_failure(policy: str) -> str:
    """Return ``policy`` if it is an ``on_parent_failure`` value, else raise :class:`InvalidOption`."""
    if policy not in PARENT_FAILURE_POLICIES:
        raise InvalidOption(f"on_parent_failure must be 'cancel' or 'run', got {policy!r}")
    return policy


def encode_payload(payload: JSONValue, *, max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> str:
    """Encode ``payload`` as compact JSON, refusing anything JSON cannot carry faithfully."""
    try:
        text = _encode(payload)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidPayload(
            f"payload is not a JSON value ({exc}); pass dicts, lists, str, int, float, "
            "bool or None (no NaN/Infinity)"
        ) from exc
    if text.isascii():
        size = len(text)
    else:
        try:
            size = len(text.encode())
        except UnicodeEncodeError as exc:  # a lone surrogate: not valid Unicode text
            raise InvalidPayload(f"payload holds text that is not valid Unicode ({exc.reason})") from exc
    if size > max_bytes:
        raise PayloadTooLarge(f"payload is {size} bytes encoded; the limit is {max_bytes} bytes")
    return text


def derive_unique_key(job_type: str, queue: str, payload_json: str) -> str:
    """The unique key used when only ``unique_for`` is given: type, queue and payload."""
    digest = hashlib.sha256(payload_json.encode()).hexdigest()[:32]
    return f"{job_type}@{queue}#{digest}"


def _seconds(name: str, value: float | timedelta | None, *, allow_zero: bool) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise InvalidOption(f"{name} must be a number of seconds or a timedelta, got {value!r}")
    if seconds < 0 or (seconds == 0 and not allow_zero) or seconds > MAX_SECONDS:
        least = ">= 0" if allow_zero else "> 0"
        raise InvalidOption(f"{name} must be {least} and at most {MAX_SECONDS:.0f} seconds, got {value!r}")
    return float(seconds)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InvalidOption(f"{name} must be an int from 0 to {MAX_COUNT}, got {value!r}")
    return value


def validate_priority(value: object) -> int:
    """Return ``value`` if it is a job priority (an int from -100 to 100), else raise
    :class:`InvalidOption`."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise InvalidOption(f"priority must be an int from {MIN_PRIORITY} to {MAX_PRIORITY}, got {value!r}")
    return value


def _key(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not KEY_RE.match(value):
        raise InvalidName(f"invalid {name} {value!r}: use 1-200 printable ASCII characters, no spaces")
    return value


def _meta(meta: Mapping[str, str] | None) -> Mapping[str, str]:
    if not meta:
        return NO_META
    if not isinstance(meta, Mapping) or len(meta) > MAX_META_ENTRIES:
        raise InvalidOption(f"meta must be a mapping of at most {MAX_META_ENTRIES} entries")
    for key, val in meta.items():
        if not isinstance(key, str) or not META_KEY_RE.match(key):
            raise InvalidName(f"invalid meta key {key!r}: 1-64 letters, digits, '_', '.' or '-'")
        if not isinstance(val, str) or len(val) > 1024:
            raise InvalidOption(f"meta[{key!r}] must be a str of at most 1024 characters")
    return dict(meta)


def build_spec(
    job_type: str,
    payload: JSONValue = None,
    *,
    queue: str = DEFAULT_QUEUE,
    delay: float | timedelta | None = None,
    run_at: datetime | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    max_recoveries: int = DEFAULT_MAX_RECOVERIES,
    priority: int = DEFAULT_PRIORITY,
    timeout: float | timedelta | None = None,
    unique_for: float | timedelta | None = None,
    unique_key: str | None = None,
    idempotency_key: str | None = None,
    meta: Mapping[str, str] | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    job_id: str | None = None,
    unique_until: str = "ttl",
    depends_on: Iterable[str] | None = None,
    on_parent_failure: str = "cancel",
    limit: Limit | None = None,
    unset: Iterable[str] = NONE_UNSET,
) -> JobSpec:
    """Check every option and return a :class:`JobSpec`, or raise an :class:`~pqueue.errors.InvalidJob`.

    ``unique_for`` (seconds) holds the job's unique key for that long after enqueue;
    with no ``unique_key`` the key is derived from type, queue and payload;
    ``unique_until="done"`` frees it as soon as the job completes (ADR 0152).
    ``job_id`` lets a producer choose the id (a UUID) so that re-sending the same job,
    e.g. from a retried Spark task, is ignored instead of duplicated.
    ``unset`` names the run-time options (:data:`~pqueue.options.RUN_TIME_OPTIONS`) the
    producer left to their defaults, so the worker takes its handler's instead (ADR 0157).
    """
    validate_job_type(job_type)
    validate_queue_name(queue)
    if job_id is not None and not is_job_id(job_id):
        raise InvalidName(f"invalid job id {job_id!r}: use a lower-case UUID string (see pqueue.ids)")
    payload_json = encode_payload(payload, max_bytes=max_payload_bytes)
    if delay is not None and run_at is not None:
        raise InvalidOption("pass either delay or run_at, not both")
    run_at_epoch = None
    if run_at is not None:
        if not isinstance(run_at, datetime):
            raise InvalidOption(f"run_at must be an aware datetime, got {run_at!r}")
        try:
            run_at_epoch = to_epoch(run_at)
        except ValueError as exc:
            raise InvalidOption(str(exc)) from exc
    unique_seconds = _seconds("unique_for", unique_for, allow_zero=False)
    unique = _key("unique_key", unique_key)
    if unique is not None and unique_seconds is None:
        raise InvalidOption("unique_key needs unique_for: how many seconds the key is held")
    if unique_seconds is not None and unique is None:
        unique = derive_unique_key(job_type, queue, payload_json)
    _unique_until(unique_until, unique_seconds)
    job_id = job_id or new_id()
    parents = (
        ()
        if depends_on is None and on_parent_failure == "cancel"
        else _parents(job_id, depends_on, on_parent_failure)
    )
    if parents and unique_seconds is not None:
        raise InvalidOption("depends_on cannot be combined with unique_for (a waiting job holds no key)")
    return JobSpec(
        id=job_id,
        type=job_type,
        queue=queue,
        payload_json=payload_json,
        delay=None if delay is None else _seconds("delay", delay, allow_zero=True),
        run_at=run_at_epoch,
        max_retries=_count("max_retries", max_retries),
        max_recoveries=_count("max_recoveries", max_recoveries),
        timeout=None if timeout is None else _seconds("timeout", timeout, allow_zero=False),
        unique_key=unique,
        unique_for=unique_seconds,
        idempotency_key=None if idempotency_key is None else _key("idempotency_key", idempotency_key),
        meta=_meta(meta) if meta else NO_META,
        depends_on=parents,
        on_parent_failure=on_parent_failure,
        limit=limit,
        unique_until=unique_until,
        priority=validate_priority(priority),
        unset=unset if unset is NONE_UNSET else validate_unset(unset),
    )


def validate_unset(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a job's ``unset``, if each is a run-time option; else :class:`InvalidOption`."""
    if not isinstance(names, frozenset):
        if isinstance(names, str):
            raise InvalidOption("unset must be a collection of option names, not one string")
        try:
            names = frozenset(names)
        except TypeError as exc:
            raise InvalidOption(f"unset must be a collection of option names ({exc})") from None
    return _checked_unset(names)


@functools.lru_cache(maxsize=64)
def _checked_unset(names: frozenset[str]) -> frozenset[str]:
    unknown = names.difference(RUN_TIME_OPTIONS)
    if unknown:
        raise InvalidOption(
            f"unset names {sorted(map(repr, unknown))}; only these options can be left to the "
            f"handler: {', '.join(RUN_TIME_OPTIONS)}"
        )
    return unset_of(sorted(names))


def _unique_until(value: object, unique_seconds: float | None) -> None:
    """Check ``unique_until``: "ttl" (the default) or "done", the latter with ``unique_for``."""
    if value not in UNIQUE_UNTIL:
        raise InvalidOption(f"unique_until must be 'ttl' or 'done', got {value!r}")
    if value == "done" and unique_seconds is None:
        raise InvalidOption(
            "unique_until='done' needs unique_for: the key is still freed after that long at the latest"
        )


def _parents(job_id: str, depends_on: Iterable[str] | None, policy: str) -> tuple[str, ...]:
    """Check ``depends_on`` (distinct job ids, not the job's own) and the failure policy."""
    validate_parent_failure(policy)
    if depends_on is None:
        return ()
    if isinstance(depends_on, str):
        raise InvalidOption("depends_on must be a list of job ids, not one string")
    parents = tuple(depends_on)
    if len(parents) > MAX_PARENTS:
        raise InvalidOption(f"depends_on names {len(parents)} jobs; at most {MAX_PARENTS}")
    for parent in parents:
        if not isinstance(parent, str) or not is_job_id(parent):
            raise InvalidName(f"invalid job id {parent!r} in depends_on: use the ids enqueue returned")
    if len(set(parents)) != len(parents):
        raise InvalidOption("depends_on names a job twice")
    if job_id in parents:
        raise InvalidOption(f"job {job_id} cannot depend on itself")
    return parents


def recheck_spec(spec: object) -> JobSpec:
    """Validate a spec changed after :func:`build_spec` (enqueue middleware may replace
    one): the same checks, so a hook cannot store a job that enqueue would refuse."""
    if not isinstance(spec, JobSpec):
        raise InvalidOption(f"enqueue middleware must return a JobSpec, got {type(spec).__name__}")
    try:
        payload = json.loads(spec.payload_json)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidPayload(f"payload_json of job {spec.id} is not JSON text: {exc}") from exc
    try:
        run_at = None if spec.run_at is None else datetime.fromtimestamp(spec.run_at, UTC)
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise InvalidOption(f"run_at of job {spec.id} is not an epoch time: {exc}") from exc
    return build_spec(
        spec.type,
        payload,
        queue=spec.queue,
        delay=spec.delay,
        run_at=run_at,
        max_retries=spec.max_retries,
        max_recoveries=spec.max_recoveries,
        priority=spec.priority,
        timeout=spec.timeout,
        unique_for=spec.unique_for,
        unique_key=spec.unique_key,
        unique_until=spec.unique_until,
        idempotency_key=spec.idempotency_key,
        meta=spec.meta,
        job_id=spec.id,
        depends_on=spec.depends_on or None,
        on_parent_failure=spec.on_parent_failure,
        limit=spec.limit,
        unset=spec.unset,
    )


def build_specs(
    job_type: str,
    payloads: Iterable[JSONValue],
    *,
    queue: str = DEFAULT_QUEUE,
    delay: float | timedelta | None = None,
    run_at: datetime | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    max_recoveries: int = DEFAULT_MAX_RECOVERIES,
    priority: int = DEFAULT_PRIORITY,
    timeout: float | timedelta | None = None,
    unique_for: float | timedelta | None = None,
    meta: Mapping[str, str] | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    job_ids: Sequence[str] | None = None,
    unique_until: str = "ttl",
    unset: Iterable[str] = NONE_UNSET,
) -> list[JobSpec]:
    """One spec per payload, all with the same options; raises on the first bad one.

    The options are checked once (by :func:`build_spec`), then each job only gets an id,
    its encoded payload and, with ``unique_for``, a unique key derived from that payload.
    ``job_ids``, one per payload, chooses the ids (e.g. :func:`pqueue.ids.key_id` of a
    row key, so a re-sent batch is refused instead of duplicated); else new ones are made.
    """
    first = build_spec(
        job_type,
        None,
        queue=queue,
        delay=delay,
        run_at=run_at,
        max_retries=max_retries,
        max_recoveries=max_recoveries,
        priority=priority,
        timeout=timeout,
        unique_for=unique_for,
        meta=meta,
        unique_until=unique_until,
        unset=unset,
    )
    shared_meta = MappingProxyType(dict(first.meta)) if first.meta else NO_META
    texts = [encode_payload(payload, max_bytes=max_payload_bytes) for payload in payloads]
    if job_ids is None:
        ids = new_ids(len(texts))
    else:
        ids = list(job_ids)
        if len(ids) != len(texts):
            raise InvalidOption(f"job_ids has {len(ids)} ids for {len(texts)} payloads")
        for job_id in ids:
            if not is_job_id(job_id):
                raise InvalidName(f"invalid job id {job_id!r}: use a lower-case UUID string (see pqueue.ids)")
    specs = []
    derive = unique_for is not None
    for job_id, payload_json in zip(ids, texts, strict=True):
        # Positional: a third cheaper than keywords for a frozen dataclass, and the order
        # is JobSpec's field order (tests/worker/test_enqueue_map.py checks every field).
        specs.append(
            JobSpec(
                job_id,
                job_type,
                queue,
                payload_json,
                first.delay,
                first.run_at,
                max_retries,
                max_recoveries,
                first.timeout,
                derive_unique_key(job_type, queue, payload_json) if derive else None,
                first.unique_for,
                None,  # idempotency_key: per job, so never shared
                shared_meta,
                (),
                "cancel",
                None,
                first.unique_until,
                first.priority,
                first.unset,
            )
        )
    return specs
