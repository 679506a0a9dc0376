"""The Broker protocol: the one seam between pqueue and a storage backend.

A broker makes atomic, fenced state changes and decides nothing: retry delays,
dead-lettering after ``max_retries``, queue weighting and idempotency policy live in
shared code above it (``pqueue.retry``, ``pqueue.priority``, the worker). The hot path
(:class:`Broker`) is kept apart from inspection and admin (:class:`Inspector`); a
backend implements both (:class:`FullBroker`). docs/architecture.md explains each
rule; ``pqueue.testing.contract`` proves a backend keeps them.

Times are float epoch seconds read from the broker's own clock (server time, or an
injected :class:`~pqueue.clock.Clock` in tests); durations are float seconds.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pqueue.broker_control import Controller
from pqueue.broker_flows import FlowBroker
from pqueue.broker_schedules import ScheduleStore
from pqueue.clock import to_iso
from pqueue.errors import InvalidName, InvalidRequest
from pqueue.job import EnqueueResult, ErrorInfo, Job, JobSpec, JobStatus, Lease
from pqueue.limits import LimitState
from pqueue.spec import validate_job_type, validate_queue_name


class Capability(StrEnum):
    """Declared differences between backends; contract tests require them by name."""

    WAKEUP = "wakeup"
    """``wait_for_jobs`` returns within milliseconds of an enqueue (push, not polling)."""
    CROSS_PROCESS = "cross_process"
    """Other processes (workers started by the CLI) can reach the same jobs by DSN."""
    TRANSACTIONAL_ENQUEUE = "transactional_enqueue"
    """Jobs can be enqueued inside the caller's own database transaction."""
    HANDOFF = "handoff"
    """An enqueue can lease jobs straight to a :class:`Claimer` waiting in ``wait_for_jobs``;
    its next ``claim`` returns them without another round trip (one-hop pick-up). Such a
    broker counts in an int attribute ``parkings`` the claimers it has parked so far (the
    contract suite waits for it instead of guessing how long parking takes)."""
    TRANSACTIONAL_COMPLETION = "transactional_completion"
    """A handler can complete its job inside a database transaction of its own
    (``job.transaction()``): its writes and the job's ack commit together or not at all,
    and a lease lost before the commit makes it fail (ADR 0151). Such a broker implements
    :class:`CompletionTransactions`."""


