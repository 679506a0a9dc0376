"""The job model: what is stored (:class:`Job`), what is asked for (:class:`JobSpec`),
and what a worker holds while it runs a job (:class:`Lease`).

State machine (see docs/architecture.md)::

    enqueue -> pending | scheduled
    pending --claim--> active
    scheduled | retry --(run_at passes)--> due, claimed like pending
    active --ack--> completed            (pruned after the retention window)
    active --fail(retry_in)--> retry
    active --fail(None)--> dead          (the dead-letter queue)
    active --release--> pending | scheduled  (graceful drain; no attempt burnt)
    active --lease expires, recover--> pending | dead (past max_recoveries)
    pending | scheduled | retry --cancel--> cancelled
    active --cancel_active--> cancelled  (lease revoked; the worker stops the handler)
    dead --requeue--> pending
    enqueue with depends_on -> waiting   (docs/workflows.md)
    waiting --every parent completed--> pending | scheduled
    waiting --a parent dead/cancelled--> cancelled (on_parent_failure="cancel") | as completed ("run")
    waiting --cancel--> cancelled
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from pqueue import cancellation
from pqueue.clock import to_iso

if TYPE_CHECKING:
    from pqueue.limits import Limit
    from pqueue.worker.completion import JobTransaction

JSONValue: TypeAlias = Any
"""A value that survives ``json.dumps``/``json.loads`` unchanged in meaning."""

MAX_ERROR_HISTORY = 10
"""How many past errors a job keeps (oldest dropped first)."""

TRACEBACK_TAIL_CHARS = 2000
"""How much of a traceback's end is kept with an error."""

NO_META: Mapping[str, str] = MappingProxyType({})
"""The shared, immutable empty meta map."""

NONE_UNSET: frozenset[str] = frozenset()
"""The ``unset`` of a job whose producer set every run-time option, or that an older
pqueue stored (it kept no record of what was left unset, so its stored values hold)."""


@functools.lru_cache(maxsize=64)
def unset_to_text(unset: frozenset[str]) -> str | None:
    """How the backends store ``JobSpec.unset``: the option names, sorted and
    comma-separated; None (nothing stored) when the producer left none unset."""
    return ",".join(sorted(unset)) or None


@functools.lru_cache(maxsize=64)
def unset_from_text(text: str | None) -> frozenset[str]:
    """``Job.unset`` from what :func:`unset_to_text` stored (None or "" for a job that an
    older pqueue stored, or whose producer left nothing unset)."""
    return frozenset(text.split(",")) if text else NONE_UNSET


def unset_of(names: Iterable[str]) -> frozenset[str]:
    """The shared frozenset of ``names`` (most jobs carry one of a few)."""
    return _interned(tuple(names))


