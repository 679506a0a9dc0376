"""``AsyncClient``: enqueue jobs and inspect the queue from asyncio code.

A thin layer over the broker: it validates (``pqueue.spec``), runs the enqueue
middleware, and makes one broker call per method. Redis and Postgres brokers bind to
the event loop they were opened on, so use one ``AsyncClient`` per loop; from threads
or sync code use :class:`pqueue.Client`.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import TracebackType
from typing import Any, Unpack

from pqueue.broker import FullBroker, JobPage, JobScan, QueueCounts, WorkerInfo
from pqueue.broker_flows import has_parents
from pqueue.broker_schedules import ScheduleInfo
from pqueue.brokers import connect
from pqueue.clock import Clock
from pqueue.combine import AsyncCombiner, Outcome, Request, merging_async
from pqueue.errors import ResultTimeout
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus, JSONValue
from pqueue.limits import LimitState
from pqueue.middleware import Middleware, MiddlewareChain
from pqueue.options import SHARED_OPTION_NAMES, JobOptions, SharedOptions, task_of
from pqueue.router import Router
from pqueue.spec import (
    DEFAULT_MAX_RECOVERIES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    build_specs,
)
from pqueue.steps import Steps, run_async
from pqueue.task import Task
from pqueue.workflow import outcome_of, wait_seconds

CANCEL_TRIES = 3
"""Rounds :meth:`AsyncClient.cancel` tries when the job moves between waiting and running meanwhile."""


@dataclass(frozen=True, slots=True)
class Stats:
    """A snapshot of the queue: jobs per queue and status, and the live workers."""

    queues: QueueCounts
    workers: list[WorkerInfo] = field(default_factory=list)
    oldest_pending_age: Mapping[str, float] = field(default_factory=dict)
    """Queue -> seconds the oldest due pending job has waited (absent when none waits)."""
    done_per_second: Mapping[str, float] = field(default_factory=dict)
    """Queue -> jobs finished (completed or dead) over the last 60 s, divided by 60."""
    paused: tuple[str, ...] = ()
    """Queues paused (:meth:`AsyncClient.pause`): workers claim nothing from them."""
    limits: Sequence[LimitState] = ()
    """Every rate/concurrency limit group with a waiting or active job (docs/limits.md):
    active vs concurrency, waiting jobs, tokens."""

    def total(self, status: JobStatus, queue: str | None = None) -> int:
        """Jobs in ``status`` (in one queue, or in all)."""
        if queue is not None:
            return self.queues.get(queue, {}).get(status, 0)
        return sum(per.get(status, 0) for per in self.queues.values())

    @property
    def totals(self) -> dict[JobStatus, int]:
        return {status: self.total(status) for status in JobStatus}

    def only(self, queue: str) -> Stats:
        """These stats for one queue (zeros if it never held a job) and the workers serving it."""
        return Stats(
            {queue: self.queues.get(queue, dict.fromkeys(JobStatus, 0))},
            [w for w in self.workers if queue in w.queues],
            {q: age for q, age in self.oldest_pending_age.items() if q == queue},
            {queue: self.done_per_second.get(queue, 0.0)},
            tuple(q for q in self.paused if q == queue),
            [group for group in self.limits if group.queue == queue],
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data, the one shape of stats in every answer (``pqueue stats --json``,
        the HTTP API, the dashboard): counts keyed by status value, ages and rates in float
        seconds, worker times as ISO-8601 UTC text; docs/cli.md lists the keys."""
        return {
            "queues": {
                queue: {status.value: per.get(status, 0) for status in JobStatus}
                for queue, per in self.queues.items()
            },
            "totals": {status.value: n for status, n in self.totals.items()},
            "oldest_pending_age": dict(self.oldest_pending_age),
            "done_per_second": dict(self.done_per_second),
            "paused": list(self.paused),
            "limits": [group.to_dict() for group in self.limits],
            "workers": [worker.to_dict() for worker in self.workers],
        }

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Deprecated: the header and text cells of the queue table; presentation moved to the
        CLI (``pqueue stats``). Print ``str(stats)`` or read the fields instead."""
        warnings.warn(_MOVED.format("table()"), DeprecationWarning, stacklevel=2)
        from pqueue.cli._stats_text import table

        return table(self)

    def limit_lines(self) -> list[str]:
        """Deprecated: one text line per limit group; read :attr:`limits` or print ``str(stats)``."""
        warnings.warn(_MOVED.format("limit_lines()"), DeprecationWarning, stacklevel=2)
        from pqueue.cli._stats_text import limit_lines

        return limit_lines(self)

    def __str__(self) -> str:
        """A plain-text table a person can read: one line per queue, the limit groups, then
        the workers. Drawn by the CLI's renderer, the one place stats become text."""
        from pqueue.cli._stats_text import plain_text  # presentation lives with the CLI (ADR 0137)

        return plain_text(self)