class IdempotencyState(StrEnum):
    """Answer of :meth:`Broker.idempotency_begin`."""

    ACQUIRED = "acquired"
    """The key is now held in flight by the caller: run the job."""
    IN_FLIGHT = "in_flight"
    """Another job holds the key and is running: try again later."""
    DONE = "done"
    """A job with this key already succeeded within the TTL: do not run again."""


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What one :meth:`Broker.recover` pass did."""

    recovered: tuple[str, ...] = ()
    """Jobs whose lease expired, put back to pending (``recoveries`` + 1)."""
    dead: tuple[str, ...] = ()
    """Jobs whose lease expired more than ``max_recoveries`` times, now dead."""
    queues: Mapping[str, int] = field(default_factory=dict)
    """Jobs taken back per queue (recovered and dead): what metrics count as recoveries."""


@dataclass(frozen=True, slots=True)
class Claimer:
    """Who waits in :meth:`Broker.wait_for_jobs`, as a ``claim`` would name them.

    Brokers with :attr:`Capability.HANDOFF` may lease up to ``limit`` jobs to
    ``worker_id`` for ``lease_for`` seconds while it waits; others ignore it.
    """

    worker_id: str
    limit: int
    lease_for: float


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A worker process as it registers itself for stats and dashboards."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    started_at: float
    last_seen: float = 0.0  # stamped by the broker on every registration
    meta: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data (times as ISO-8601 UTC text), the shape of a worker in every answer."""
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "queues": list(self.queues),
            "concurrency": self.concurrency,
            "started_at": to_iso(self.started_at),
            "last_seen": to_iso(self.last_seen),
            "meta": dict(self.meta),
        }


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of :meth:`Inspector.list_jobs`; pass ``next_offset`` to get the next."""

    jobs: tuple[Job, ...]
    next_offset: int | None


def page_request(
    status: JobStatus | str, limit: int, offset: int, *, queue: str | None = None, type: str | None = None
) -> JobStatus:
    """Check the arguments of :meth:`Inspector.list_jobs` (same rule on every backend)."""
    try:
        status = JobStatus(status)
    except ValueError:
        known = ", ".join(s.value for s in JobStatus)
        raise InvalidRequest(f"list_jobs: unknown status {status!r}; known: {known}") from None
    for name, value, least in (("limit", limit, 1), ("offset", offset, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InvalidRequest(f"list_jobs: {name} must be an integer >= {least}, got {value!r}")
    admin_filter(queue, type=type)
    return status


def admin_filter(queue: str | None, *, type: str | None = None, older_than: float | None = None) -> None:
    """Check the filters of inspect and admin calls (same rule on every backend): a queue
    name or job type as enqueue accepts them, an age in seconds that is finite and >= 0.
    A name no job could have is a mistake to report, not a filter that matches nothing."""
    try:
        if queue is not None:
            validate_queue_name(queue)
        if type is not None:
            validate_job_type(type)
    except InvalidName as exc:
        raise InvalidRequest(str(exc)) from None
    if older_than is not None and (
        isinstance(older_than, bool)
        or not isinstance(older_than, int | float)
        or not math.isfinite(older_than)
        or older_than < 0
    ):
        raise InvalidRequest(f"older_than must be a finite number of seconds >= 0, got {older_than!r}")


@dataclass(frozen=True, slots=True)
class JobScan:
    """What :meth:`Inspector.scan_jobs` reads: every stored job that matches, in pages.

    ``since`` (epoch seconds) keeps jobs finished at or after it and unfinished jobs
    enqueued at or after it. ``part``/``parts`` split the jobs into ``parts`` disjoint
    slices by a key of the backend's choosing, so ``parts`` readers can each take one.
    """

    statuses: tuple[JobStatus, ...] = tuple(JobStatus)
    queue: str | None = None
    since: float | None = None
    part: int = 0
    parts: int = 1
    page_size: int = 1000

    def __post_init__(self) -> None:
        try:
            statuses = tuple(JobStatus(s) for s in self.statuses)
        except ValueError:
            raise InvalidRequest(f"scan_jobs: unknown status in {self.statuses!r}") from None
        object.__setattr__(self, "statuses", statuses)
        for name, value, least in (
            ("parts", self.parts, 1),
            ("part", self.part, 0),
            ("page_size", self.page_size, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidRequest(f"scan_jobs: {name} must be an integer >= {least}, got {value!r}")
        if self.part >= self.parts:
            raise InvalidRequest(f"scan_jobs: part must be below parts ({self.parts}), got {self.part}")

    def keeps(self, job: Job) -> bool:
        """Whether ``job`` matches (status, queue and ``since``; not the slice)."""
        if job.status not in self.statuses or (self.queue is not None and job.queue != self.queue):
            return False
        if self.since is None:
            return True
        moment = job.finished_at or job.created_at
        return moment.timestamp() >= self.since


def in_slice(job_id: str, scan: JobScan) -> bool:
    """Whether a job belongs to ``scan``'s slice when the backend slices by id (CRC-32)."""
    return scan.parts == 1 or zlib.crc32(job_id.encode()) % scan.parts == scan.part


QueueCounts = Mapping[str, Mapping[JobStatus, int]]
"""Queue name -> status -> number of jobs (every status present, zeros included)."""

DONE_WINDOW = 60.0
"""Seconds :meth:`Inspector.activity` looks back for finished jobs (``Stats.done_per_second``)."""


@dataclass(frozen=True, slots=True)
class QueueActivity:
    """How each queue is moving, as :meth:`Inspector.activity` measures it on the broker's clock."""

    oldest_pending_age: Mapping[str, float]
    """Queue -> seconds since the oldest due waiting job (pending, or scheduled/retry whose
    run_at has passed) became due; a queue where no due job waits is absent."""
    done: Mapping[str, int]
    """Queue -> jobs finished (completed or dead) within the window; every queue, zeros included."""
    window: float = DONE_WINDOW
    """The look-back of ``done``, in seconds."""


