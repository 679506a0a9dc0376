"""``Client``: the blocking facade for Django, Flask, scripts and Spark executors.

Not a second implementation: it owns a private event loop on a daemon thread and runs
:class:`~pqueue.client.AsyncClient` there, so every method is the async one, awaited
for you. Safe to share between threads, also across :meth:`Client.close`: calls in
flight finish or raise :class:`~pqueue.errors.ClientClosed`, never hang. After
``fork()`` (gunicorn, Spark) the child builds its own loop and connections on first use.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

from pqueue import loops
from pqueue.broker import JobPage, JobScan, WorkerInfo
from pqueue.client import AsyncClient, Stats
from pqueue.clock import Clock
from pqueue.errors import ClientClosed
from pqueue.job import EnqueueResult, Job, JobStatus, JSONValue
from pqueue.middleware import Middleware
from pqueue.router import Router
from pqueue.spec import DEFAULT_MAX_RECOVERIES
from pqueue.task import Task

T = TypeVar("T")

CLOSE_GRACE = 5.0
"""Seconds :meth:`Client.close` lets calls in flight on other threads finish before cancelling them."""
CANCEL_WAIT = 1.0
"""Seconds a cancelled call gets to unwind before the loop stops under it."""


class _LoopThread:
    """An event loop running forever on a daemon thread, with one AsyncClient on it.

    Every call runs as a tracked task, so :meth:`stop` can refuse new calls, let the
    running ones finish for a bounded time and cancel the rest: no caller is left
    waiting on a loop that no longer runs.
    """

    def __init__(self, make_client: Callable[[], AsyncClient]) -> None:
        self.loop = loops.new_event_loop()  # uvloop when installed, as the worker's
        self.closing = False
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()  # touched on the loop thread only
        self._futures: set[concurrent.futures.Future[Any]] = set()  # the callers' side, under _lock
        self.thread = threading.Thread(target=self._run, name="pqueue-client", daemon=True)
        self.thread.start()
        try:
            self.client = self._schedule(self._make(make_client)).result()
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()
            raise

    @staticmethod
    async def _make(make_client: Callable[[], AsyncClient]) -> AsyncClient:
        return make_client()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def _schedule(self, coro: Awaitable[T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop; raises :class:`ClientClosed` once :meth:`stop` began."""
        with self._lock:  # stop() flips `closing` under this lock: nothing slips in after it
            if self.closing:
                coro.close()
                raise ClientClosed("pqueue.Client is closed")
            future = self._schedule(self._tracked(coro))
            self._futures.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._futures.discard(future)

    async def _tracked(self, coro: Coroutine[Any, Any, T]) -> T:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            return await coro
        finally:
            self._tasks.discard(task)

    async def _shutdown(self, grace: float) -> None:
        # Every call submitted before `closing` was set has started by now: its task was
        # scheduled (call_soon_threadsafe is FIFO) before this one.
        running = set(self._tasks)
        if running:
            _, late = await asyncio.wait(running, timeout=grace)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=CANCEL_WAIT)
        await self.client.close()

    def stop(self, grace: float) -> None:
        """Refuse new calls, give running ones ``grace`` seconds, cancel the rest, close."""
        with self._lock:
            self.closing = True
        try:
            self._schedule(self._shutdown(grace)).result(timeout=2 * grace + 10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            with self._lock:
                stranded = list(self._futures)
            for future in stranded:  # a task that ignored its cancellation: free its caller anyway
                future.cancel()
            if not self.thread.is_alive():
                self.loop.close()


class Client:
    """Blocking producer and admin API; ``with Client(dsn) as client: client.enqueue(...)``.

    Takes the same arguments as :class:`~pqueue.AsyncClient`.
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
        self._make = lambda: AsyncClient(dsn, clock=clock, middleware=middleware, router=router, **options)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        self._runner: _LoopThread | None = _LoopThread(self._make)  # a bad DSN fails here

    def _loop_thread(self) -> _LoopThread:
        with self._lock:
            if self._closed:
                raise ClientClosed("pqueue.Client is closed; call open() to use it again")
            if self._runner is None or self._pid != os.getpid():
                self._runner, self._pid = _LoopThread(self._make), os.getpid()  # fresh after fork
            return self._runner

    def _call(self, fn: Callable[[AsyncClient], Coroutine[Any, Any, T]]) -> T:
        runner = self._loop_thread()
        if threading.current_thread() is runner.thread:
            raise RuntimeError("pqueue.Client called from its own loop thread; use AsyncClient there")
        future = runner.submit(fn(runner.client))
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            if runner.closing:
                raise ClientClosed("pqueue.Client was closed while this call was in flight") from None
            raise

    async def _call_async(self, fn: Callable[[AsyncClient], Coroutine[Any, Any, T]]) -> T:
        runner = self._loop_thread()
        future = runner.submit(fn(runner.client))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if runner.closing and future.cancelled() and not (task is not None and task.cancelling()):
                raise ClientClosed("pqueue.Client was closed while this call was in flight") from None
            raise

    def open(self) -> None:
        """Connect now (otherwise the first call connects); reopens a closed client."""
        with self._lock:
            self._closed = False
        self._call(lambda c: c.open())

    def close(self, *, grace: float | None = None) -> None:
        """Close connections and stop the loop thread; idempotent.

        New calls are refused at once with :class:`~pqueue.errors.ClientClosed`; calls
        already running on other threads get ``grace`` seconds (default
        :data:`CLOSE_GRACE`) to finish, then are
        cancelled and raise ``ClientClosed``. Every later call raises ``ClientClosed``
        until :meth:`open` (or ``with``) opens the client again.
        """
        with self._lock:
            runner = self._runner
            if runner is not None and threading.current_thread() is runner.thread:
                raise RuntimeError("pqueue.Client closed from its own loop thread; use AsyncClient there")
            self._runner, self._closed = None, True
        if runner is not None and self._pid == os.getpid():
            runner.stop(CLOSE_GRACE if grace is None else grace)

    def __enter__(self) -> Client:
        try:
            self.open()
        except BaseException:
            with contextlib.suppress(Exception):  # the open error is the one to see
                self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- producing ------------------------------------------------------------------

    def enqueue(
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
        """Enqueue one job; see :meth:`AsyncClient.enqueue`."""
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
        return self.enqueue_task(task)

    def enqueue_task(self, task: Task) -> EnqueueResult:
        task.to_spec()  # validate in the caller's thread so the traceback points at the caller
        return self._call(lambda c: c.enqueue_task(task))

    async def enqueue_task_async(self, task: Task) -> EnqueueResult:
        """Enqueue from any event loop without blocking it (used by ``handler.enqueue_async``)."""
        task.to_spec()
        return await self._call_async(lambda c: c.enqueue_task(task))

    def enqueue_many(self, tasks: Iterable[Task]) -> list[EnqueueResult]:
        """Enqueue many jobs in one broker round trip; see :meth:`AsyncClient.enqueue_many`."""
        batch = list(tasks)
        return self._call(lambda c: c.enqueue_many(batch))

    def enqueue_map(
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
        """One job of ``type`` per payload, same options; see :meth:`AsyncClient.enqueue_map`."""
        batch = list(payloads)
        options: dict[str, Any] = {
            "queue": queue,
            "delay": delay,
            "run_at": run_at,
            "max_retries": max_retries,
            "timeout": timeout,
            "unique_for": unique_for,
            "meta": meta,
            "max_recoveries": max_recoveries,
            "job_ids": None if job_ids is None else list(job_ids),
        }
        return self._call(lambda c: c.enqueue_map(type, batch, **options))

    # -- inspecting and admin -------------------------------------------------------

    def get_job(self, job_id: str) -> Job:
        return self._call(lambda c: c.get_job(job_id))

    def stats(self) -> Stats:
        return self._call(lambda c: c.stats())

    def list_queues(self) -> list[str]:
        return self._call(lambda c: c.list_queues())

    def list_workers(self) -> list[WorkerInfo]:
        return self._call(lambda c: c.list_workers())

    def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        return self._call(lambda c: c.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset))

    def dead_jobs(self, *, queue: str | None = None, limit: int = 50, offset: int = 0) -> JobPage:
        return self._call(lambda c: c.dead_jobs(queue=queue, limit=limit, offset=offset))

    def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        return self._call(lambda c: c.requeue_dead(queue=queue, job_ids=job_ids))

    def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | timedelta | None = None,
    ) -> int:
        return self._call(lambda c: c.purge_dead(queue=queue, job_ids=job_ids, older_than=older_than))

    def cancel(self, job_id: str) -> bool:
        return self._call(lambda c: c.cancel(job_id))

    def health(self) -> str:
        """Check the broker answers and its schema is current; see :meth:`AsyncClient.health`."""
        return self._call(lambda c: c.health())

    def scan_jobs(self, scan: JobScan) -> Iterator[Sequence[Job]]:
        """Every stored job ``scan`` matches, page by page; see :meth:`AsyncClient.scan_jobs`.

        Each page is one call on the client's loop; the scan's cursor (a Postgres
        transaction) is closed when the iteration ends or the iterator is dropped.
        """
        pages = self._loop_thread().client.scan_jobs(scan)  # runs only when iterated, on the loop
        try:
            while (page := self._call(lambda c: _next_page(pages))) is not None:
                yield page
        finally:
            with contextlib.suppress(Exception):  # closing a finished or broken scan
                self._call(lambda c: _close_pages(pages))


async def _next_page(pages: AsyncIterator[Sequence[Job]]) -> Sequence[Job] | None:
    return await anext(pages, None)


async def _close_pages(pages: AsyncIterator[Sequence[Job]]) -> None:
    close = getattr(pages, "aclose", None)
    if close is not None:
        await close()
