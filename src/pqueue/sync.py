"""``Client``: the blocking facade for Django, Flask, scripts and Spark executors.

Not a second implementation: it owns a private event loop on a daemon thread and runs
:class:`~pqueue.client.AsyncClient` there, so every method is the async one, awaited
for you. On Redis and Postgres, enqueues and job lookups skip that hop: a blocking
transport (:mod:`pqueue.transport`) drives the broker's own steps from the caller's
thread, and threads enqueueing at once share round trips (:mod:`pqueue.combine`). Safe to
share between threads, also across :meth:`Client.close`: calls in
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
    Sequence,
)
from datetime import timedelta
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

from pqueue import loops
from pqueue.broker import JobPage, JobScan, WorkerInfo
from pqueue.broker_flows import has_parents
from pqueue.broker_schedules import ScheduleInfo
from pqueue.client import AsyncClient, Stats
from pqueue.clock import Clock
from pqueue.errors import BrokerUnavailable, ClientClosed, ConfigError, SchemaError
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus, JSONValue
from pqueue.middleware import Middleware
from pqueue.options import JobOptions, SharedOptions, task_of
from pqueue.router import Router
from pqueue.steps import run_sync
from pqueue.task import Task
from pqueue.transport import DirectPath, Hop, SyncTransport, sync_transport
from pqueue.workflow import wait_seconds

T = TypeVar("T")
P = ParamSpec("P")

CLOSE_GRACE = 5.0
"""Seconds :meth:`Client.close` lets calls in flight on other threads finish before cancelling them."""
CANCEL_WAIT = 1.0
"""Seconds a cancelled call gets to unwind before the loop stops under it."""

_SAID_IN_ONE_LINE = (SchemaError, BrokerUnavailable, ConfigError)
"""Errors whose message names the cause and the fix (run ``pqueue migrate``, the server
that refused, the bad option). The caller gets them without the loop thread's frames:
30 lines through pqueue's internals buried that one line; the CLI prints it alone."""