@runtime_checkable
class Broker(Protocol):
    """The hot path: enqueue, claim, and settle jobs. Every call is atomic per job."""

    capabilities: frozenset[Capability]

    async def open(self) -> None:
        """Connect and check storage; idempotent."""
        ...

    async def close(self) -> None:
        """Release connections; idempotent."""
        ...

    async def now(self) -> float:
        """The broker's current time, the one every deadline is compared with."""
        ...

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """Store jobs in one round trip; ``pending`` if due, else ``scheduled``.

        A spec whose unique key is held, or whose id already exists, is not stored; its
        result carries the existing job's id with ``created=False``. Order is kept.
        """
        ...

    async def claim(
        self, queues: Sequence[str], *, worker_id: str, limit: int, lease_for: float
    ) -> list[Lease]:
        """Lease up to ``limit`` due jobs, taking from ``queues`` strictly in the given order.

        Within a queue jobs come by run_at, then enqueue order. Each job becomes
        ``active`` with ``attempt`` + 1, a fresh token and a deadline ``now + lease_for``.
        Never blocks; returns ``[]`` when nothing is due.
        """
        ...

    async def ack(
        self, leases: Sequence[Lease], results_json: Sequence[str | None] | None = None
    ) -> list[bool]:
        """Complete jobs, storing each one's result (JSON text, or None); False = lease lost."""
        ...

    async def fail(self, lease: Lease, error: ErrorInfo, *, retry_in: float | None) -> bool:
        """Record ``error``; ``retry`` at now + ``retry_in``, or ``dead`` when None. False = lease lost."""
        ...

    async def release(
        self, leases: Sequence[Lease], *, delay: float = 0.0, note: ErrorInfo | None = None
    ) -> list[bool]:
        """Hand jobs back unrun (graceful drain, busy idempotency key) without burning an attempt.

        ``note``, when given, is added to each job's error history (e.g. "no handler for
        this type") so the reason a job keeps coming back is visible to admins.
        """
        ...

    async def extend(self, leases: Sequence[Lease], *, lease_for: float) -> list[bool]:
        """Push each lease's deadline to now + ``lease_for``; False = lease lost."""
        ...

    async def recover(self, *, limit: int = 1000) -> RecoveryReport:
        """Return up to ``limit`` active jobs whose lease expired to pending, or dead past
        ``max_recoveries`` (reason "lease expired N times"). Safe to run everywhere at once."""
        ...

    async def promote(self, *, limit: int = 1000) -> int:
        """Mark due scheduled/retry jobs pending; returns how many moved.

        Backends whose claim looks at run_at directly may only relabel here.
        """
        ...

    async def wait_for_jobs(
        self, queues: Sequence[str], timeout: float, *, claimer: Claimer | None = None
    ) -> bool:
        """Sleep until a job may be claimable in ``queues`` or ``timeout`` passes.

        Returns True when woken by an enqueue. Without :attr:`Capability.WAKEUP` this
        simply sleeps for ``timeout``. With :attr:`Capability.HANDOFF` and a ``claimer``,
        jobs may be leased to it meanwhile: they are ``active`` under its worker id and
        its next ``claim`` returns them first; the broker gives back, unrun, any that
        the claimer does not collect within seconds (or that it holds at ``close``).
        """
        ...

    async def idempotency_begin(self, key: str, owner: str, ttl: float) -> IdempotencyState:
        """Hold ``key`` in flight for ``owner`` (a job id) for ``ttl`` seconds.

        Re-calling as the same owner refreshes the TTL (the worker's heartbeat does).
        """
        ...

    async def idempotency_end(self, key: str, owner: str, *, done: bool, ttl: float) -> None:
        """Mark ``key`` done for ``ttl`` seconds (success) or release it (failure)."""
        ...