@functools.lru_cache(maxsize=64)
def _interned(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset(names) if names else NONE_UNSET


class JobStatus(StrEnum):
    """Where a job is in its life. A job is in exactly one status at every instant."""

    PENDING = "pending"
    SCHEDULED = "scheduled"
    ACTIVE = "active"
    RETRY = "retry"
    COMPLETED = "completed"
    DEAD = "dead"
    CANCELLED = "cancelled"
    WAITING = "waiting"
    """Stored with ``depends_on``: not claimable until every parent has completed."""

    @property
    def is_waiting(self) -> bool:
        """Pending, scheduled or retry: the job will run once it is due."""
        return self in _WAITING

    @property
    def is_final(self) -> bool:
        """Completed, dead or cancelled: nothing happens to it without an admin."""
        return self in _FINAL


_WAITING = frozenset({JobStatus.PENDING, JobStatus.SCHEDULED, JobStatus.RETRY})
_FINAL = frozenset({JobStatus.COMPLETED, JobStatus.DEAD, JobStatus.CANCELLED})


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One failure of a job: what was raised, where it ended, and when."""

    kind: str
    message: str
    traceback: str = ""
    attempt: int = 0
    at: float = 0.0  # epoch seconds, stamped by the broker's clock

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "traceback": self.traceback,
            "attempt": self.attempt,
            "at": self.at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ErrorInfo:
        return cls(
            kind=str(data.get("kind", "")),
            message=str(data.get("message", "")),
            traceback=str(data.get("traceback", "")),
            attempt=int(data.get("attempt", 0)),
            at=float(data.get("at", 0.0)),
        )

    @classmethod
    def from_exception(cls, exc: BaseException, *, traceback_text: str = "") -> ErrorInfo:
        """Describe ``exc``; keep only the tail of the traceback (the useful end)."""
        return cls(
            kind=type(exc).__qualname__,
            message=str(exc)[:2000],
            traceback=traceback_text[-TRACEBACK_TAIL_CHARS:],
        )

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}" if self.message else self.kind


def errors_to_json(errors: tuple[ErrorInfo, ...]) -> str:
    """Encode an error history for storage."""
    return json.dumps([e.to_dict() for e in errors], separators=(",", ":"))


def errors_from_json(text: str | bytes | None) -> tuple[ErrorInfo, ...]:
    """Decode an error history written by :func:`errors_to_json`."""
    if not text:
        return ()
    return tuple(ErrorInfo.from_dict(item) for item in json.loads(text))


def append_error(history: tuple[ErrorInfo, ...], error: ErrorInfo) -> tuple[ErrorInfo, ...]:
    """Add ``error`` to ``history`` and keep only the newest :data:`MAX_ERROR_HISTORY`."""
    return (*history, error)[-MAX_ERROR_HISTORY:]


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A validated request to enqueue one job. Build it with :func:`pqueue.spec.build_spec`.

    ``payload_json`` is already encoded, so brokers store it as text without
    re-checking. Either ``delay`` or ``run_at`` (epoch seconds) may be set, not both.
    """

    id: str
    type: str
    queue: str
    payload_json: str
    delay: float | None = None
    run_at: float | None = None
    max_retries: int = 3
    max_recoveries: int = 5
    timeout: float | None = None
    unique_key: str | None = None
    unique_for: float | None = None
    idempotency_key: str | None = None
    meta: Mapping[str, str] = field(default_factory=lambda: NO_META)
    depends_on: tuple[str, ...] = ()
    """Ids of the jobs that must complete first; the job is stored ``waiting`` until they do."""
    on_parent_failure: str = "cancel"
    """What a dead or cancelled parent does to this job: ``"cancel"`` it, or ``"run"`` it anyway."""
    limit: Limit | None = None
    """The job's rate/concurrency limit group and parameters (docs/limits.md)."""
    unique_until: str = "ttl"
    """``"ttl"``: the unique key is held for ``unique_for`` whatever happens; ``"done"``: it
    is freed when the job completes, ``unique_for`` being the latest (ADR 0152)."""
    priority: int = 0
    """-100..100: within its queue a claim takes the highest first (docs/priority.md)."""
    unset: frozenset[str] = NONE_UNSET
    """The run-time options (:data:`pqueue.options.RUN_TIME_OPTIONS`) the producer left
    unset, stored as their defaults: the worker running the job takes its handler's
    declaration for these instead (ADR 0157)."""


@dataclass(frozen=True, slots=True)
class Job:
    """A stored job as the broker knows it; also the read-only view handlers receive.

    ``attempt`` counts handler runs that count against ``max_retries``: 0 before the
    first run, 1 during the first run, and so on. A run cut short by a crash (lease
    expiry) or a graceful drain does not count; it raises ``recoveries`` instead.
    Times are aware UTC datetimes.
    """

    id: str
    type: str
    queue: str
    payload: JSONValue
    status: JobStatus
    attempt: int
    max_retries: int
    recoveries: int
    max_recoveries: int
    run_at: datetime
    created_at: datetime
    timeout: float | None = None
    unique_key: str | None = None
    idempotency_key: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    errors: tuple[ErrorInfo, ...] = ()
    result: JSONValue = None
    meta: Mapping[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    """The ids of the jobs this one waited for (``depends_on`` at enqueue), in that order."""
    parent_results: Mapping[str, JSONValue] = field(default_factory=dict)
    """Parent id -> its handler's return value, for each parent that completed (copied in
    when it did); a parent that died under ``on_parent_failure="run"`` is absent."""

    limit_key: str | None = None
    """The job's limit group within its queue, when it is subject to a limit (docs/limits.md)."""
    priority: int = 0
    """The job's priority within its queue, -100..100 (higher runs sooner; docs/priority.md)."""
    unset: frozenset[str] = NONE_UNSET
    """The run-time options its producer left unset (``max_retries``, ``timeout``): the
    stored value is the default, and the worker that runs the job uses its handler's
    declaration instead, so a handler sees the values that apply (ADR 0157)."""

    def parent_result(self, parent_id: str | None = None) -> JSONValue:
        """The result of parent ``parent_id``, or of the only parent when it is left out
        (the step before this one in a chain). Raises ``KeyError`` when that parent did
        not complete, ``ValueError`` without an id when the job has not exactly one parent."""
        if parent_id is None:
            if len(self.depends_on) != 1:
                raise ValueError(f"job {self.id} has {len(self.depends_on)} parents; name one")
            parent_id = self.depends_on[0]
        return self.parent_results[parent_id]

    def cancelled(self) -> bool:
        """Whether this job has been cancelled: True once ``client.cancel(id)`` of it, while
        it runs, has reached the worker running it (sync handlers poll this to stop
        cooperatively; async handlers are also cancelled), or when this snapshot's status
        is ``cancelled``."""
        return self.status is JobStatus.CANCELLED or cancellation.requested(self.id)

    def transaction(self, conn: Any = None) -> JobTransaction:
        """Complete this job in a database transaction together with the handler's writes
        (docs/delivery-semantics.md, ADR 0151)::

            async with job.transaction() as conn:  # a psycopg AsyncConnection
                await conn.execute("INSERT INTO sent (job_id) VALUES (%s)", [job.id])

        The job's ack runs and commits with the block's statements; if the block raises,
        everything rolls back and the job fails as usual. Pass ``conn`` (a psycopg or
        SQLAlchemy connection or session on the broker's database) to use your own; sync
        handlers use ``with``. Only inside the handler running this job, on a backend with
        ``Capability.TRANSACTIONAL_COMPLETION`` (else :class:`~pqueue.errors.NotSupported`).
        """
        from pqueue.worker.completion import JobTransaction

        return JobTransaction(self, conn)

    @property
    def enqueued_at(self) -> datetime:
        """When the job was enqueued (same as ``created_at``)."""
        return self.created_at

    @property
    def last_error(self) -> ErrorInfo | None:
        """The most recent failure, if any."""
        return self.errors[-1] if self.errors else None

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON-safe data: the one shape of a job in every answer (``pqueue jobs
        show --json``, the HTTP API, the dashboard). Times are ISO-8601 UTC text (null when
        not reached), durations float seconds, errors oldest first; docs/cli.md lists the keys."""
        return {
            "id": self.id,
            "type": self.type,
            "queue": self.queue,
            "status": self.status.value,
            "payload": self.payload,
            "attempt": self.attempt,
            "max_retries": self.max_retries,
            "recoveries": self.recoveries,
            "max_recoveries": self.max_recoveries,
            "priority": self.priority,
            "run_at": to_iso(self.run_at),
            "created_at": to_iso(self.created_at),
            "started_at": to_iso(self.started_at),
            "finished_at": to_iso(self.finished_at),
            "timeout": self.timeout,
            "unique_key": self.unique_key,
            "idempotency_key": self.idempotency_key,
            "meta": dict(self.meta),
            "depends_on": list(self.depends_on),
            "limit_key": self.limit_key,
            "result": self.result,
            "errors": [{**error.to_dict(), "at": to_iso(error.at)} for error in self.errors],
        }

    def __str__(self) -> str:
        """One line a person can read: ``job <id> <type> on <queue>: <status>, attempt 1/3``."""
        line = (
            f"job {self.id} {self.type} on {self.queue}: {self.status.value}, "
            f"attempt {self.attempt}/{self.max_retries + 1}"
        )
        if self.recoveries:
            line += f", {self.recoveries} recover{'y' if self.recoveries == 1 else 'ies'}"
        error = self.last_error
        return f"{line}; last error {error}" if error is not None else line


_JOB_FIELDS = tuple(f.name for f in fields(Job))
_job_values = attrgetter(*_JOB_FIELDS)
_JOB_POSITION = {name: i for i, name in enumerate(_JOB_FIELDS)}


def job_with(job: Job, changes: Mapping[str, Any]) -> Job:
    """``job`` with the fields in ``changes`` replaced: ``dataclasses.replace`` at half its
    cost, for the worker's per-job path (Handler.resolve)."""
    values = list(_job_values(job))
    for name, value in changes.items():
        values[_JOB_POSITION[name]] = value
    return Job(*values)


@dataclass(frozen=True, slots=True)
class Lease:
    """A job handed to one worker until ``expires_at`` (epoch seconds).

    ``token`` fences the lease: ack, fail, extend and release succeed only while this
    token is the job's current one.
    """

    job: Job
    token: str
    expires_at: float

    @property
    def job_id(self) -> str:
        return self.job.id


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """The outcome of one enqueue: the job id, and whether it was newly created.

    When a unique key refused the job, ``created`` is False and ``id`` is the id of
    the job that holds the key.
    """

    id: str
    created: bool


UNREADABLE_TYPE = "pqueue:unreadable"
"""The ``type`` of :func:`unreadable_job` stand-ins."""

_EPOCH = datetime.fromtimestamp(0, UTC)


def unreadable_job(job_id: str, queue: str, status: JobStatus, problem: Exception) -> Job:
    """A stand-in for a stored job that cannot be decoded, for admin listings.

    One malformed record must not make a whole page of dead jobs unreadable: the listing
    shows this stand-in (type :data:`UNREADABLE_TYPE`, no payload, the decoding problem as
    its last error) so the job can still be found, requeued or purged by id.
    """
    return Job(
        id=job_id,
        type=UNREADABLE_TYPE,
        queue=queue,
        payload=None,
        status=status,
        attempt=0,
        max_retries=0,
        recoveries=0,
        max_recoveries=0,
        run_at=_EPOCH,
        created_at=_EPOCH,
        errors=(ErrorInfo(type(problem).__name__, str(problem)),),
    )