def _caller_frames_only(error: BaseException) -> None:
    """Drop the loop thread's frames from ``error`` when its message says it all, before it
    is raised again in the caller's thread (its chain stays as raised: suppressed where the
    driver's error adds nothing, kept where it helps)."""
    if isinstance(error, _SAID_IN_ONE_LINE):
        error.with_traceback(None)


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
        except BaseException as error:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()
            _caller_frames_only(error)
            raise
        transport = sync_transport(self.client.broker)
        self.direct = None if transport is None else DirectPath(transport)
        """The caller-thread path for enqueues and lookups, or None (every call hops)."""

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
        if self.direct is not None:
            self.direct.close(grace)
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

    Every method is :class:`~pqueue.AsyncClient`'s, run on the client's own loop thread
    and waited for; share one client between threads. Every call on a closed client
    raises :class:`~pqueue.errors.ClientClosed`.

    Args:
        dsn: where the jobs live (``memory://``, ``redis://``, ``rediss://``,
            ``postgresql://``; see :func:`pqueue.connect`).
        clock: a test clock; without one, brokers take the time from their server.
        middleware: middleware whose enqueue hooks see every batch this client sends.
        router: the app's :class:`~pqueue.Router`: registered types take their handler's
            defaults, and a type it does not know is refused with
            :class:`~pqueue.errors.UnknownJobType`. Leave it out to enqueue types that
            other services handle.
        **options: the backend's own settings (``prefix``, ``schema``, ``retention``, ...),
            which override the DSN's query parameters.

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
        self._make = lambda: AsyncClient(dsn, clock=clock, middleware=middleware, router=router, **options)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        self._runner: _LoopThread | None = _LoopThread(self._make)  # a bad DSN fails here

    def _loop_thread(self) -> _LoopThread:
        runner = self._runner
        if runner is not None and self._pid == os.getpid():  # the usual case: no lock taken
            return runner  # (close() clears _runner first; a runner closing refuses calls itself)
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
        except _SAID_IN_ONE_LINE as error:
            _caller_frames_only(error)
            raise

    def _on_loop(
        self,
        method: Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``AsyncClient.method(*args, **kwargs)`` run on the loop thread and waited for: the
        body of every method that has no direct path (mypy checks the arguments against
        the async method's own signature, so the two cannot drift)."""
        return self._call(lambda c: method(c, *args, **kwargs))

    def _direct(self, runner: _LoopThread) -> DirectPath | None:
        """The direct path, its client opened; None when calls must hop to the loop thread."""
        path = runner.direct
        if path is None or not path.usable() or threading.current_thread() is runner.thread:
            return None
        if not runner.client.is_open:
            self._call(lambda c: c.open())  # opening, its checks and its errors: the broker's own
        return path

    def _enqueue(self, specs_of: Callable[[AsyncClient], list[JobSpec]]) -> list[EnqueueResult]:
        """Enqueue the specs ``specs_of`` builds, once and in this thread (a bad job's error
        points at the caller), on the direct path or else through the loop thread."""
        runner = self._loop_thread()
        client = runner.client
        specs = specs_of(client)
        path = self._direct(runner)
        if path is None:
            return self._call(lambda c: c._send(specs))

        def send(specs: list[JobSpec]) -> list[EnqueueResult]:
            if not has_parents(specs):  # with parents: the loop's client sends it to enqueue_flow
                try:
                    return path.enqueue(specs)
                except Hop:  # the loop's client sends it (retrying, reporting); hooks already ran
                    pass
            return self._call(lambda c: c._submit_specs(specs))

        return run_sync(client._sending(specs), send)

    def _read(
        self, direct_call: Callable[[SyncTransport], T], hop: Callable[[AsyncClient], Coroutine[Any, Any, T]]
    ) -> T:
        """A read on the direct path when there is one, else (or when it cannot reach) ``hop``."""
        path = self._direct(self._loop_thread())
        if path is not None:
            try:
                return path.run(direct_call, path.transport)
            except Hop:
                pass
        return self._call(hop)

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
        except _SAID_IN_ONE_LINE as error:
            _caller_frames_only(error)
            raise

    def open(self) -> None:
        """Connect now (otherwise the first call connects); reopens a closed client.

        Raises:
            BrokerUnavailable: the server cannot be reached.
            SchemaError: the storage is missing or was written by a newer pqueue.
        """
        with self._lock:
            self._closed = False
        self._on_loop(AsyncClient.open)

    def close(self, *, grace: float | None = None) -> None:
        """Close connections and stop the loop thread; idempotent.

        New calls are refused at once with :class:`~pqueue.errors.ClientClosed`. Every
        later call raises ``ClientClosed`` until :meth:`open` (or ``with``) opens the
        client again.

        Args:
            grace: seconds calls already running on other threads get to finish (default
                :data:`CLOSE_GRACE`); then they are cancelled and raise ``ClientClosed``.

        Raises:
            RuntimeError: called from the client's own loop thread (e.g. a middleware hook).
        """
        with self._lock:
            runner = self._runner
            if runner is not None and threading.current_thread() is runner.thread:
                raise RuntimeError("pqueue.Client closed from its own loop thread; use AsyncClient there")
            self._runner, self._closed = None, True
        if runner is not None and self._pid == os.getpid():
            runner.stop(CLOSE_GRACE if grace is None else grace)

    @property
    def is_open(self) -> bool:
        """Whether the client is open and connected (as :attr:`AsyncClient.is_open`); False
        once closed, and in a forked child until its first call."""
        with self._lock:
            runner = None if self._closed or self._pid != os.getpid() else self._runner
        return runner is not None and runner.client.is_open

    def __enter__(self) -> Client:
        """:meth:`open` the client and return it; if opening fails, close it and raise."""
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
        """:meth:`close` the client, whether or not the block raised."""
        self.close()

    # -- producing ------------------------------------------------------------------

    def enqueue(self, type: str, payload: JSONValue = None, **options: Unpack[JobOptions]) -> EnqueueResult:
        """Enqueue one job of ``type``; returns its id and whether it was created.

        Args:
            type: the job type, the name its handler is registered under.
            payload: the handler's input, a JSON value of at most 1 MiB encoded.
            **options: the job's options, each with its meaning and default at
                :class:`~pqueue.options.JobOptions` (as :meth:`AsyncClient.enqueue`).

        Returns:
            ``EnqueueResult(id, created)``; ``created`` is False when a held unique key or
            an existing ``job_id`` matched and nothing was stored.

        Raises:
            UnknownJobType: the client was given a router that does not know ``type``.
            InvalidJob: an invalid name, payload or option; nothing is stored.
            BrokerUnavailable: the server cannot be reached.
            ClientClosed: the client is closed, or was closed during the call.
            TypeError: an option that :class:`~pqueue.options.JobOptions` does not name.
        """
        return self.enqueue_task(task_of(type, payload, options))

    def enqueue_task(self, task: Task) -> EnqueueResult:
        """Enqueue one prepared :class:`Task` (what ``handler.enqueue`` sends).

        Args:
            task: the job's type, payload and options.

        Returns:
            ``EnqueueResult(id, created)``, as :meth:`enqueue`.

        Raises:
            UnknownJobType, InvalidJob, BrokerUnavailable, ClientClosed: as :meth:`enqueue`.
        """
        [result] = self._enqueue(lambda c: c._specs_of([task]))
        return result

    async def enqueue_task_async(self, task: Task) -> EnqueueResult:
        """:meth:`enqueue_task`, awaitable from any event loop without blocking it.

        Used by ``handler.enqueue_async``; the call itself runs on this client's loop
        thread. Args: ``task``, the job to enqueue. Returns and raises what
        :meth:`enqueue_task` does.
        """
        task.to_spec()
        return await self._call_async(lambda c: c.enqueue_task(task))

    def enqueue_many(self, tasks: Iterable[Task]) -> list[EnqueueResult]:
        """Enqueue many jobs in one broker round trip; results keep the input order.

        Args:
            tasks: the jobs, e.g. ``[handler.task(payload) for payload in rows]``.

        Returns:
            One ``EnqueueResult(id, created)`` per task, in the tasks' order.

        Raises:
            UnknownJobType, InvalidJob: for any one task; nothing of the batch is stored.
            BrokerUnavailable, ClientClosed: as :meth:`enqueue`.
        """
        batch = list(tasks)
        return self._enqueue(lambda c: c._specs_of(batch))

    def enqueue_map(
        self,
        type: str,
        payloads: Iterable[JSONValue],
        *,
        job_ids: Sequence[str] | None = None,
        **options: Unpack[SharedOptions],
    ) -> list[EnqueueResult]:
        """Enqueue one job of ``type`` per payload, all with the same options, in one round trip.

        Args:
            type: the job type of every job.
            payloads: one JSON value per job.
            job_ids: one caller-chosen id per payload, so sending the same jobs again adds
                none.
            **options: the options every job shares (:class:`~pqueue.options.SharedOptions`),
                as :meth:`AsyncClient.enqueue_map`; with ``unique_for``, each job's unique
                key is derived from its payload, so equal payloads make one job.

        Returns:
            One ``EnqueueResult(id, created)`` per payload, in the payloads' order.

        Raises:
            UnknownJobType, InvalidJob: a bad type, option or any one payload; nothing is
                stored.
            BrokerUnavailable, ClientClosed: as :meth:`enqueue`.
            TypeError: an option that :class:`~pqueue.options.SharedOptions` does not name.
        """
        batch = list(payloads)
        ids = None if job_ids is None else list(job_ids)
        return self._enqueue(lambda c: c._map_specs(type, batch, ids, options))

    # -- inspecting and admin -------------------------------------------------------

    def result(self, job_id: str, *, timeout: float | timedelta | None = None) -> JSONValue:
        """Block this thread until the job finishes and return its handler's return value.

        Woken by the broker's push channel, not by polling (see :meth:`AsyncClient.result`).

        Args:
            job_id: the id :meth:`enqueue` returned.
            timeout: seconds (or a timedelta) to wait at most; None waits as long as it takes.

        Returns:
            What the handler returned.

        Raises:
            JobFailed: the job is dead (``.error`` is its last ErrorInfo).
            JobCancelled: the job was cancelled.
            ResultTimeout: the timeout passed first (a ``TimeoutError``).
            JobNotFound, ClientClosed: no such job; the client is closed.
        """
        wait_seconds(timeout)  # refuse a bad timeout in the caller's thread
        return self._on_loop(AsyncClient.result, job_id, timeout=timeout)

    async def result_async(self, job_id: str, *, timeout: float | timedelta | None = None) -> JSONValue:
        """:meth:`result`, awaitable from any event loop without blocking it.

        Args:
            job_id: the id :meth:`enqueue` returned.
            timeout: seconds (or a timedelta) to wait at most; None waits as long as it takes.

        Returns and raises what :meth:`result` does.
        """
        wait_seconds(timeout)
        return await self._call_async(lambda c: c.result(job_id, timeout=timeout))

    def wait_job(self, job_id: str, *, timeout: float | timedelta | None = None) -> Job:
        """Block this thread until the job finishes (completed, dead or cancelled) and
        return it as stored: :meth:`result` without the mapping to a value or an error.

        Args:
            job_id: the id :meth:`enqueue` returned.
            timeout: seconds (or a timedelta) to wait at most; None waits as long as it takes.

        Returns:
            The finished :class:`~pqueue.job.Job`.

        Raises:
            ResultTimeout: ``timeout`` passed first.
            JobNotFound, ClientClosed: no such job; the client is closed.
        """
        wait_seconds(timeout)  # refuse a bad timeout in the caller's thread
        return self._on_loop(AsyncClient.wait_job, job_id, timeout=timeout)

    async def wait_job_async(self, job_id: str, *, timeout: float | timedelta | None = None) -> Job:
        """:meth:`wait_job`, awaitable from any event loop without blocking it.

        Args:
            job_id: the id :meth:`enqueue` returned.
            timeout: seconds (or a timedelta) to wait at most; None waits as long as it takes.

        Returns and raises what :meth:`wait_job` does.
        """
        wait_seconds(timeout)
        return await self._call_async(lambda c: c.wait_job(job_id, timeout=timeout))

    def get_job(self, job_id: str) -> Job:
        """The job with this id, as stored now.

        Args:
            job_id: the id :meth:`enqueue` returned.

        Returns:
            The :class:`~pqueue.job.Job`.

        Raises:
            JobNotFound: no such job (never enqueued, or pruned after its retention).
        """
        return self._read(lambda t: t.get_job(job_id), lambda c: c.get_job(job_id))

    def stats(self) -> Stats:
        """A snapshot of jobs per queue and status, and of the workers seen recently.

        Returns:
            :class:`~pqueue.client.Stats`.
        """
        return self._on_loop(AsyncClient.stats)

    def list_queues(self) -> list[str]:
        """Every queue that has held a job, sorted by name."""
        return self._read(lambda t: t.list_queues(), lambda c: c.list_queues())

    def list_workers(self) -> list[WorkerInfo]:
        """The workers that reported in recently (id, host, pid, queues, last seen)."""
        return self._on_loop(AsyncClient.list_workers)

    def schedules(self) -> list[ScheduleInfo]:
        """The periodic schedules workers run, with their next and last run (see AsyncClient.schedules)."""
        return self._on_loop(AsyncClient.schedules)

    def list_jobs(
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
            A :class:`~pqueue.broker.JobPage`: ``jobs`` and ``next_offset`` (None on the last page).

        Raises:
            InvalidRequest: an unknown status, a limit below 1 or a negative offset.
        """
        return self._read(
            lambda t: t.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset),
            lambda c: c.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset),
        )

    def dead_jobs(self, *, queue: str | None = None, limit: int = 50, offset: int = 0) -> JobPage:
        """One page of the dead-letter queue; :meth:`list_jobs` for status ``dead``.

        Args:
            queue: only this queue's dead jobs; default: every queue's.
            limit: the most jobs in the page (at least 1).
            offset: how many jobs to skip; pass the previous page's ``next_offset``.

        Returns:
            A :class:`~pqueue.broker.JobPage` whose jobs carry ``last_error``.

        Raises:
            InvalidRequest: a limit below 1 or a negative offset.
        """
        return self._read(
            lambda t: t.list_jobs(JobStatus.DEAD, queue=queue, type=None, limit=limit, offset=offset),
            lambda c: c.dead_jobs(queue=queue, limit=limit, offset=offset),
        )

    def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        """Move dead jobs back to pending with a fresh retry budget.

        Args:
            queue: requeue this queue's dead jobs (with ``job_ids``: only those in it).
            job_ids: requeue these jobs; ids that are not dead are skipped. With neither
                argument, every dead job is requeued.

        Returns:
            How many jobs moved.
        """
        return self._on_loop(AsyncClient.requeue_dead, queue=queue, job_ids=job_ids)

    def purge_dead(
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
        return self._on_loop(AsyncClient.purge_dead, queue=queue, job_ids=job_ids, older_than=older_than)

    def cancel(self, job_id: str) -> bool:
        """Cancel a job that has not finished: waiting (pending, scheduled or waiting to
        retry) or running (its worker stops the handler; see :meth:`AsyncClient.cancel`).

        Args:
            job_id: the id :meth:`enqueue` returned.

        Returns:
            True if the job is now cancelled; False if it had finished already.

        Raises:
            JobNotFound: no such job.
        """
        return self._on_loop(AsyncClient.cancel, job_id)

    def pause(self, queue: str) -> bool:
        """Pause a queue: workers claim nothing more from it until :meth:`resume`;
        enqueues go on and running jobs finish (see :meth:`AsyncClient.pause`).

        Args:
            queue: the queue's name.

        Returns:
            True if the queue was running, False if it was paused already.

        Raises:
            InvalidRequest: a name no queue could have.
        """
        return self._on_loop(AsyncClient.pause, queue)

    def resume(self, queue: str) -> bool:
        """Let workers claim from a paused queue again.

        Args:
            queue: the queue's name.

        Returns:
            True if the queue was paused, False if it was not.

        Raises:
            InvalidRequest: a name no queue could have.
        """
        return self._on_loop(AsyncClient.resume, queue)

    def paused_queues(self) -> list[str]:
        """The paused queues, sorted by name."""
        return self._on_loop(AsyncClient.paused_queues)

    def health(self) -> str:
        """Check that the broker answers and its storage schema is current.

        Returns:
            What was checked, e.g. ``"postgres schema 'pqueue' at version 2"``.

        Raises:
            BrokerUnavailable: the server does not answer.
            SchemaError: the storage schema is missing or not the one this pqueue writes.
        """
        return self._on_loop(AsyncClient.health)

    def scan_jobs(self, scan: JobScan) -> Iterator[Sequence[Job]]:
        """Every stored job ``scan`` matches, page by page; see :meth:`AsyncClient.scan_jobs`.

        Each page is one call on the client's loop; the scan's cursor (a Postgres
        transaction) is closed when the iteration ends or the iterator is dropped.

        Args:
            scan: a :class:`~pqueue.broker.JobScan` (statuses, queue, since, part of
                parts, page size).

        Returns:
            An iterator of pages (sequences of :class:`~pqueue.job.Job`).
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
