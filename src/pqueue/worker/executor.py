"""Run one claimed job: find its handler, guard its idempotency key, call it, settle it.

Policy lives here, above the broker seam: the retry-or-dead decision
(:func:`pqueue.outcome.next_retry_in`), ``SkipRetry``/``Retry``, timeouts, the
unknown-type policy and idempotency keys. The broker only carries out the outcome.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import random
import traceback
from datetime import datetime, timedelta
from time import perf_counter
from typing import Any

from pqueue import cancellation
from pqueue.broker import FullBroker, IdempotencyState
from pqueue.broker_control import CANCEL_REASON
from pqueue.clock import to_epoch
from pqueue.errors import Retry, SkipRetry, UnknownJobType
from pqueue.job import TRACEBACK_TAIL_CHARS, ErrorInfo, Job, Lease
from pqueue.middleware import JobReport, MiddlewareChain, Outcome
from pqueue.outcome import has_retries_left, next_retry_in
from pqueue.router import Handler, Router
from pqueue.worker import completion
from pqueue.worker.config import UnknownTypePolicy, WorkerSettings
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import Settler, WorkerCounters
from pqueue.worker.threads import HandlerThreads, JobTimeout, ThreadCall

log = logging.getLogger("pqueue.worker")

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

MAX_RESULT_CHARS = 1024 * 1024
"""Results longer than this (encoded) are not stored; the job still completes."""


Attempt = tuple[bool, Any]
"""``(True, return value)`` or ``(False, the exception)`` of one handler call."""


class Executor:
    """Runs jobs for one worker; each call of :meth:`run` handles one lease to its settlement."""

    def __init__(
        self,
        *,
        broker: FullBroker,
        router: Router,
        settings: WorkerSettings,
        book: LeaseBook,
        threads: HandlerThreads,
        settler: Settler,
        middleware: MiddlewareChain,
        counters: WorkerCounters,
    ) -> None:
        self.broker = broker
        self.router = router
        self.settings = settings
        self.book = book
        self.threads = threads
        self.settler = settler
        self.middleware = middleware
        self.counters = counters
        self.in_handler: dict[str, tuple[Lease, ThreadCall | None]] = {}
        """Jobs whose handler is running now (what a drain past its timeout hands back)."""
        self.started: dict[str, float] = {}
        """When each job in ``in_handler`` entered its handler (``perf_counter``)."""
        self.aborting = False
        """Set when the drain timed out: handlers not started yet are handed back instead."""
        self.completions = completion.Completions(
            broker, settling=lambda lease: book.settling([lease]), encode=self._encode
        )
        """Jobs completed in their handler's own transaction (``job.transaction()``)."""

    async def run(self, lease: Lease) -> None:
        job = lease.job
        if cancellation.any_requested() and cancellation.requested(job.id):
            await self._cancelled(lease, None, "", 0.0)  # cancelled while it waited for a slot
            return
        handler = self.router.get(job.type)
        if handler is None:
            await self._unknown(lease)
            return
        if job.unset:  # options its producer left to the handler (ADR 0157): what runs
            job = handler.resolve(job)
            lease = Lease(job, lease.token, lease.expires_at)
        key, owner = job.idempotency_key, ""
        if key is not None:
            owner = f"{job.id}:{lease.token}"
            if not await self._begin_key(lease, key, owner):
                return
        if self.aborting:
            await self._end_key(lease, key, owner, done=False)
            await self.settler.release([lease], reason="worker stopping")
            return
        timeout = job.timeout if job.timeout is not None else handler.timeout
        started = perf_counter()
        ok, value = await self._call(handler, lease, timeout)
        duration = perf_counter() - started
        if self.completions.take(lease):
            await self._committed(lease, None if ok else value, key=key, owner=owner, duration=duration)
            return
        if cancellation.any_requested() and cancellation.requested(job.id):
            await self._cancelled(lease, key, owner, duration)
            return
        if ok:
            if key is not None:  # no coroutine to make and await for the usual keyless job
                await self._end_key(lease, key, owner, done=True)
            self.settler.complete(lease, None if value is None else self._encode(job, value), duration)
        else:
            await self._failed(lease, handler, value, duration=duration, key=key, owner=owner)

    # -- calling handlers -------------------------------------------------------------

    def running_for(self, job_id: str) -> float:
        """Seconds the job has been in its handler (0.0 when it is not in one)."""
        started = self.started.get(job_id)
        return 0.0 if started is None else perf_counter() - started

    async def _call(self, handler: Handler, lease: Lease, timeout: float | None) -> Attempt:
        job = lease.job
        self.started[job.id] = perf_counter()
        running = completion.enter(self.completions, lease)  # for job.transaction()
        try:
            if handler.is_async:
                return await self._call_async(handler, lease, timeout)
            return await self._call_sync(handler, lease, timeout)
        except asyncio.CancelledError:
            if not cancellation.requested(job.id):
                raise  # the drain cancelled it (past the shutdown timeout)
            _uncancel()  # the job was cancelled while running (pqueue.worker.cancels)
            return False, None
        finally:
            completion.leave(running)
            self.in_handler.pop(job.id, None)
            self.started.pop(job.id, None)

    async def _call_async(self, handler: Handler, lease: Lease, timeout: float | None) -> Attempt:
        job = lease.job
        self.in_handler[job.id] = (lease, None)
        if self.middleware.wants_jobs:
            self.middleware.before_job(job)
        if timeout is None:  # the common case: no timer to arm (a handle per job otherwise)
            return await _attempt(handler, job)
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                value = await handler.fn(job)
        except asyncio.CancelledError as exc:
            return _cancelled(exc)
        except BaseException as exc:  # noqa: BLE001 - any handler error is the job's outcome
            if scope.expired():
                return False, _timeout(timeout, exc)
            return False, exc
        return True, value

    async def _call_sync(self, handler: Handler, lease: Lease, timeout: float | None) -> Attempt:
        job = lease.job
        if self.middleware.wants_jobs:
            self.middleware.before_job(job)  # in this job's own task: its context is copied below
        ctx = contextvars.copy_context()
        call = self.threads.submit(handler.fn, job, ctx, asyncio.get_running_loop())
        self.in_handler[job.id] = (lease, call)
        if timeout is None:
            return await call.future
        try:
            async with asyncio.timeout(timeout):
                return await call.future
        except TimeoutError:
            await self._commit_decides(lease, call)
            stack = self.threads.interrupt(call)
            error = _timeout(timeout, None)
            error.stack = stack
            return False, error

    async def _commit_decides(self, lease: Lease, call: ThreadCall) -> None:
        """At a sync handler's timeout, make its ``job.transaction()`` agree with it: a block
        that has not begun to commit never will; one whose commit runs is waited for (up to
        the lease), and a commit that goes through completes the job (ADR 0158)."""
        committing = self.completions.time_out(lease, call)
        if committing is not None:
            await asyncio.to_thread(committing.wait, self.settings.lease)

    # -- outcomes ---------------------------------------------------------------------

    def _encode(self, job: Job, value: Any) -> str | None:
        if value is None:
            return None
        try:
            text = _encoder.encode(value)
        except (TypeError, ValueError, RecursionError) as exc:
            log.warning(
                "job %s (%s) returned a value JSON cannot hold (%s); result not stored", job.id, job.type, exc
            )
            return None
        if len(text) > MAX_RESULT_CHARS:
            log.warning("job %s (%s) returned %d characters; result not stored", job.id, job.type, len(text))
            return None
        return text

    async def _failed(
        self,
        lease: Lease,
        handler: Handler,
        error: BaseException,
        *,
        duration: float,
        key: str | None,
        owner: str,
    ) -> None:
        job = lease.job
        if self.middleware.wants_jobs:
            self.middleware.on_error(job, error)
        if isinstance(error, JobTimeout):
            self.counters.timeouts += 1
        if isinstance(error, SkipRetry):
            retry_in = None
        elif isinstance(error, Retry):
            retry_in = await self._retry_after(error, handler, job) if has_retries_left(job) else None
        else:
            retry_in = next_retry_in(job, error, handler.retry)
        await self._end_key(lease, key, owner, done=False)
        await self.settler.fail(lease, error, error_info(error), retry_in, duration)

    async def _committed(
        self, lease: Lease, raised: BaseException | None, *, key: str | None, owner: str, duration: float
    ) -> None:
        """Report a job its handler completed in its own transaction: nothing is left to
        settle (an ack would be refused, a fail must not undo a committed completion)."""
        job = lease.job
        if isinstance(raised, JobTimeout):
            log.warning(
                "job %s (%s) reached its timeout once its transaction had begun to commit; "
                "the commit completed it", job.id, job.type,
            )  # fmt: skip
        elif raised is not None:
            log.warning(
                "job %s (%s) raised %s after its transaction had completed it; it stays completed",
                job.id, job.type, type(raised).__name__,
            )  # fmt: skip
        await self._end_key(lease, key, owner, done=True)
        self.book.remove([lease])
        self.settler.report(JobReport(job, Outcome.COMPLETED, duration))

    async def _cancelled(self, lease: Lease, key: str | None, owner: str, duration: float) -> None:
        """Report a run cut short by a cancel; the broker made the job ``cancelled`` already,
        so nothing is settled there (an ack or fail would be refused anyway)."""
        await self._end_key(lease, key, owner, done=False)
        self.book.remove([lease])
        self.settler.report(JobReport(lease.job, Outcome.CANCELLED, duration, None, None, CANCEL_REASON))

    async def _retry_after(self, request: Retry, handler: Handler, job: Job) -> float:
        """Seconds until the time a handler asked for with ``Retry(after=...)``."""
        after = request.after
        try:
            if isinstance(after, datetime):
                return max(0.0, to_epoch(after) - await self.broker.now())
            seconds = after.total_seconds() if isinstance(after, timedelta) else float(after)
            if math.isfinite(seconds):
                return max(0.0, seconds)
        except (TypeError, ValueError) as exc:
            log.warning("job %s: bad Retry(after=%r) (%s); using the retry policy", job.id, after, exc)
        return next_retry_in(job, request, handler.retry) or 0.0

    async def _unknown(self, lease: Lease) -> None:
        job = lease.job
        self.counters.unknown += 1
        reason = f"no handler for job type {job.type!r} in this worker"
        why = self.router.missing_reason(job.type)
        if why:
            reason += f" ({why})"
        if self.settings.unknown_type is UnknownTypePolicy.RETRY:
            age = max(0.0, await self.broker.now() - job.created_at.timestamp())
            if age < self.settings.unknown_type_max_age:
                # Back off in proportion to the job's age: a deploy in progress is caught
                # within seconds, a type nobody knows costs one claim every few minutes.
                delay = min(self.settings.unknown_type_max_delay, max(1.0, age / 4))
                delay *= random.uniform(0.8, 1.2)
                note = ErrorInfo("UnknownJobType", f"{reason}; handed back for {delay:.0f} s")
                await self.settler.release([lease], delay=delay, reason=reason, note=note)
                return
            # A typo or a retired type: no deploy is coming.
            reason += f", and none has known it for {age / 3600:.0f} h since it was enqueued"
        await self.settler.fail(lease, UnknownJobType(reason), ErrorInfo("UnknownJobType", reason), None, 0.0)

    # -- idempotency keys ---------------------------------------------------------------

    async def _begin_key(self, lease: Lease, key: str, owner: str) -> bool:
        """Hold ``key`` for this run; False when the job was settled without running."""
        state = await self.broker.idempotency_begin(key, owner, self.settings.lease)
        if state is IdempotencyState.DONE:
            self.settler.duplicate(lease)
            return False
        if state is IdempotencyState.IN_FLIGHT:
            await self.settler.release(
                [lease],
                delay=self.settings.idempotency_busy_delay,
                reason=f"idempotency key {key!r} is held by a running job",
            )
            return False
        self.book.hold_key(lease, key, owner)
        return True

    async def _end_key(self, lease: Lease, key: str | None, owner: str, *, done: bool) -> None:
        """Confirm the key done for its long TTL (success) or release it (failure)."""
        if key is None:
            return
        ttl = self.settings.idempotency_ttl if done else self.settings.lease
        await self.broker.idempotency_end(key, owner, done=done, ttl=ttl)
        self.book.drop_key(lease)


