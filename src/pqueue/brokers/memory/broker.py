"""``memory://`` — the reference backend: the whole contract, in one process.

Jobs live in a :class:`MemoryStore` named by the DSN (``memory://`` is the process-wide
default store, ``memory://name`` another one), so a client and a worker in one process
share jobs by using the same DSN. Safe across asyncio tasks and threads; nothing
survives the process.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import AsyncIterator, Sequence
from urllib.parse import parse_qs

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
from pqueue.brokers import refuse_unknown_options, split_dsn
from pqueue.brokers.memory.cancels import CancelInbox
from pqueue.brokers.memory.schedules import MemorySchedules
from pqueue.brokers.memory.store import MemoryStore
from pqueue.clock import Clock, SystemClock
from pqueue.errors import ConfigError
from pqueue.job import EnqueueResult, ErrorInfo, Job, JobSpec, JobStatus, Lease
from pqueue.limits import LimitState

DEFAULT_RETENTION = 24 * 3600.0
"""Seconds completed and cancelled jobs are kept before :meth:`prune` removes them."""

OPTIONS = ("retention",)
"""The settings a ``memory://`` DSN (or a keyword option) may carry."""


_stores: dict[str, MemoryStore] = {}
_stores_lock = threading.Lock()


def _store_for(name: str, clock: Clock | None, retention: float) -> MemoryStore:
    """The named store, created on first use; an injected clock must agree with it."""
    with _stores_lock:
        store = _stores.get(name)
        if store is None:
            store = _stores[name] = MemoryStore(clock or SystemClock(), retention=retention)
        elif clock is not None and store.clock is not clock:
            raise ConfigError(f"memory store {name!r} already runs on another clock; use a new store name")
        return store


def drop_store(name: str) -> None:
    """Forget a named store and its jobs (tests use this to clean up)."""
    with _stores_lock:
        _stores.pop(name, None)