@runtime_checkable
class Inspector(Protocol):
    """Inspection and admin: used by clients, the CLI, stats and dashboards."""

    async def get_job(self, job_id: str) -> Job:
        """The job with this id; raises :class:`~pqueue.errors.JobNotFound`."""
        ...

    async def counts(self) -> QueueCounts:
        """Jobs per queue and status (completed/cancelled within retention only)."""
        ...

    async def list_queues(self) -> list[str]:
        """Every queue that has held a job, sorted by name."""
        ...

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        """Jobs in ``status`` (optionally of one queue and/or one job type), in a stable
        order, one page at a time."""
        ...

    async def cancel(self, job_id: str) -> bool:
        """Cancel a pending, scheduled or retry job; False if it is in another status."""
        ...

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        """Move dead jobs (these ids, or all in ``queue``/everywhere) back to pending with a
        fresh retry budget; returns how many moved."""
        ...

    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | None = None,
    ) -> int:
        """Delete dead jobs (these ids, or all in ``queue``/everywhere; with ``older_than``,
        only those that died at least that many seconds ago); returns how many."""
        ...

    async def prune(self, *, limit: int = 1000) -> int:
        """Delete up to ``limit`` completed/cancelled jobs older than the retention window."""
        ...

    async def register_worker(self, info: WorkerInfo, *, ttl: float) -> None:
        """Record (or refresh) a live worker; it disappears ``ttl`` seconds after its last beat."""
        ...

    async def unregister_worker(self, worker_id: str) -> None:
        """Forget a worker that stopped cleanly."""
        ...

    async def list_workers(self) -> list[WorkerInfo]:
        """Workers seen within their TTL."""
        ...

    async def check_health(self) -> str:
        """Ask the broker's server and check that its storage schema is the one this pqueue
        writes; returns what was checked (e.g. "postgres schema 'pqueue' at version 2").
        Raises :class:`~pqueue.errors.BrokerUnavailable` or :class:`~pqueue.errors.SchemaError`."""
        ...

    async def activity(self, *, window: float = DONE_WINDOW) -> QueueActivity:
        """Per queue, the age of the oldest due waiting job and the jobs finished (completed
        or dead) within the last ``window`` seconds, both on the broker's clock."""

    async def limit_groups(self) -> list[LimitState]:
        """Every rate/concurrency limit group (queue, limit key) with a waiting or active job:
        active and waiting jobs, the limits of its latest job, and its tokens (ADR 0110).
        An idle group is not listed, even while the broker keeps its bucket (ADR 0140)."""
        ...

    def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        """Every stored job that ``scan`` matches (live ones and retained history), in pages
        of at most ``scan.page_size``; each job once, in no promised order. For bulk readers
        (export, Spark): a page costs one round trip or cursor fetch, not an offset scan."""
        ...


class AckTransaction(Protocol):
    """One open transaction of :meth:`CompletionTransactions.ack_transaction`."""

    connection: Any
    """What the handler writes on (a psycopg connection, or the SQLAlchemy connection or
    session it was given)."""

    async def ack(self, lease: Lease, result_json: str | None) -> bool:
        """Complete the lease's job in this transaction, fenced by its token as ``ack`` is;
        False = lease lost (the caller then raises, so the transaction rolls back)."""
        ...


class AckTransactionSync(Protocol):
    """One open transaction of :meth:`CompletionTransactions.ack_transaction_sync`."""

    connection: Any

    def ack(self, lease: Lease, result_json: str | None) -> bool:
        """As :meth:`AckTransaction.ack`, blocking."""
        ...


@runtime_checkable
class CompletionTransactions(Protocol):
    """The seam of :attr:`Capability.TRANSACTIONAL_COMPLETION` (ADR 0151).

    A broker opens a transaction on ``conn`` (a connection or session the handler passed
    in) or on a connection of its own, hands it out, and ends it: commit when the block
    exits cleanly, roll back when it raises. It decides nothing else: the shared code in
    :mod:`pqueue.worker.completion` calls ``ack`` at the end of the block and raises
    :class:`~pqueue.errors.LeaseLost` when it returns False. A backend with its own
    database (SQLite) implements these two methods and declares the capability; the
    contract class ``CompletionContract`` proves it.
    """

    def ack_transaction(self, conn: Any = None) -> AbstractAsyncContextManager[AckTransaction]:
        """An open transaction for an async handler (on ``conn``, or the broker's own)."""
        ...

    def ack_transaction_sync(self, conn: Any = None) -> AbstractContextManager[AckTransactionSync]:
        """An open transaction for a sync handler, usable from any thread without a loop."""
        ...


@runtime_checkable
class FullBroker(Broker, Inspector, ScheduleStore, Controller, FlowBroker, Protocol):
    """What a backend class implements and :func:`pqueue.connect` returns."""
