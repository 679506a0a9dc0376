"""``AsyncClient``: enqueue jobs and inspect the queue from asyncio code.

A thin layer over the broker: it validates (``pqueue.spec``), runs the enqueue
middleware, and makes one broker call per method. Redis and Postgres brokers bind to
the event loop they were opened on, so use one ``AsyncClient`` per loop; from threads
or sync code use :class:`pqueue.Client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from pqueue.broker import FullBroker, JobPage, JobScan, QueueCounts, WorkerInfo
from pqueue.brokers import connect
from pqueue.clock import Clock
from pqueue.durations import format_duration
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus, JSONValue
from pqueue.middleware import Middleware, MiddlewareChain
from pqueue.router import Router
from pqueue.spec import DEFAULT_MAX_RECOVERIES, DEFAULT_MAX_RETRIES, DEFAULT_QUEUE, build_specs
from pqueue.task import Task


@dataclass(frozen=True, slots=True)
class Stats:
    """A snapshot of the queue: jobs per queue and status, and the live workers."""

    queues: QueueCounts
    workers: list[WorkerInfo] = field(default_factory=list)
    oldest_pending_age: Mapping[str, float] = field(default_factory=dict)
    """Queue -> seconds the oldest due pending job has waited (absent when none waits)."""
    done_per_second: Mapping[str, float] = field(default_factory=dict)
    """Queue -> jobs finished (completed or dead) over the last 60 s, divided by 60."""

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
            "workers": [worker.to_dict() for worker in self.workers],
        }

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The header and one row of text cells per queue (counts, done/s, oldest pending
        age): what ``str(stats)`` and ``pqueue stats`` show, defined once."""
        statuses = [s for s in JobStatus if s is not JobStatus.CANCELLED]
        header = ["queue", *(s.value for s in statuses), "done/s", "oldest pending"]
        rows = [
            [
                queue,
                *(str(per.get(s, 0)) for s in statuses),
                f"{self.done_per_second.get(queue, 0.0):.2f}",
                _age(self.oldest_pending_age.get(queue)),
            ]
            for queue, per in self.queues.items()
        ]
        return header, rows

    def __str__(self) -> str:
        """A plain-text table a person can read: one line per queue, then the workers."""
        header, rows = self.table()
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        lines = [
            "  ".join(
                [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]
            )
            for row in [header, *rows]
        ]
        if not rows:
            lines.append("(no queues yet)")
        names = ", ".join(f"{w.id} ({w.host} pid {w.pid})" for w in self.workers)
        lines.append(f"workers: {len(self.workers)}" + (f": {names}" if names else ""))
        return "\n".join(lines)


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(seconds)