async def _attempt(handler: Handler, job: Job) -> Attempt:
    """Await an async handler with no timeout."""
    try:
        return True, await handler.fn(job)
    except asyncio.CancelledError as exc:
        return _cancelled(exc)
    except BaseException as exc:  # noqa: BLE001 - any handler error is the job's outcome
        return False, exc


def _cancelled(exc: asyncio.CancelledError) -> Attempt:
    """A handler's cancellation is its failure, unless the worker cancelled its task (drain)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise exc  # the worker cancelled it (drain past its timeout): not the job's failure
    return False, exc  # the handler's own (e.g. a cancelled future it awaited)


def _uncancel() -> None:
    """Take back the cancel request of this task: the job's cancel is handled, the task goes on."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _timeout(timeout: float | None, cause: BaseException | None) -> JobTimeout:
    error = JobTimeout(f"job ran past its timeout of {timeout:g}s")
    error.__cause__ = cause
    return error


def error_info(error: BaseException) -> ErrorInfo:
    """The error as stored with the job: type, message and the tail of the traceback."""
    if isinstance(error, JobTimeout) and error.stack:
        text = "Stack of the handler thread at the timeout:\n" + error.stack + f"JobTimeout: {error}\n"
    else:
        text = "".join(traceback.format_exception(error))
    return ErrorInfo.from_exception(error, traceback_text=text[-TRACEBACK_TAIL_CHARS:])
