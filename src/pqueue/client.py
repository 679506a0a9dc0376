"""``AsyncClient``: enqueue jobs and inspect the queue from asyncio code.

A thin layer over the broker: it validates (``pqueue.spec``), runs the enqueue
middleware, and makes one broker call per method. Redis and Postgres brokers bind to
the event loop they were opened on, so use one ``AsyncClient`` per loop; from threads
or sync code use :class:`pqueue.Client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from pqueue.broker import FullBroker, JobPage, QueueCounts, WorkerInfo
from pqueue.brokers import connect
from pqueue.clock import Clock
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

    def total(self, status: JobStatus, queue: str | None = None) -> int:
        """Jobs in ``status`` (in one queue, or in all)."""
        if queue is not None:
            return self.queues.get(queue, {}).get(status, 0)
        return sum(per.get(status, 0) for per in self.queues.values())

    @property
    def totals(self) -> dict[JobStatus, int]:
        return {status: self.total(status) for status in JobStatus}


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
    ) -> list[EnqueueResult]:
        """Enqueue one job of ``type`` per payload, all with the same options, in one round trip.

        The bulk path for fan-out: the options are checked once, so a job costs the
        producer about half what a :class:`Task` in :meth:`enqueue_many` does. With
        ``unique_for``, each job's unique key is derived from its payload (equal payloads
        make one job). Every payload is checked first: one bad payload raises and nothing
        is stored. Results keep the payloads' order.
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
        """``task`` with its handler's defaults; with a router, an unknown type is refused here.

        Every enqueue path passes through this method (the sync :class:`~pqueue.Client`
        runs these same methods), so :meth:`Router.handler_for` is the one producer-side
        type check.
        """
        return task if self.router is None else self.router.handler_for(task.type).defaults(task)

    # -- inspecting and admin -------------------------------------------------------

    async def get_job(self, job_id: str) -> Job:
        """The job with this id; raises :class:`~pqueue.errors.JobNotFound`."""
        return await (await self._ready()).get_job(job_id)

    async def stats(self) -> Stats:
        """Jobs per queue and status, and the workers seen recently."""
        broker = await self._ready()
        return Stats(await broker.counts(), await broker.list_workers())

    async def list_queues(self) -> list[str]:
        return await (await self._ready()).list_queues()

    async def list_workers(self) -> list[WorkerInfo]:
        return await (await self._ready()).list_workers()

    async def list_jobs(
        self, status: JobStatus, *, queue: str | None = None, limit: int = 50, offset: int = 0
    ) -> JobPage:
        """One page of jobs in ``status``; pass ``page.next_offset`` for the next."""
        return await (await self._ready()).list_jobs(status, queue=queue, limit=limit, offset=offset)

    async def dead_jobs(self, *, queue: str | None = None, limit: int = 50, offset: int = 0) -> JobPage:
        """One page of the dead-letter queue (with each job's ``last_error``)."""
        return await self.list_jobs(JobStatus.DEAD, queue=queue, limit=limit, offset=offset)

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        """Give dead jobs (these ids, or all in ``queue``/everywhere) a fresh start; returns how many."""
        return await (await self._ready()).requeue_dead(queue=queue, job_ids=job_ids)

    async def purge_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        """Delete dead jobs (these ids, or all in ``queue``/everywhere); returns how many."""
        return await (await self._ready()).purge_dead(queue=queue, job_ids=job_ids)

    async def cancel(self, job_id: str) -> bool:
        """Cancel a job that has not started; False if it is running or finished."""
        return await (await self._ready()).cancel(job_id)