class AsyncClient:
    """Producer and admin API for asyncio apps; ``async with AsyncClient(dsn) as client:``.

    With ``router``, jobs of a registered type take the handler's queue, max_retries
    and timeout unless given. ``clock`` injects a test clock (see
    :func:`pqueue.connect`); ``options`` are broker settings that override the DSN's
    query parameters.
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

    @property
    def broker(self) -> FullBroker:
        """The broker underneath (for what the client does not wrap)."""
        return self._broker

    async def open(self) -> None:
        """Connect now (otherwise the first call connects)."""
        if not self._opened:
            async with self._open_lock:
                if not self._opened:
                    await self._broker.open()
                    self._opened = True

    async def close(self) -> None:
        if self._opened:
            self._opened = False
            await self._broker.close()

    async def __aenter__(self) -> AsyncClient:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _ready(self) -> FullBroker:
        if not self._opened:
            await self.open()
        return self._broker

    # -- producing ------------------------------------------------------------------

    async def enqueue(
        self,
        type: str,
        payload: JSONValue = None,
        *,
        queue: str | None = None,
        delay: float | timedelta | None = None,
        run_at: datetime | None = None,
        max_retries: int | None = None,
        timeout: float | timedelta | None = None,
        unique_for: float | timedelta | None = None,
        unique_key: str | None = None,
        idempotency_key: str | None = None,
        meta: Mapping[str, str] | None = None,
        max_recoveries: int = DEFAULT_MAX_RECOVERIES,
        job_id: str | None = None,
    ) -> EnqueueResult:
        """Enqueue one job of ``type``; returns its id and whether it was created.

        ``queue`` defaults to ``"default"`` and ``max_retries`` to 3 (or the handler's,
        when the client was given the router).

        When ``unique_for`` (with ``unique_key``, or a key derived from type, queue and
        payload) or ``job_id`` matches a job already held, nothing is stored and the
        result is ``EnqueueResult(existing_id, created=False)``.
        """
        task = Task(
            type,
            payload,
            queue=queue,
            delay=delay,
            run_at=run_at,
            max_retries=max_retries,
            timeout=timeout,
            unique_for=unique_for,
            unique_key=unique_key,
            idempotency_key=idempotency_key,
            meta=meta or {},
            max_recoveries=max_recoveries,
            job_id=job_id,
        )
        [result] = await self.enqueue_many([task])
        return result

    async def enqueue_task(self, task: Task) -> EnqueueResult:
        """Enqueue one prepared :class:`Task`."""
        [result] = await self.enqueue_many([task])
        return result

    async def enqueue_many(self, tasks: Iterable[Task]) -> list[EnqueueResult]:
        """Enqueue many jobs in one broker round trip; results keep the input order.

        Every task is validated first, so one bad task raises and nothing is stored.
        """
        return await self._send([self._with_handler_defaults(task).to_spec() for task in tasks])

    async def enqueue_map(
        self,
        type: str,
        payloads: Iterable[JSONValue],
        *,
        queue: str | None = None,
        delay: float | timedelta | None = None,
        run_at: datetime | None = None,
        max_retries: int | None = None,
        timeout: float | timedelta | None = None,
        unique_for: float | timedelta | None = None,
        meta: Mapping[str, str] | None = None,
        max_recoveries: int = DEFAULT_MAX_RECOVERIES,
        job_ids: Sequence[str] | None = None,
    ) -> list[EnqueueResult]:
        """Enqueue one job of ``type`` per payload, all with the same options, in one round trip.

        The bulk path for fan-out: the options are checked once, so a job costs the
        producer about half what a :class:`Task` in :meth:`enqueue_many` does. With
        ``unique_for``, each job's unique key is derived from its payload (equal payloads
        make one job). Every payload is checked first: one bad payload raises and nothing
        is stored. Results keep the payloads' order. ``job_ids`` (one per payload) chooses
        the ids, so that sending the same jobs again adds none (see :func:`pqueue.ids.key_id`).
        """
        task = self._with_handler_defaults(Task(type, queue=queue, max_retries=max_retries, timeout=timeout))
        specs = build_specs(
            type,
            payloads,
            queue=DEFAULT_QUEUE if task.queue is None else task.queue,
            delay=delay,
            run_at=run_at,
            max_retries=DEFAULT_MAX_RETRIES if task.max_retries is None else task.max_retries,
            max_recoveries=max_recoveries,
            timeout=task.timeout,
            unique_for=unique_for,
            meta=meta,
            job_ids=job_ids,
        )
        return await self._send(specs)

    async def _send(self, specs: list[JobSpec]) -> list[EnqueueResult]:
        """Run the enqueue middleware around one broker call."""
        if not specs:
            return []
        specs = self._middleware.before_enqueue(specs)
        broker = await self._ready()
        results = await broker.enqueue(specs)
        self._middleware.after_enqueue(specs, results)
        return results

    def _with_handler_defaults(self, task: Task) -> Task:
        handler = self.router.get(task.type) if self.router is not None else None
        return task if handler is None else handler.defaults(task)

    # -- inspecting and admin -------------------------------------------------------

    async def get_job(self, job_id: str) -> Job:
        """The job with this id; raises :class:`~pqueue.errors.JobNotFound`."""
        return await (await self._ready()).get_job(job_id)

    async def stats(self) -> Stats:
        """Jobs per queue and status, the workers seen recently, and how each queue moves
        (the oldest due job's age, jobs done per second over the last minute)."""
        broker = await self._ready()
        counts, workers, activity = await asyncio.gather(
            broker.counts(), broker.list_workers(), broker.activity()
        )
        rates = {queue: n / activity.window for queue, n in activity.done.items()}
        return Stats(counts, workers, dict(activity.oldest_pending_age), rates)

    async def list_queues(self) -> list[str]:
        return await (await self._ready()).list_queues()

    async def list_workers(self) -> list[WorkerInfo]:
        return await (await self._ready()).list_workers()

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        """One page of jobs in ``status`` (of one queue, one type); pass ``page.next_offset`` for the next."""
        broker = await self._ready()
        return await broker.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset)

    async def dead_jobs(self, *, queue: str | None = None, limit: int = 50, offset: int = 0) -> JobPage:
        """One page of the dead-letter queue (with each job's ``last_error``)."""
        return await self.list_jobs(JobStatus.DEAD, queue=queue, limit=limit, offset=offset)

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        """Give dead jobs (these ids, or all in ``queue``/everywhere) a fresh start; returns how many."""
        return await (await self._ready()).requeue_dead(queue=queue, job_ids=job_ids)

    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | timedelta | None = None,
    ) -> int:
        """Delete dead jobs (these ids, or all in ``queue``/everywhere; with ``older_than``,
        only those dead for at least that long); returns how many."""
        age = older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
        return await (await self._ready()).purge_dead(queue=queue, job_ids=job_ids, older_than=age)

    async def cancel(self, job_id: str) -> bool:
        """Cancel a job that has not started; False if it is running or finished."""
        return await (await self._ready()).cancel(job_id)

    async def health(self) -> str:
        """Check that the broker answers and its storage schema is current; returns what was
        checked. Raises :class:`~pqueue.errors.BrokerUnavailable` or
        :class:`~pqueue.errors.SchemaError` (also from connecting, when not open yet)."""
        return await (await self._ready()).check_health()

    async def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        """Every stored job ``scan`` matches, page by page (bulk reads: export, Spark)."""
        broker = await self._ready()
        async for page in broker.scan_jobs(scan):
            yield page
