"""``sqlite:///path.db`` — jobs in one SQLite file on one host, no server (docs/sqlite.md).

Every operation is one transaction (``BEGIN IMMEDIATE`` for writes) on the broker's own
connection thread; the statements are in ``queries.sql`` and the operations' bodies in
:mod:`.store`, :mod:`.admin`, :mod:`.flows` and :mod:`.limited`. Time is the injected
clock's when there is one, else the host's (the file has no clock of its own; every
process on the host reads the same one). Idle claimers, result waiters and cancel inboxes
sleep on one poller of ``PRAGMA data_version`` per broker (ADR 0148). ADR 0147 records the
design and the capability this backend does not declare (hand-off); ADR 0151 the
completion of a job in the handler's own transaction (:mod:`.completion`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from pqueue.broker import (
    DONE_WINDOW,
    Capability,
    Claimer,
    IdempotencyState,
    JobPage,
    JobScan,
    QueueActivity,
    QueueCounts,
    RecoveryReport,
    WorkerInfo,
    admin_filter,
    page_request,
)
from pqueue.broker_control import CANCEL_REASON, cancel_reason, control_queue
from pqueue.broker_flows import wait_delay
from pqueue.broker_schedules import ScheduleInfo, check_registration
from pqueue.brokers.sqlite import admin, flows, store
from pqueue.brokers.sqlite.completion import AsyncAck, HandlerTransactions, SyncAck
from pqueue.brokers.sqlite.config import SqliteConfig
from pqueue.brokers.sqlite.connection import Database, Work
from pqueue.brokers.sqlite.sql import latest_version
from pqueue.brokers.sqlite.wakeups import Poller
from pqueue.clock import Clock
from pqueue.errors import BrokerError, JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import EnqueueResult, ErrorInfo, Job, JobSpec, JobStatus, Lease
from pqueue.limits import LimitState
from pqueue.steps import Steps, run_async

if TYPE_CHECKING:
    from pqueue.brokers.sqlite.sync import SqliteSyncTransport

T = TypeVar("T")
log = logging.getLogger("pqueue.sqlite")

Txn = tuple[Work[Any], bool]
"""One step of an operation (pqueue.steps): a transaction's body and whether it writes."""

INTEGRITY_EVERY = 60.0
"""Seconds between two whole-file checks of one broker's :meth:`~SqliteBroker.check_health`
(the first is at once): a readiness probe asking every few seconds reads the file once a minute."""