_MOVED = (
    "Stats.{} is deprecated and will be removed: stats presentation lives in the CLI now; "
    "print str(stats) or read the Stats fields (queues, limits, workers) instead"
)


class AsyncClient:
    """Producer and admin API for asyncio apps; ``async with AsyncClient(dsn) as client:``.

    Making one connects nothing: :meth:`open`, ``async with`` or the first call does.

    Args:
        dsn: where the jobs live: ``memory://name``, ``redis://host:6379/0?prefix=...``,
            ``rediss://...`` or ``postgresql://user@host/db?schema=...`` (see
            :func:`pqueue.connect`).
        clock: a test clock (:class:`~pqueue.clock.ManualClock`); without one, brokers
            take the time from their server.
        middleware: :class:`~pqueue.middleware.Middleware` whose enqueue hooks see every
            batch this client sends.
        router: the app's :class:`~pqueue.Router`. Jobs of a registered type then take
            the handler's queue, max_retries and timeout unless given, and a type the
            router does not know is refused with :class:`~pqueue.errors.UnknownJobType`.
            Leave it out to enqueue types that other services handle.
        **options: the backend's own settings (``prefix``, ``schema``, ``retention``,
            ``pool_size``, ...), which override the DSN's query parameters.

    Raises:
        ConfigError: a malformed DSN, an unknown scheme, or an unknown or invalid option.
    """

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock | None = None,
        middleware: Iterable[Middleware] = (),
        router: Router | None = None,
        **options: Any,
    ) -> None:
        self.dsn = dsn
        self.router = router
        self._broker = connect(dsn, clock=clock, **options)
        self._middleware = MiddlewareChain(middleware)
        self._opened = False
        self._open_lock = asyncio.Lock()
        self._combiner = AsyncCombiner(self._enqueue_now)  # concurrent enqueues share round trips

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` has connected (and checked the storage)."""
        return self._opened

    @property
    def broker(self) -> FullBroker:
        """The broker underneath (for what the client does not wrap)."""
        return self._broker

    async def open(self) -> None:
        """Connect now (otherwise the first call connects); calling it again does nothing.

        Raises:
            BrokerUnavailable: the server cannot be reached.
            SchemaError: the storage is missing or was written by a newer pqueue (run
                ``pqueue migrate`` for Postgres).
        """
        if not self._opened:
            async with self._open_lock:
                if not self._opened:
                    await self._broker.open()
                    self._opened = True

    async def close(self) -> None:
        """Close the broker's connections; closing a closed client does nothing."""
        if self._opened:
            self._opened = False
            await self._broker.close()

    async def __aenter__(self) -> AsyncClient:
        """:meth:`open` the client and return it."""
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """:meth:`close` the client, whether or not the block raised."""
        await self.close()

    async def _ready(self) -> FullBroker:
        if not self._opened:
            await self.open()
        return self._broker

    # -- producing ------------------------------------------------------------------

    async def enqueue(
        self, type: str, payload: JSONValue = None, **options: Unpack[JobOptions]
    ) -> EnqueueResult:
        """Enqueue one job of ``type``; returns its id and whether it was created.

        Args:
            type: the job type, the name its handler is registered under (letters, digits
                and ``_ . : - /``, at most 128 characters).
            payload: the handler's input, a JSON value (dict, list, str, int, float, bool
                or None) of at most 1 MiB encoded; never pickled.
            **options: the job's options, each with its meaning and default at
                :class:`~pqueue.options.JobOptions`: where and when it runs (``queue``,
                ``delay``, ``run_at``), how it is retried and timed out (``max_retries``,
                ``max_recoveries``, ``timeout``), uniqueness (``unique_for``,
                ``unique_key``, ``idempotency_key``, ``job_id``), tags (``meta``),
                parents (``depends_on``, ``on_parent_failure``; docs/workflows.md) and
                limits (``limit_key``, ``rate``, ``concurrency``; docs/limits.md).

        Returns:
            ``EnqueueResult(id, created)``. ``created`` is False when a held unique key or
            an existing ``job_id`` matched: nothing was stored and ``id`` is that job's.

        Raises:
            UnknownJobType: the client was given a router that does not know ``type``.
            InvalidJob: an invalid name, payload or option (its subclasses say which);
                nothing is stored.
            JobNotFound: a ``depends_on`` id names no stored job; nothing is stored.
            BrokerUnavailable: the server cannot be reached.
            TypeError: an option that :class:`~pqueue.options.JobOptions` does not name.
        """
        [result] = await self.enqueue_many([task_of(type, payload, options)])
        return result

    async def enqueue_task(self, task: Task) -> EnqueueResult:
        """Enqueue one prepared :class:`Task`; the same as :meth:`enqueue` with its fields.

        Args:
            task: the job's type, payload and options.

        Returns:
            ``EnqueueResult(id, created)``, as :meth:`enqueue`.

        Raises:
            UnknownJobType, InvalidJob, BrokerUnavailable: as :meth:`enqueue`.
        """
        [result] = await self.enqueue_many([task])
        return result

    async def enqueue_many(self, tasks: Iterable[Task]) -> list[EnqueueResult]:
        """Enqueue many jobs in one broker round trip; results keep the input order.

        Args:
            tasks: the jobs, e.g. ``[handler.task(payload) for payload in rows]``.

        Returns:
            One ``EnqueueResult(id, created)`` per task, in the tasks' order; ``[]`` for
            no tasks (no round trip).

        Raises:
            UnknownJobType, InvalidJob: for any one task; every task is checked first, so
                nothing of the batch is stored.
            BrokerUnavailable: the server cannot be reached.
        """
        return await self._send(self._specs_of(tasks))

    def _specs_of(self, tasks: Iterable[Task]) -> list[JobSpec]:
        """Validated specs of ``tasks`` with their handlers' defaults and limits (both
        clients' one rule)."""
        return [self._spec(task) for task in tasks]

    async def enqueue_map(
        self,
        type: str,
        payloads: Iterable[JSONValue],
        *,
        job_ids: Sequence[str] | None = None,
        **options: Unpack[SharedOptions],
    ) -> list[EnqueueResult]:
        """Enqueue one job of ``type`` per payload, all with the same options, in one round trip.

        The bulk path for fan-out: the options are checked once, so a job costs the
        producer about half what a :class:`Task` in :meth:`enqueue_many` does.

        Args:
            type: the job type of every job.
            payloads: one JSON value per job.
            job_ids: one id per payload, chosen by the caller so that sending the same
                jobs again adds none (see :func:`pqueue.ids.key_id`); default: new ids.
            **options: the options every job shares, as in :meth:`enqueue`
                (:class:`~pqueue.options.SharedOptions`: ``queue``, ``delay``, ``run_at``,
                ``max_retries``, ``timeout``, ``unique_for``, ``meta``,
                ``max_recoveries``). With ``unique_for``, each job's unique key is derived
                from its payload, so equal payloads make one job.

        Returns:
            One ``EnqueueResult(id, created)`` per payload, in the payloads' order.

        Raises:
            UnknownJobType: the client was given a router that does not know ``type``.
            InvalidJob: a bad option, any one bad payload, or ``job_ids`` not one valid id
                per payload; everything is checked first, so nothing is stored.
            BrokerUnavailable: the server cannot be reached.
            TypeError: an option that :class:`~pqueue.options.SharedOptions` does not name.
        """
        return await self._send(self._map_specs(type, payloads, job_ids, options))

    def _map_specs(
        self,
        type: str,
        payloads: Iterable[JSONValue],
        job_ids: Sequence[str] | None,
        options: SharedOptions,
    ) -> list[JobSpec]:
        """The specs :meth:`enqueue_map` sends (both clients build them here)."""
        unknown = options.keys() - SHARED_OPTION_NAMES
        if unknown:
            raise TypeError(f"enqueue_map() got an unexpected keyword argument {min(unknown)!r}")
        task = self._with_handler_defaults(
            Task(
                type,
                queue=options.get("queue"),
                max_retries=options.get("max_retries"),
                timeout=options.get("timeout"),
                priority=options.get("priority"),
            )
        )
        specs = build_specs(
            type,
            payloads,
            queue=DEFAULT_QUEUE if task.queue is None else task.queue,
            delay=options.get("delay"),
            run_at=options.get("run_at"),
            max_retries=DEFAULT_MAX_RETRIES if task.max_retries is None else task.max_retries,
            max_recoveries=options.get("max_recoveries", DEFAULT_MAX_RECOVERIES),
            priority=DEFAULT_PRIORITY if task.priority is None else task.priority,
            timeout=task.timeout,
            unique_for=options.get("unique_for"),
            unique_until=options.get("unique_until", "ttl"),
            meta=options.get("meta"),
            job_ids=job_ids,
            unset=task.unset(),
        )
        rule = None if self.router is None else self.router.rule_for(self.router.get(type), task.queue)
        if rule is not None:  # each payload's own limit key
            specs = [replace(spec, limit=rule.resolve(json.loads(spec.payload_json))) for spec in specs]
        return specs

    async def _send(self, specs: list[JobSpec]) -> list[EnqueueResult]:
        return await run_async(self._sending(specs), self._submit_specs)

    def _sending(
        self, specs: list[JobSpec]
    ) -> Steps[list[JobSpec], list[EnqueueResult], list[EnqueueResult]]:
        """The enqueue middleware around one send, as steps: this client's sends go through
        its :class:`~pqueue.combine.AsyncCombiner`, the sync Client's through its transport."""
        if not specs:
            return []
        specs = self._middleware.before_enqueue(specs)
        results = yield specs
        self._middleware.after_enqueue(specs, results)
        return results

    def _spec(self, task: Task) -> JobSpec:
        """``task`` validated, with its handler's defaults and its limit (docs/limits.md)."""
        return routed_spec(task, self.router)

    async def _submit_specs(self, specs: list[JobSpec]) -> list[EnqueueResult]:
        broker = await self._ready()
        if has_parents(specs):
            return await broker.enqueue_flow(specs)
        return await self._combiner.submit(specs)

    async def _enqueue_now(self, requests: list[Request]) -> list[Outcome]:
        """One round trip of the combiner: a lone request is one broker enqueue, as ever;
        several go as one (``enqueue_each`` where the broker has it, else merged)."""
        if len(requests) == 1:
            try:
                return [await self._broker.enqueue(requests[0])]
            except Exception as exc:  # noqa: BLE001 - raised in its caller's task
                return [exc]
        each = getattr(self._broker, "enqueue_each", None)
        if each is not None:
            outcomes: list[Outcome] = await each(requests)
            return outcomes
        return await merging_async(self._broker.enqueue, requests)

    def _with_handler_defaults(self, task: Task) -> Task:
        """``task`` with its handler's defaults; with a router, an unknown type is refused here.

        Every enqueue path passes through this method (the sync :class:`~pqueue.Client`
        runs these same methods), so :meth:`Router.handler_for` is the one producer-side
        type check.
        """
        return task if self.router is None else self.router.handler_for(task.type).defaults(task)

    async def result(self, job_id: str, *, timeout: float | timedelta | None = None) -> JSONValue:
        """Wait for a job to finish and return its handler's return value.

        Woken by the broker's push channel (Redis pub/sub, Postgres LISTEN/NOTIFY, an
        in-process event on memory), not by polling; a job that has finished already
        answers at once.

        Args:
            job_id: the id :meth:`enqueue` returned.
            timeout: seconds (or a timedelta) to wait at most; None waits as long as it takes.

        Returns:
            What the handler returned (decoded JSON; None for a handler that returned None).

        Raises:
            JobFailed: the job is dead; ``.error`` is its last :class:`~pqueue.job.ErrorInfo`.
            JobCancelled: the job was cancelled (``.error`` says why when a parent died).
            ResultTimeout: ``timeout`` passed first (a ``TimeoutError``); the job runs on.
            JobNotFound: no such job.
        """
        return outcome_of(await self.wait_job(job_id, timeout=timeout))

    async def wait_job(self, job_id: str, *, timeout: float | timedelta | None = None) -> Job:
        """Wait for a job to finish (completed, dead or cancelled) and return it as stored:
        :meth:`result` without the mapping to a value or an error.

        Args:
            job_id: the id :meth:`enqueue` returned.
            timeout: seconds (or a timedelta) to wait at most; None waits as long as it takes.

        Returns:
            The finished :class:`~pqueue.job.Job`.

        Raises:
            ResultTimeout: ``timeout`` passed first.
            JobNotFound: no such job.
        """
        seconds = wait_seconds(timeout)
        job = await (await self._ready()).wait_finished(job_id, seconds)
        if job is None:
            raise ResultTimeout(f"job {job_id} did not finish within {seconds:g} s")
        return job

    # -- inspecting and admin -------------------------------------------------------

    async def get_job(self, job_id: str) -> Job:
        """The job with this id, as stored now.

        Args:
            job_id: the id :meth:`enqueue` returned.

        Returns:
            The :class:`~pqueue.job.Job`: status, attempts, errors, result, options.

        Raises:
            JobNotFound: no such job (never enqueued, or pruned after its retention).
        """
        return await (await self._ready()).get_job(job_id)

    async def stats(self) -> Stats:
        """A snapshot of the queues and of the workers seen recently.

        Returns:
            :class:`Stats`: jobs per queue and status (completed and cancelled ones while
            the broker keeps them, its ``retention``), the live workers, and how each
            queue moves (the oldest due job's age, jobs done per second over the last
            minute).
        """
        broker = await self._ready()
        counts, workers, activity, paused, limits = await asyncio.gather(
            broker.counts(),
            broker.list_workers(),
            broker.activity(),
            broker.paused_queues(),
            broker.limit_groups(),
        )
        rates = {queue: n / activity.window for queue, n in activity.done.items()}
        oldest = dict(activity.oldest_pending_age)
        return Stats(counts, workers, oldest, rates, paused=tuple(paused), limits=limits)

    async def list_queues(self) -> list[str]:
        """Every queue that has held a job, sorted by name."""
        return await (await self._ready()).list_queues()

    async def list_workers(self) -> list[WorkerInfo]:
        """The workers that reported in recently (id, host, pid, queues, last seen)."""
        return await (await self._ready()).list_workers()

    async def schedules(self) -> list[ScheduleInfo]:
        """The periodic schedules workers run (name, job type, cron or every, next and last
        run), as the workers published them: no app code needed (docs/periodic.md)."""
        return await (await self._ready()).list_schedules()

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        """One page of the jobs in ``status``, in a stable order.

        Args:
            status: a :class:`~pqueue.job.JobStatus` (or its value, e.g. ``"dead"``).
            queue: only this queue's jobs; default: every queue's.
            type: only jobs of this type; default: every type.
            limit: the most jobs in the page (at least 1).
            offset: how many jobs to skip; pass the previous page's ``next_offset``.

        Returns:
            A :class:`~pqueue.broker.JobPage`: ``jobs``, and ``next_offset`` (None on the
            last page).

        Raises:
            InvalidRequest: an unknown status, a limit below 1 or a negative offset.
        """
        broker = await self._ready()
        return await broker.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset)

    async def dead_jobs(self, *, queue: str | None = None, limit: int = 50, offset: int = 0) -> JobPage:
        """One page of the dead-letter queue; :meth:`list_jobs` for status ``dead``.

        Args:
            queue: only this queue's dead jobs; default: every queue's.
            limit: the most jobs in the page (at least 1).
            offset: how many jobs to skip; pass the previous page's ``next_offset``.

        Returns:
            A :class:`~pqueue.broker.JobPage` whose jobs carry ``last_error`` (why each died).

        Raises:
            InvalidRequest: a limit below 1 or a negative offset.
        """
        return await self.list_jobs(JobStatus.DEAD, queue=queue, limit=limit, offset=offset)

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        """Move dead jobs back to pending with a fresh retry budget.

        Args:
            queue: requeue this queue's dead jobs (with ``job_ids``: only those in it).
            job_ids: requeue these jobs; ids that are not dead are skipped. With neither
                argument, every dead job is requeued.

        Returns:
            How many jobs moved.
        """
        return await (await self._ready()).requeue_dead(queue=queue, job_ids=job_ids)

    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | timedelta | None = None,
    ) -> int:
        """Delete dead jobs for good.

        Args:
            queue: delete this queue's dead jobs (with ``job_ids``: only those in it).
            job_ids: delete these jobs; ids that are not dead are skipped. With neither
                argument, every dead job is deleted.
            older_than: only jobs dead for at least this long (seconds or a timedelta).

        Returns:
            How many jobs were deleted.
        """
        age = older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
        return await (await self._ready()).purge_dead(queue=queue, job_ids=job_ids, older_than=age)

    async def cancel(self, job_id: str) -> bool:
        """Cancel a job that has not finished: waiting (pending, scheduled or waiting to
        retry) or running.

        A running job becomes ``cancelled`` at once and its worker hears of it within a
        second or two: an async handler is cancelled, a sync handler sees
        ``job.cancelled()`` turn True (and is abandoned after the worker's
        ``cancel_grace``). It is not retried and not dead-lettered (docs/control.md).

        Args:
            job_id: the id :meth:`enqueue` returned.

        Returns:
            True if the job is now cancelled; False if it had finished already (nothing
            changes).

        Raises:
            JobNotFound: no such job.
        """
        broker = await self._ready()
        for _ in range(CANCEL_TRIES):
            if await broker.cancel(job_id) or await broker.cancel_active(job_id):
                return True
            status = (await broker.get_job(job_id)).status
            if status.is_final:
                return False
            # It moved between the two calls (claimed, or failed into retry): try again.
        return False

    async def pause(self, queue: str) -> bool:
        """Pause a queue: workers claim nothing more from it until :meth:`resume` (within
        one claim of each worker); enqueues go on and jobs already running finish. Stored
        in the broker, so it outlives worker restarts.

        Args:
            queue: the queue's name (it need not have held a job yet).

        Returns:
            True if the queue was running, False if it was paused already.

        Raises:
            InvalidRequest: a name no queue could have.
        """
        return await (await self._ready()).pause(queue)

    async def resume(self, queue: str) -> bool:
        """Let workers claim from a paused queue again (idle ones are woken at once).

        Args:
            queue: the queue's name.

        Returns:
            True if the queue was paused, False if it was not.

        Raises:
            InvalidRequest: a name no queue could have.
        """
        return await (await self._ready()).resume(queue)

    async def paused_queues(self) -> list[str]:
        """The paused queues, sorted by name."""
        return await (await self._ready()).paused_queues()

    async def health(self) -> str:
        """Check that the broker answers and its storage schema is current.

        Returns:
            What was checked, e.g. ``"postgres schema 'pqueue' at version 2"``.

        Raises:
            BrokerUnavailable: the server does not answer (also from connecting, when the
                client is not open yet).
            SchemaError: the storage schema is missing or not the one this pqueue writes.
        """
        return await (await self._ready()).check_health()

    async def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        """Every stored job ``scan`` matches, page by page (bulk reads: export, Spark).

        Args:
            scan: a :class:`~pqueue.broker.JobScan`: which statuses and queue, jobs since
                when, which of ``parts`` disjoint slices, and the page size.

        Returns:
            An async iterator of pages (sequences of :class:`~pqueue.job.Job`); on
            Postgres the scan holds a transaction until the iteration ends.

        Raises:
            InvalidRequest: from building a bad :class:`~pqueue.broker.JobScan`.
        """
        broker = await self._ready()
        async for page in broker.scan_jobs(scan):
            yield page


def routed_spec(task: Task, router: Router | None) -> JobSpec:
    """The spec a client with ``router`` stores for ``task``: validated, with its handler's
    declarations for what ``task`` leaves unset and its limit (docs/limits.md), or as it is
    without a router. Raises :class:`~pqueue.errors.UnknownJobType` for a type ``router``
    does not know, :class:`~pqueue.errors.InvalidJob` for a bad option. ``pqueue enqueue
    --app`` and ``pqueue serve --app`` apply the same rule."""
    if router is None:
        return task.to_spec()
    handler = router.handler_for(task.type)
    task = handler.defaults(task)
    limit = router.limit_for(handler, task)
    return task.to_spec() if limit is None else task.to_spec(limit=limit)