class MemoryBroker(MemorySchedules):
    """In-process broker over a named :class:`MemoryStore`."""

    capabilities = frozenset({Capability.WAKEUP})

    def __init__(
        self, name: str = "default", *, clock: Clock | None = None, retention: float = DEFAULT_RETENTION
    ) -> None:
        if not math.isfinite(retention) or retention < 0:
            raise ConfigError(f"memory broker: retention must be a finite number >= 0, got {retention}")
        self.name = name
        self._store = _store_for(name, clock, retention)
        self._waiters = self._store.waiters
        self._flows = self._store.flows
        self._admin = self._store.admin
        self._inbox: CancelInbox | None = None

    @classmethod
    def from_url(cls, dsn: str, *, clock: Clock | None = None, **options: object) -> MemoryBroker:
        """``memory://[name][?retention=SECONDS]``; ``retention`` may also be a keyword option.

        Raises :class:`ConfigError` for another scheme, an option other than ``retention``
        (in the DSN or as a keyword) or a retention that is not a number >= 0.
        """
        parts = split_dsn(dsn)
        if parts.scheme != "memory":
            raise ConfigError(f"not a memory DSN: {dsn!r}")
        name = (parts.netloc + parts.path).strip("/") or "default"
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        refuse_unknown_options("memory", query, OPTIONS, source="DSN parameter")
        refuse_unknown_options("memory", options, OPTIONS, source="keyword option")
        try:
            retention = float(options.get("retention", query.get("retention", DEFAULT_RETENTION)))  # type: ignore[arg-type]
        except ValueError as exc:
            raise ConfigError(f"memory DSN: retention must be a number of seconds ({exc})") from exc
        return cls(name, clock=clock, retention=retention)

    @property
    def store(self) -> MemoryStore:
        return self._store

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        inbox, self._inbox = self._inbox, None
        if inbox is not None:
            self._store.cancels.remove(inbox)

    async def __aenter__(self) -> MemoryBroker:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def now(self) -> float:
        return self._store.clock.now()

    # -- hot path ----------------------------------------------------------------

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        results, woken = self._store.enqueue(specs)
        self._waiters.wake(woken)
        return results

    async def claim(
        self, queues: Sequence[str], *, worker_id: str, limit: int, lease_for: float
    ) -> list[Lease]:
        return self._store.claim(queues, worker_id, limit, lease_for)

    async def ack(
        self, leases: Sequence[Lease], results_json: Sequence[str | None] | None = None
    ) -> list[bool]:
        return self._store.ack(leases, results_json)

    async def fail(self, lease: Lease, error: ErrorInfo, *, retry_in: float | None) -> bool:
        ok, woken = self._store.fail(lease, error, retry_in)
        self._waiters.wake(woken)
        return ok

    async def release(
        self, leases: Sequence[Lease], *, delay: float = 0.0, note: ErrorInfo | None = None
    ) -> list[bool]:
        out, woken = self._store.release(leases, delay, note)
        self._waiters.wake(woken)
        return out

    async def extend(self, leases: Sequence[Lease], *, lease_for: float) -> list[bool]:
        return self._store.extend(leases, lease_for)

    async def recover(self, *, limit: int = 1000) -> RecoveryReport:
        report, woken = self._store.recover(limit)
        self._waiters.wake(woken)
        return report

    async def promote(self, *, limit: int = 1000) -> int:
        return self._store.promote(limit)

    async def wait_for_jobs(
        self, queues: Sequence[str], timeout: float, *, claimer: Claimer | None = None
    ) -> bool:
        del claimer  # no hand-off here: the claim that follows the wake-up takes the job
        token_at = self._store.next_token_at(queues)
        if token_at is not None:  # a rate-limited group gets its next token then (ADR 0110)
            timeout = min(timeout, max(0.0, token_at - self._store.clock.now()))
        if self._store.has_due(queues):
            return True
        event = asyncio.Event()
        self._waiters.add(asyncio.get_running_loop(), event, frozenset(queues))
        try:
            if self._store.has_due(queues):  # an enqueue may have landed before we parked
                return True
            await asyncio.wait_for(event.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._waiters.remove(event)

    async def idempotency_begin(self, key: str, owner: str, ttl: float) -> IdempotencyState:
        return self._store.idempotency_begin(key, owner, ttl)

    async def idempotency_end(self, key: str, owner: str, *, done: bool, ttl: float) -> None:
        self._store.idempotency_end(key, owner, done, ttl)

    # -- inspection and admin ----------------------------------------------------

    async def get_job(self, job_id: str) -> Job:
        return self._admin.get_job(job_id)

    async def counts(self) -> QueueCounts:
        return self._admin.counts()

    async def list_queues(self) -> list[str]:
        return self._admin.list_queues()

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        return self._admin.list_jobs(
            page_request(status, limit, offset, queue=queue, type=type), queue, type, limit, offset
        )

    async def cancel(self, job_id: str) -> bool:
        return self._admin.cancel(job_id)

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        admin_filter(queue)
        count, woken = self._admin.requeue_dead(queue, job_ids)
        self._waiters.wake(woken)
        return count

    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | None = None,
    ) -> int:
        admin_filter(queue, older_than=older_than)
        return self._admin.purge_dead(queue, job_ids, older_than)

    async def prune(self, *, limit: int = 1000) -> int:
        return self._store.prune(limit)

    async def register_worker(self, info: WorkerInfo, *, ttl: float) -> None:
        self._admin.register_worker(info, ttl)

    async def unregister_worker(self, worker_id: str) -> None:
        self._admin.unregister_worker(worker_id)

    async def list_workers(self) -> list[WorkerInfo]:
        return self._admin.list_workers()

    async def limit_groups(self) -> list[LimitState]:
        return self._admin.limit_groups()

    async def check_health(self) -> str:
        return f"memory store {self.name!r}"

    async def activity(self, *, window: float = DONE_WINDOW) -> QueueActivity:
        return self._admin.activity(window)

    # -- dependencies and result waiting (pqueue.broker_flows) ------------------------

    async def enqueue_flow(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        results, woken = self._flows.enqueue_flow(specs)
        self._waiters.wake(woken)
        return results

    async def wait_finished(self, job_id: str, timeout: float) -> Job | None:
        event = asyncio.Event()
        job = self._flows.watch(job_id, asyncio.get_running_loop(), event)
        if job is not None:
            return job
        try:
            async with asyncio.timeout(wait_delay(timeout)):
                await event.wait()
        except TimeoutError:
            return None
        finally:
            self._flows.unwatch(job_id, event)
        return self._admin.get_job(job_id)

    async def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        jobs = self._admin.scan(scan)
        for start in range(0, len(jobs), scan.page_size):
            yield jobs[start : start + scan.page_size]

    # -- control -----------------------------------------------------------------------

    async def pause(self, queue: str) -> bool:
        return self._admin.pause(control_queue(queue))

    async def resume(self, queue: str) -> bool:
        resumed = self._admin.resume(control_queue(queue))
        self._waiters.wake({queue})
        return resumed

    async def paused_queues(self) -> list[str]:
        return self._admin.paused_queues()

    async def cancel_active(self, job_id: str, *, reason: str = CANCEL_REASON) -> bool:
        return self._admin.cancel_active(job_id, cancel_reason(reason))

    async def wait_for_cancels(self, timeout: float) -> list[str]:
        if self._inbox is None:
            self._inbox = CancelInbox(asyncio.get_running_loop())
            self._store.cancels.add(self._inbox)
        return await self._inbox.take(timeout)
