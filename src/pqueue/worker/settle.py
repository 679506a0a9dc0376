"""Settling deliveries: batched acks, fails and releases, and reporting each outcome.

Acks are batched: a finished job waits in a buffer while the previous ack round trip
is in flight, then all buffered jobs are acked in one call. While other jobs of the
worker are still running (``more_coming``), the acker first waits up to ``ack_interval``
for ``busy_batch`` jobs to share the call (ADR 0125); else, under load (the previous ack
carried ``busy_batch`` jobs or more), it lingers at most as long as the last ack took.
A job counts as completed only once its ack is durable; a crash between the handler's
return and the ack makes the job run again (a repeat), never disappear (a loss).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple, TypeVar

from pqueue.broker import FullBroker
from pqueue.errors import BrokerUnavailable
from pqueue.job import ErrorInfo, JobStatus, Lease
from pqueue.middleware import JobReport, MiddlewareChain, Outcome
from pqueue.worker.fatal import Seen, never
from pqueue.worker.leases import LeaseBook

log = logging.getLogger("pqueue.worker")

T = TypeVar("T")

RETRY_DELAYS = (0.05, 0.1, 0.2)
"""Back-off between the first attempts to reach the broker when a settlement fails; then
every OUTAGE_RETRY seconds, for as long as the lease may still hold (``patience``)."""
OUTAGE_RETRY = 0.2
"""Seconds between attempts of the worker's loops (claim, settle, heartbeat) while the broker
is unreachable: they go through within this long of its return."""


@dataclass
class WorkerCounters:
    """What one worker did since it started (read them for tests, demos and metrics)."""

    claimed: int = 0
    completed: int = 0
    retried: int = 0
    dead: int = 0
    released: int = 0
    cancelled: int = 0
    duplicates: int = 0
    lost: int = 0
    timeouts: int = 0
    unknown: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_COUNTER = {
    Outcome.COMPLETED: "completed",
    Outcome.RETRY: "retried",
    Outcome.DEAD: "dead",
    Outcome.RELEASED: "released",
    Outcome.CANCELLED: "cancelled",
    Outcome.DUPLICATE: "duplicates",
    Outcome.LOST: "lost",
}


class _Done(NamedTuple):
    lease: Lease
    result_json: str | None
    duration: float
    outcome: Outcome


class Settler:
    """Acks in batches, fails and releases one by one, and reports every outcome."""

    def __init__(
        self,
        broker: FullBroker,
        book: LeaseBook,
        middleware: MiddlewareChain,
        counters: WorkerCounters,
        *,
        on_acked: Callable[[], None] = lambda: None,
        ack_interval: float = 0.0,
        busy_batch: int = 1,
        patience: float = 30.0,
        more_coming: Callable[[], bool] = lambda: False,
        fatal: Seen = never,
    ) -> None:
        self.broker = broker
        self.fatal = fatal
        """Sees each failed settlement first: a fatal error is the worker's to report."""
        self.patience = patience
        """Seconds a failing settlement is retried: the lease, past which retrying is futile."""
        self.ack_interval = ack_interval
        """Under load, how long a finished job may wait for others to share its ack."""
        self.busy_batch = busy_batch
        """An ack of at least this many jobs means load: the next one lingers."""
        self.more_coming = more_coming
        """True while the worker runs other jobs, whose acks could share the next call."""
        self._last_batch = 0
        self._last_ack_seconds = 0.0
        self._filled: asyncio.Future[None] | None = None  # resolved once busy_batch acks wait
        self.on_acked = on_acked
        self.book = book
        self.middleware = middleware
        self.counters = counters
        self._pending: list[_Done] = []
        self._in_flight = 0
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    @property
    def backlog(self) -> int:
        """Finished jobs whose ack is not durable yet."""
        return len(self._pending) + self._in_flight

    @property
    def unsent(self) -> bool:
        """Finished jobs wait for the acker to send their ack."""
        return bool(self._pending)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="pqueue-acker")

    # -- outcomes ---------------------------------------------------------------------

    def complete(self, lease: Lease, result_json: str | None, duration: float) -> None:
        """Queue an ack for a job whose handler returned."""
        pending = self._pending
        pending.append(_Done(lease, result_json, duration, Outcome.COMPLETED))
        self._idle.clear()
        self._wake.set()
        filled = self._filled
        if filled is not None and len(pending) >= self.busy_batch and not filled.done():
            filled.set_result(None)

    def nudge(self) -> None:
        """No more jobs are on their way (``more_coming`` turned false): the acker need not
        wait for company any longer."""
        filled = self._filled
        if filled is not None and not filled.done():
            filled.set_result(None)

    def duplicate(self, lease: Lease) -> None:
        """Queue an ack for a job whose idempotency key already succeeded (it did not run)."""
        self._pending.append(_Done(lease, None, 0.0, Outcome.DUPLICATE))
        self._idle.clear()
        self._wake.set()

    async def fail(
        self, lease: Lease, error: BaseException, info: ErrorInfo, retry_in: float | None, duration: float
    ) -> None:
        """Record the failure: the job waits ``retry_in`` seconds, or is dead when None."""
        self.book.settling([lease])
        try:
            ok = await self._with_retries(lambda: self.broker.fail(lease, info, retry_in=retry_in))
        except Exception as exc:
            if not self.fatal(exc, "recording a failure"):
                log.exception("could not record the failure of job %s; its lease will expire", lease.job.id)
            ok = False
        self.book.remove([lease])
        outcome = (
            (Outcome.RETRY if retry_in is not None else Outcome.DEAD) if ok else await self._refused(lease)
        )
        self.report(JobReport(lease.job, outcome, duration, error, retry_in if ok else None))

    async def release(
        self,
        leases: list[Lease],
        *,
        delay: float = 0.0,
        reason: str,
        note: ErrorInfo | None = None,
        outcome: Outcome = Outcome.RELEASED,
        durations: Sequence[float] | None = None,
    ) -> None:
        """Hand jobs back unrun or unfinished, without burning an attempt; ``note`` goes
        into each job's error history; ``outcome`` is RELEASED (unrun) or CANCELLED
        (a handler cut short), reported with how long each ran (``durations``, one per
        lease; 0.0 for jobs that did not run)."""
        if not leases:
            return
        if durations is None:
            durations = [0.0] * len(leases)
        elif len(durations) != len(leases):
            raise ValueError(f"{len(durations)} durations for {len(leases)} leases")
        self.book.settling(leases)
        try:
            oks = await self._with_retries(lambda: self.broker.release(leases, delay=delay, note=note))
        except Exception as exc:
            if not self.fatal(exc, "handing jobs back"):
                log.exception("could not hand back %d job(s); their leases will expire", len(leases))
            oks = [False] * len(leases)
        self.book.remove(leases)
        for lease, ok, duration in zip(leases, oks, durations, strict=True):
            settled = outcome if ok else Outcome.LOST
            retry_in = delay if ok and delay else None
            self.report(JobReport(lease.job, settled, duration, None, retry_in, reason))

    def report(self, report: JobReport) -> None:
        counter = _COUNTER[report.outcome]
        setattr(self.counters, counter, getattr(self.counters, counter) + 1)
        self.middleware.after_job(report)

    # -- the ack batcher ----------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                if self.ack_interval:
                    await self._gather()
                batch, self._pending = self._pending, []
                self._last_batch = self._in_flight = len(batch)
                started = time.perf_counter()
                try:
                    await self._ack(batch)
                finally:
                    self._last_ack_seconds = time.perf_counter() - started
                    self._in_flight = 0
                    self.on_acked()  # the backlog shrank: a claim loop held back by it may go on
            self._idle.set()

    async def _gather(self) -> None:
        """Let more finished jobs share the next ack, when more are on their way."""
        if len(self._pending) < self.busy_batch and self.more_coming():
            # Jobs still run: wait for a full batch, at most ack_interval. Without this,
            # handlers that await I/O finish one by one and every ack carried 1-2 jobs.
            loop = asyncio.get_running_loop()
            self._filled = filled = loop.create_future()
            timer = loop.call_later(self.ack_interval, _resolve, filled)
            try:
                await filled
            finally:
                timer.cancel()
                self._filled = None
        elif self._last_batch >= self.busy_batch:
            # Under load, let more jobs share this ack -- at most as long as the last
            # ack took (cheap acks, e.g. in memory, are not worth waiting for).
            await asyncio.sleep(min(self.ack_interval, self._last_ack_seconds))

    async def _ack(self, batch: list[_Done]) -> None:
        leases = [done.lease for done in batch]
        results = [done.result_json for done in batch]
        self.book.settling(leases)
        try:
            oks = await self._with_retries(
                lambda: self.broker.ack(leases, results if any(r is not None for r in results) else None)
            )
        except Exception as exc:
            if not self.fatal(exc, "acking"):
                log.exception(
                    "could not ack %d job(s); their leases will expire and they run again", len(leases)
                )
            oks = [False] * len(leases)
        if not all(oks):
            oks = [ok or await self._landed_before(lease) for lease, ok in zip(leases, oks, strict=True)]
        self.book.remove(leases)
        for done, ok in zip(batch, oks, strict=True):
            outcome = done.outcome if ok else await self._refused(done.lease)
            if outcome is Outcome.LOST:
                log.warning("job %s finished but its lease was lost; it may run again", done.lease.job.id)
            self.report(JobReport(done.lease.job, outcome, done.duration))

    async def _refused(self, lease: Lease) -> Outcome:
        """The outcome of a refused settlement: CANCELLED when the job was cancelled while
        running (its lease revoked, ADR 0106), else LOST."""
        try:
            job = await self.broker.get_job(lease.job.id)
        except Exception:  # noqa: BLE001 - cannot tell: the lease is lost
            return Outcome.LOST
        return Outcome.CANCELLED if job.status == JobStatus.CANCELLED else Outcome.LOST

    async def _landed_before(self, lease: Lease) -> bool:
        """Whether a refused ack was refused because an earlier send of it had landed.

        An ack applied just before the connection died loses its reply; sent again (by
        the settler, or by the Postgres broker's one retry on a fresh connection) it is
        refused, the job being completed already. The job is ours if it is completed in
        the very run our lease started: same attempt, same recoveries, same start.
        Anything else -- recovered and run elsewhere, or unreadable -- is a lost lease.
        """
        try:
            job = await self.broker.get_job(lease.job.id)
        except Exception:  # noqa: BLE001 - cannot tell: report the lease as lost
            return False
        mine = lease.job
        ours = job.status == JobStatus.COMPLETED and (job.attempt, job.recoveries, job.started_at) == (
            mine.attempt,
            mine.recoveries,
            mine.started_at,
        )
        if ours:
            log.debug("the ack of job %s had landed before its reply was lost", mine.id)
        return ours

    async def _with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        """Retry a settlement while the broker is unreachable, for as long as the lease may
        hold (``patience`` from the first failure): the lease keeps the job safe meanwhile,
        and the lease token fences a settlement that arrives too late."""
        give_up = time.monotonic() + self.patience
        delays = iter(RETRY_DELAYS)
        while True:
            try:
                return await call()
            except (ConnectionError, OSError, TimeoutError) as exc:
                delay = next(delays, OUTAGE_RETRY)
                if time.monotonic() + delay > give_up:
                    raise
                # A BrokerUnavailable is logged once per outage (pqueue.brokers.health).
                level = logging.DEBUG if isinstance(exc, BrokerUnavailable) else logging.WARNING
                log.log(level, "settling failed (%s: %s); retrying in %.2fs", type(exc).__name__, exc, delay)
                await asyncio.sleep(delay)

    async def flush(self) -> None:
        """Wait until every queued ack is durable; the batcher keeps running."""
        await self._idle.wait()

    async def close(self) -> None:
        """Wait for every queued ack to be durable, then stop the batcher."""
        if self._task is None:
            return
        await self._idle.wait()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._task = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