class SqliteBroker:
    """The SQLite backend: the whole :class:`~pqueue.broker.FullBroker` protocol."""

    capabilities = frozenset(
        {
            Capability.WAKEUP,
            Capability.CROSS_PROCESS,
            Capability.TRANSACTIONAL_ENQUEUE,
            Capability.TRANSACTIONAL_COMPLETION,
        }
    )

    def __init__(self, config: SqliteConfig, *, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock
        self._db: Database | None = None
        self._poller = Poller(config)
        self._cancel_seen: int | None = None
        self._completions = HandlerTransactions(config, self.now_sync)
        self._integrity_at: float | None = None
        """When :meth:`check_health` last read every page (``time.monotonic()``)."""

    @classmethod
    def from_url(cls, dsn: str, *, clock: Clock | None = None, **options: object) -> SqliteBroker:
        """``sqlite:///relative.db`` or ``sqlite:////absolute.db``; options: retention,
        busy_timeout, synchronous (in the query or as keywords)."""
        return cls(SqliteConfig.from_url(dsn, options), clock=clock)

    def sync_transport(self) -> SqliteSyncTransport:
        """The sync ``Client``'s direct path over this broker's steps (ADR 0136)."""
        from pqueue.brokers.sqlite.sync import SqliteSyncTransport

        return SqliteSyncTransport(self)

    async def __aenter__(self) -> SqliteBroker:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def db(self) -> Database:
        if self._db is None:
            raise BrokerError(
                "the SQLite broker is not open: use 'async with broker' or 'await broker.open()'"
            )
        return self._db

    async def open(self) -> None:
        if self._db is not None:
            return
        db = Database(self.config)
        try:
            await db.open()
        except BaseException:
            await db.close()
            raise
        self._db = db

    async def close(self) -> None:
        self._completions.close()
        self._completions = HandlerTransactions(self.config, self.now_sync)
        self._poller.close()
        self._poller = Poller(self.config)
        db, self._db = self._db, None
        if db is not None:
            await db.close()

    def now_sync(self) -> float:
        """The broker's time: the injected clock's, else the host's."""
        return self.clock.now() if self.clock is not None else time.time()

    async def now(self) -> float:
        return self.now_sync()

    async def _write(self, work: Work[T]) -> T:
        return await self.db.run(work, write=True)

    async def _read(self, work: Work[T]) -> T:
        return await self.db.run(work, write=False)

    async def steps(self, steps: Steps[Txn, Any, T]) -> T:
        """Drive an operation's steps on the broker's thread (pqueue.steps)."""
        return await run_async(steps, lambda txn: self.db.run(txn[0], write=txn[1]))

    # -- hot path ----------------------------------------------------------------

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        return await self.steps(self.enqueue_steps(specs))

    def enqueue_steps(self, specs: Sequence[JobSpec]) -> Steps[Txn, Any, list[EnqueueResult]]:
        """Enqueue as steps: the asyncio broker and the sync client drive it."""
        if not specs:
            return []
        now = self.now_sync()
        results: list[EnqueueResult] = yield (lambda conn: store.enqueue(conn, specs, now), True)
        return results

    async def enqueue_in(self, conn: Any, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """Enqueue on the caller's open transaction (see :func:`~pqueue.brokers.sqlite.enqueue_in`)."""
        from pqueue.brokers.sqlite.transactional import enqueue_in

        return enqueue_in(conn, specs, clock=self.clock)

    def enqueue_in_sync(self, conn: Any, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """Enqueue on the caller's open transaction (sqlite3 connection or SQLAlchemy session)."""
        from pqueue.brokers.sqlite.transactional import enqueue_in

        return enqueue_in(conn, specs, clock=self.clock)

    def ack_transaction(self, conn: Any = None) -> contextlib.AbstractAsyncContextManager[AsyncAck]:
        """A transaction on the file (on ``conn``, or a connection of the broker's) in which
        ``job.transaction()`` completes its job (ADR 0151; pqueue.brokers.sqlite.completion)."""
        return self._completions.transaction(conn)

    def ack_transaction_sync(self, conn: Any = None) -> contextlib.AbstractContextManager[SyncAck]:
        """As :meth:`ack_transaction`, blocking, for sync handlers on their threads."""
        return self._completions.transaction_sync(conn)

    async def claim(
        self, queues: Sequence[str], *, worker_id: str, limit: int, lease_for: float
    ) -> list[Lease]:
        if limit < 1 or not queues:
            return []
        now = self.now_sync()
        leases, corrupt = await self._write(
            lambda conn: store.claim(
                conn, now, list(queues), worker_id=worker_id, limit=limit, lease_for=lease_for
            )
        )
        for job_id, token, exc in corrupt:
            log.error("pqueue: %s; moving it to dead", exc)
            await self._write(lambda conn, j=job_id, t=token, e=exc: store.bury(conn, now, j, t, e))  # type: ignore[misc]
        return leases

    async def ack(
        self, leases: Sequence[Lease], results_json: Sequence[str | None] | None = None
    ) -> list[bool]:
        if not leases:
            return []
        if results_json is not None and len(results_json) != len(leases):
            raise ValueError(f"ack: {len(results_json)} results for {len(leases)} leases")
        now = self.now_sync()
        return await self._write(lambda conn: store.ack(conn, now, leases, results_json))

    async def fail(self, lease: Lease, error: ErrorInfo, *, retry_in: float | None) -> bool:
        token = store.token_of(lease)
        if token is None:
            return False
        now = self.now_sync()
        return await self._write(
            lambda conn: store.fail(conn, now, lease.job.id, token, error, retry_in=retry_in)
        )

    async def release(
        self, leases: Sequence[Lease], *, delay: float = 0.0, note: ErrorInfo | None = None
    ) -> list[bool]:
        if not leases:
            return []
        now = self.now_sync()
        return await self._write(lambda conn: store.release(conn, now, leases, delay, note))

    async def extend(self, leases: Sequence[Lease], *, lease_for: float) -> list[bool]:
        if not leases:
            return []
        now = self.now_sync()
        return await self._write(lambda conn: store.extend(conn, now, leases, lease_for))

    async def recover(self, *, limit: int = 1000) -> RecoveryReport:
        now = self.now_sync()
        return await self._write(lambda conn: store.recover(conn, now, limit))

    async def promote(self, *, limit: int = 1000) -> int:
        now = self.now_sync()
        return await self._write(lambda conn: store.promote(conn, now, limit))

    async def wait_for_jobs(
        self, queues: Sequence[str], timeout: float, *, claimer: Claimer | None = None
    ) -> bool:
        del claimer  # no hand-off (ADR 0147): the claim that follows the wake-up takes the job
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        self.db  # noqa: B018 - raises unless the broker is open
        while True:
            generation = self._poller.generation
            now = self.now_sync()
            due = await self._read(partial(store.due_in, now=now, queues=list(queues)))
            if due is not None and due <= 0:
                return True
            left = end - loop.time()
            if left <= 0:
                return False
            sleep = left if due is None else min(left, due)
            moved = await self._poller.wait(generation, sleep)
            if not moved and due is not None and due <= sleep:
                return True

    async def idempotency_begin(self, key: str, owner: str, ttl: float) -> IdempotencyState:
        now = self.now_sync()
        return await self._write(lambda conn: store.idempotency_begin(conn, now, key, owner, ttl))

    async def idempotency_end(self, key: str, owner: str, *, done: bool, ttl: float) -> None:
        now = self.now_sync()
        await self._write(lambda conn: store.idempotency_end(conn, now, key, owner, done=done, ttl=ttl))

    # -- dependencies and result waiting -------------------------------------------

    async def enqueue_flow(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        now = self.now_sync()
        return await self._write(lambda conn: flows.enqueue_flow(conn, specs, now))

    async def wait_finished(self, job_id: str, timeout: float) -> Job | None:
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r} (not a job id)")
        loop = asyncio.get_running_loop()
        limit = wait_delay(timeout)
        end = None if limit is None else loop.time() + limit
        while True:
            generation = self._poller.generation
            job = await self.get_job(job_id)
            if job.status.is_final:
                return job
            left = 3600.0 if end is None else end - loop.time()
            if left <= 0:
                return None
            await self._poller.wait(generation, left)

    # -- inspection and admin --------------------------------------------------------

    async def get_job(self, job_id: str) -> Job:
        return await self.steps(self.get_job_steps(job_id))

    def get_job_steps(self, job_id: str) -> Steps[Txn, Any, Job]:
        """``get_job`` as steps."""
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r}")
        job: Job = yield (lambda conn: admin.get_job(conn, job_id), False)
        return job

    async def counts(self) -> QueueCounts:
        return await self._read(admin.counts)

    async def list_queues(self) -> list[str]:
        return await self.steps(self.list_queues_steps())

    def list_queues_steps(self) -> Steps[Txn, Any, list[str]]:
        """Every queue that has held a job, as steps."""
        names: list[str] = yield (admin.list_queues, False)
        return names

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        return await self.steps(
            self.list_jobs_steps(status, queue=queue, type=type, limit=limit, offset=offset)
        )

    def list_jobs_steps(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Steps[Txn, Any, JobPage]:
        """``list_jobs`` as steps."""
        checked = page_request(status, limit, offset, queue=queue, type=type)
        page: JobPage = yield (
            lambda conn: admin.list_jobs(
                conn, checked, queue=queue, job_type=type, limit=limit, offset=offset
            ),
            False,
        )
        return page

    async def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        after: int | None = 0
        while after is not None:
            start = after
            jobs, after = await self._read(partial(admin.scan_page, scan=scan, after=start))
            if jobs:
                yield jobs

    async def cancel(self, job_id: str) -> bool:
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r}")
        now = self.now_sync()
        return await self._write(lambda conn: admin.cancel(conn, now, job_id))

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        admin_filter(queue)
        now = self.now_sync()
        return await self._write(lambda conn: admin.requeue_dead(conn, now, queue, job_ids))

    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | None = None,
    ) -> int:
        admin_filter(queue, older_than=older_than)
        now = self.now_sync()
        return await self._write(lambda conn: admin.purge_dead(conn, now, queue, job_ids, older_than))

    async def prune(self, *, limit: int = 1000) -> int:
        now = self.now_sync()
        return await self._write(lambda conn: admin.prune(conn, now, limit, self.config.retention))

    async def register_worker(self, info: WorkerInfo, *, ttl: float) -> None:
        now = self.now_sync()
        await self._write(lambda conn: admin.register_worker(conn, now, info, ttl))

    async def unregister_worker(self, worker_id: str) -> None:
        from pqueue.brokers.sqlite.sql import queries

        await self._write(lambda conn: conn.execute(queries()["unregister_worker"], {"id": worker_id}))

    async def list_workers(self) -> list[WorkerInfo]:
        now = self.now_sync()
        return await self._read(lambda conn: admin.list_workers(conn, now))

    async def check_health(self) -> str:
        from pqueue.brokers.sqlite.connection import check_integrity, check_schema

        config = self.config
        deep = self._integrity_at is None or time.monotonic() - self._integrity_at >= INTEGRITY_EVERY

        def check(conn: sqlite3.Connection) -> None:
            check_schema(conn, config)
            if deep:
                check_integrity(conn, config)

        await self._read(check)
        if deep:
            self._integrity_at = time.monotonic()
        return f"sqlite database {config.path!r} at version {latest_version()}"

    async def activity(self, *, window: float = DONE_WINDOW) -> QueueActivity:
        now = self.now_sync()
        return await self._read(lambda conn: admin.activity(conn, now, window))

    async def limit_groups(self) -> list[LimitState]:
        now = self.now_sync()
        return await self._read(lambda conn: admin.limit_groups(conn, now))

    # -- control -----------------------------------------------------------------------

    async def pause(self, queue: str) -> bool:
        name = control_queue(queue)
        now = self.now_sync()
        return await self._write(lambda conn: admin.pause(conn, now, name))

    async def resume(self, queue: str) -> bool:
        name = control_queue(queue)
        return await self._write(lambda conn: admin.resume(conn, name))

    async def paused_queues(self) -> list[str]:
        return await self._read(admin.paused_queues)

    async def cancel_active(self, job_id: str, *, reason: str = CANCEL_REASON) -> bool:
        text = cancel_reason(reason)
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r}")
        now = self.now_sync()
        return await self._write(lambda conn: admin.cancel_active(conn, now, job_id, text))

    async def wait_for_cancels(self, timeout: float) -> list[str]:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            generation = self._poller.generation
            seen = self._cancel_seen
            ids, self._cancel_seen = await self._read(partial(admin.cancels_since, after=seen))
            if ids:
                return ids
            left = end - loop.time()
            if left <= 0:
                return []
            await self._poller.wait(generation, left)

    # -- schedules ---------------------------------------------------------------------

    async def register_schedules(self, schedules: Sequence[ScheduleInfo], *, ttl: float) -> list[float]:
        check_registration(schedules, ttl)
        now = self.now_sync()
        return await self._write(lambda conn: admin.register_schedules(conn, now, schedules, ttl))

    async def mark_schedule_run(self, name: str, tick: float) -> None:
        await self._write(lambda conn: admin.mark_schedule_run(conn, name, tick))

    async def list_schedules(self) -> list[ScheduleInfo]:
        now = self.now_sync()
        return await self._read(lambda conn: admin.list_schedules(conn, now))
