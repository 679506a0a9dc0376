"""``Worker``: claim jobs in batches (free slots plus a prefetch), run them, drain cleanly on stop.

One claim loop per worker. It claims as many jobs as it has free slots (``concurrency``)
plus a prefetch bounded by measured job time (:mod:`.pacing`): prefetched jobs wait in a
local buffer, start the moment a slot frees, and are handed back unrun at a drain. Each
started job runs in its own asyncio task (async handlers on the loop, sync ones on a
bounded set of threads). When idle it parks in ``broker.wait_for_jobs`` (woken by an
enqueue, by the side thread after promoting or recovering jobs, or by a stop) with a
bounded poll as a fallback; a broker that hands off (Redis) may lease it jobs there,
which its next claim returns without a round trip. Heartbeats and housekeeping run on a
side thread (:mod:`.sidecar`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from pqueue import cancellation, loops
from pqueue.broker import Capability, Claimer, FullBroker, RecoveryReport, WorkerInfo
from pqueue.brokers import connect, redact
from pqueue.clock import Clock
from pqueue.errors import BrokerError, BrokerUnavailable, BrokerUnusable
from pqueue.job import Lease
from pqueue.logs import JobLogger
from pqueue.middleware import Middleware, MiddlewareChain, Outcome
from pqueue.priority import QueuesArg
from pqueue.router import Router
from pqueue.worker.cancels import CancelListener, Cancels
from pqueue.worker.config import UnknownTypePolicy, WorkerSettings
from pqueue.worker.executor import Executor
from pqueue.worker.fatal import EXIT_BROKER_UNUSABLE, Fatal
from pqueue.worker.leases import LeaseBook
from pqueue.worker.pacing import Pacer
from pqueue.worker.settle import OUTAGE_RETRY, Settler, WorkerCounters
from pqueue.worker.shutdown import ShutdownSignals
from pqueue.worker.sidecar import Sidecar
from pqueue.worker.startup import open_broker
from pqueue.worker.threads import HandlerThreads

log = logging.getLogger("pqueue.worker")

_BROKER_TROUBLE = (ConnectionError, OSError, TimeoutError, BrokerError)
ABORT_GRACE = 5.0
"""Seconds a drain past its timeout waits for cancelled handlers before closing."""


class Worker:
    """Runs the jobs of ``router`` from ``dsn``: ``Worker(dsn, router).run()``.

    ``queues`` is ``{"critical": 6, "default": 3, "low": 1}`` (weights), a list
    (equal weights; with ``strict=True`` the list order is the priority) or the CLI
    form ``"critical:6,default:3"``. ``lease`` is how long a claimed job stays ours
    without a heartbeat; ``shutdown_timeout`` how long a drain waits for running jobs.
    ``clock`` injects a test clock; further keywords tune the worker's intervals
    (see :class:`~pqueue.worker.config.WorkerSettings`).
    """

    def __init__(
        self,
        dsn: str,
        router: Router,
        *,
        concurrency: int = 10,
        queues: QueuesArg | None = None,
        strict: bool = False,
        lease: float = 30.0,
        shutdown_timeout: float = 30.0,
        unknown_type: UnknownTypePolicy | str = UnknownTypePolicy.RETRY,
        middleware: Iterable[Middleware] = (),
        log_jobs: bool = True,
        clock: Clock | None = None,
        broker_options: dict[str, Any] | None = None,
        **tuning: Any,
    ) -> None:
        if not isinstance(router, Router):
            raise TypeError(f"router must be a pqueue.Router, got {router!r}")
        self.dsn = dsn
        self.router = router
        self.settings = WorkerSettings.build(
            concurrency=concurrency,
            queues=queues,
            strict=strict,
            lease=lease,
            shutdown_timeout=shutdown_timeout,
            unknown_type=unknown_type,
            **tuning,
        )
        self.counters = WorkerCounters()
        self._clock = clock
        self._options = dict(broker_options or {})
        self._middleware = MiddlewareChain([JobLogger(), *middleware] if log_jobs else middleware)
        self._book = LeaseBook()
        self._threads = HandlerThreads()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._stop_early = False
        self._stopping = False
        self._busy = 0
        """Jobs held by this loop: running, or waiting in ``_waiting`` for a slot."""
        self._waiting: deque[Lease] = deque()
        self._pacer = self._new_pacer()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Event()
        self._all_done = asyncio.Event()
        self._wake = asyncio.Event()
        self._executor: Executor | None = None
        self._settler: Settler | None = None
        self._cancels: Cancels | None = None
        self._running = False
        self._fatal = Fatal(self.stop)
        router.use_default(dsn)

    @property
    def id(self) -> str:
        return self.settings.worker_id

    @property
    def is_running(self) -> bool:
        """True from the moment the worker claims jobs until its drain begins."""
        return self._running

    @property
    def held(self) -> int:
        """Leases held right now (running, or finished and waiting for their ack)."""
        return len(self._book)

    # -- lifecycle --------------------------------------------------------------------

    @property
    def failure(self) -> BrokerUnusable | None:
        """The broker error retrying cannot heal that stopped this worker, if one did."""
        return self._fatal.error

    def run(self, *, loop: str | None = None) -> int:
        """Serve until SIGTERM/SIGINT, drain, and return the exit code: 0, or
        :data:`~pqueue.errors.EXIT_BROKER_UNUSABLE` (3) when a broker error retrying
        cannot heal stopped it (logged once, as an ERROR).

        Call it from the main thread (signal handlers live there); elsewhere use :meth:`serve`.
        ``loop`` is ``auto`` (uvloop when installed), ``asyncio`` or ``uvloop``; by default
        ``PQUEUE_LOOP``, else ``auto`` (:mod:`pqueue.loops`). The worker owns the process
        here: once started it freezes what start-up allocated out of the garbage
        collector's sight (ADR 0126).
        """

        async def main() -> int:
            with ShutdownSignals(self.stop):
                try:
                    await self.serve(freeze=True)
                except BrokerUnusable as exc:
                    if exc is not self.failure:
                        raise  # met before serving (opening the broker): the CLI reports it
                    return EXIT_BROKER_UNUSABLE
            return 0

        return loops.run(main(), loop=loop)

    def stop(self) -> None:
        """Ask the worker to drain and return from :meth:`serve`; safe from any thread or signal handler."""
        loop = self._loop
        if loop is None:
            self._stop_early = True
            return
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing to stop
            loop.call_soon_threadsafe(self._request_stop)

    def _request_stop(self) -> None:
        if self._stop_event is not None:
            self._stop_event.set()

    async def serve(self, *, freeze: bool = False) -> None:
        """Run in the current event loop until :meth:`stop` is called, then drain.

        A broker error retrying cannot heal (:class:`~pqueue.errors.BrokerUnusable`: a
        damaged SQLite file, a schema dropped under it) stops it the same way, logged once;
        it is raised after the drain (:attr:`failure`).
        ``freeze=True`` (what :meth:`run` passes) calls :func:`gc.freeze` once connected:
        the process's start-up objects then stay out of every later collection.
        """
        loop = asyncio.get_running_loop()
        self._loop, self._stop_event = loop, asyncio.Event()
        self._slots, self._all_done, self._wake = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._stopping, self._busy = False, 0
        self._waiting.clear()
        self._pacer = self._new_pacer()
        self._all_done.set()
        self._threads = HandlerThreads()
        self._fatal = Fatal(self.stop)
        if self._stop_early:
            self._stop_early = False
            self._stop_event.set()
        opened = await open_broker(
            lambda: connect(self.dsn, clock=self._clock, **self._options),
            wait=self.settings.wait_for_broker,
            stop=self._stop_event,
        )
        if opened is None:  # stopped while waiting for the broker: nothing ran, nothing to drain
            self._loop = None
            return
        broker = opened
        sidecar: Sidecar | None = None
        hearing: asyncio.Task[None] | None = None
        stop_hearing = asyncio.Event()
        try:
            settler = self._assemble(broker)
            sidecar = Sidecar(
                self.dsn,
                self.settings,
                self._book,
                self._info(),
                clock=self._clock,
                broker_options=self._options,
                on_work=self._wake_threadsafe,
                on_recovered=self._recovered_threadsafe,
                schedules=self.router.schedules,
                on_cancel=self._cancel_threadsafe,
                fatal=self._fatal.seen,
            )
            await asyncio.to_thread(sidecar.start)
            # Cancels are heard on the claim loop's broker, whose notification hub listens
            # already: no connection of their own (ADR 0134). Subscribed before the first
            # claim, so no cancel of this worker's jobs is missed.
            listener = CancelListener(broker, self._cancel_heard, stop_hearing, fatal=self._fatal.seen)
            await listener.subscribe()
            hearing = asyncio.create_task(listener.run(), name="pqueue-cancels")
            settler.start()
            self._log_start()
            if freeze:
                # Modules, the app and the drivers live as long as the process; without this
                # each full collection walked them all (~30 ms, twice per 50,000 jobs).
                gc.freeze()
            self._running = True
            claimer = asyncio.create_task(self._claim_loop(broker), name="pqueue-claim")
            stopper = asyncio.create_task(self._stop_event.wait())
            await asyncio.wait({claimer, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            await self._drain(claimer)
            if self._fatal.error is not None:
                raise self._fatal.error
        finally:
            self._threads.shutdown()
            if hearing is not None:  # after the drain: running jobs can be cancelled until the end
                stop_hearing.set()
                await asyncio.wait({hearing})
            if sidecar is not None:
                await asyncio.to_thread(sidecar.stop)
            await broker.close()
            self._loop, self._running = None, False
            log.info("worker %s stopped: %s", self.id, self.counters.as_dict())

    def _assemble(self, broker: FullBroker) -> Settler:
        """Build the settler and the executor on this serve's broker."""
        settler = self._settler = Settler(
            broker,
            self._book,
            self._middleware,
            self.counters,
            on_acked=self._slots.set,
            ack_interval=self.settings.ack_interval,
            busy_batch=self.settings.concurrency,
            patience=self.settings.lease,
            more_coming=self._more_coming,
            fatal=self._fatal.seen,
        )
        self._executor = Executor(
            broker=broker,
            router=self.router,
            settings=self.settings,
            book=self._book,
            threads=self._threads,
            settler=settler,
            middleware=self._middleware,
            counters=self.counters,
        )
        self._cancels = Cancels(
            book=self._book,
            tasks=self._tasks,
            in_handler=self._executor.in_handler,
            threads=self._threads,
            grace=self.settings.cancel_grace,
        )
        return settler

    def _more_coming(self) -> bool:
        """Another running job is expected to finish within ``ack_interval``, so its ack
        could share the next call: jobs run, and they finish that often (by the pacer's
        average). Slow jobs, whose acks would rarely meet, are acked at once."""
        running = len(self._tasks)
        return running > 0 and self._pacer.average <= running * self.settings.ack_interval

    def _new_pacer(self) -> Pacer:
        s = self.settings
        return Pacer(s.concurrency, limit=s.prefetch, window=s.prefetch_window)

    def _info(self) -> WorkerInfo:
        from pqueue import __version__

        return WorkerInfo(
            id=self.id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=self.settings.selection.names,
            concurrency=self.settings.concurrency,
            started_at=time.time(),
            meta={"pqueue": __version__},
        )

    def _log_start(self) -> None:
        s = self.settings
        weights = ",".join(f"{name}:{weight}" for name, weight in s.selection.weights)
        log.info(
            "worker %s started on %s (%s loop): queues %s%s, concurrency %d, lease %gs, %d job type(s)",
            self.id,
            redact(self.dsn),
            loops.running_loop_name(),
            weights,
            " (strict)" if s.selection.strict else "",
            s.concurrency,
            s.lease,
            len(self.router),
        )
        missing = sorted(set(self.router.queues) - set(s.selection.names))
        if missing:
            log.warning("this worker does not consume queue(s) %s that its handlers enqueue to", missing)

    def _recovered_threadsafe(self, report: RecoveryReport) -> None:
        """Report the side thread's recoveries to the middleware, on this worker's loop."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._middleware.after_recover, report)

    def responsive(self, timeout: float = 1.0) -> bool:
        """True when the worker is serving (or draining) and its event loop runs a callback
        within ``timeout`` seconds: a liveness probe, to call from another thread (a handler
        that blocks the loop makes it False, and so does a broker error retrying cannot heal)."""
        loop = self._loop
        if loop is None or self._fatal.error is not None:
            return False
        answered = threading.Event()
        try:
            loop.call_soon_threadsafe(answered.set)
        except RuntimeError:  # the loop closed meanwhile
            return False
        return answered.wait(timeout)

    def _cancel_heard(self, job_ids: list[str]) -> None:
        """Stop the handlers of jobs cancelled while running (heard on this loop)."""
        if self._cancels is not None:
            self._cancels.cancel(job_ids)

    def _cancel_threadsafe(self, job_ids: list[str]) -> None:
        """Stop the handlers of jobs cancelled while running (found by the side thread's heartbeat)."""
        loop, cancels = self._loop, self._cancels
        if loop is not None and cancels is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(cancels.cancel, job_ids)

    def _wake_threadsafe(self) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake.set)

    # -- the claim loop ---------------------------------------------------------------

    async def _claim_loop(self, broker: FullBroker) -> None:
        s = self.settings
        names = list(s.selection.names)
        ack_cap = 4 * s.concurrency + s.prefetch  # finished jobs awaiting their ack before claims pause
        wakeup = Capability.WAKEUP in broker.capabilities
        assert self._settler is not None
        failures = 0
        while not self._stopping:
            want = self._claim_size()
            if want <= 0 or self._settler.backlog >= ack_cap:
                self._slots.clear()
                await self._slots.wait()
                await asyncio.sleep(0)  # let other finishing jobs free their slots: claim in bulk
                continue
            if self._settler.unsent:
                await asyncio.sleep(0)  # acks of finished jobs go out before the next claim
            try:
                leases = await broker.claim(
                    s.selection.order(), worker_id=self.id, limit=want, lease_for=s.lease
                )
                failures = 0
            except Exception as exc:  # no claim failure may end the worker, but a fatal one
                if self._fatal.seen(exc, "claim"):
                    return
                failures += 1
                delay = min(5.0, 0.1 * 2**failures)
                if isinstance(exc, BrokerUnavailable):
                    # The outage is logged once (pqueue.brokers.health); try again soon, so
                    # claims resume within OUTAGE_RETRY of the server being back.
                    delay = OUTAGE_RETRY
                    log.debug("claim failed (%s); retrying in %.2fs", exc, delay)
                elif isinstance(exc, _BROKER_TROUBLE):
                    log.warning("claim failed (%s: %s); retrying in %.1fs", type(exc).__name__, exc, delay)
                else:  # a bug or something unforeseen in storage: say so loudly, keep going
                    log.exception("claim failed unexpectedly; retrying in %.1fs", delay)
                await self._pause(delay)
                continue
            if leases:
                await self._start(leases)
                await asyncio.sleep(0)  # let the new jobs start before the next claim's work
                if len(leases) < want and wakeup:
                    # Nothing more was due: park now rather than after an empty claim. The
                    # broker checks for due jobs once parked, so none can slip past.
                    await self._idle(broker, names)
            else:
                await self._idle(broker, names)

    def _claim_size(self) -> int:
        """How many jobs to claim now; 0 means wait until slots free up.

        While prefetched jobs still wait for slots, the next claim waits until it can take
        at least half the prefetch, so claims come in bulk without the buffer running dry.
        """
        extra = self._pacer.extra
        room = self.settings.concurrency + extra - self._busy
        if self._waiting and room < max(1, extra // 2):
            return 0
        return room

    async def _start(self, leases: list[Lease]) -> None:
        assert self._settler is not None
        if self._stopping:  # the stop came while the claim was in flight
            await self._settler.release(leases, reason="worker stopping")
            return
        self._book.add(leases)
        self._busy += len(leases)
        self._all_done.clear()
        self.counters.claimed += len(leases)
        self._waiting.extend(leases)
        self._fill_slots()

    def _fill_slots(self) -> None:
        """Start waiting jobs while slots are free (each in a task of its own)."""
        waiting, tasks = self._waiting, self._tasks
        free = self.settings.concurrency - len(tasks)
        if free <= 0 or not waiting:
            return
        create_task = asyncio.get_running_loop().create_task
        for _ in range(min(free, len(waiting))):
            lease = waiting.popleft()
            tasks[lease.job.id] = create_task(self._job(lease))

    async def _job(self, lease: Lease) -> None:
        assert self._executor is not None
        started = time.perf_counter()
        try:
            await self._executor.run(lease)
        except asyncio.CancelledError:
            raise  # the drain cancelled it after handing the job back
        except BaseException as exc:
            if not self._fatal.seen(exc, f"job {lease.job.id}"):
                log.exception(
                    "internal error running job %s; its lease will expire and it will run again", lease.job.id
                )
            self._book.remove([lease])
        finally:
            self._pacer.observe(time.perf_counter() - started)
            self._tasks.pop(lease.job.id, None)
            if cancellation.any_requested():
                cancellation.clear(lease.job.id)
            self._busy -= 1
            if not self._stopping:
                self._fill_slots()
            if self._claim_size() > 0:
                self._slots.set()
            if not self._tasks and not self._waiting and self._settler is not None:
                self._settler.nudge()  # the last running job ended: its ack need not wait
            if self._busy == 0:
                self._all_done.set()

    async def _idle(self, broker: FullBroker, names: list[str]) -> None:
        """Park until work may be claimable, a stop, or the poll interval passes."""
        if self._wake.is_set():
            self._wake.clear()
            return
        want = self._claim_size()  # a broker that hands off may lease this many meanwhile
        claimer = Claimer(self.id, want, self.settings.lease) if want > 0 else None
        waiting = broker.wait_for_jobs(names, self.settings.poll_interval, claimer=claimer)
        waiter = asyncio.create_task(waiting)
        woken = asyncio.create_task(self._wake.wait())
        done, pending = await asyncio.wait({waiter, woken}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if waiter in pending:  # the broker's wait cleans up before we go on; `woken` needs no wait
            await asyncio.gather(waiter, return_exceptions=True)
        self._wake.clear()
        if waiter in done and waiter.exception() is not None:
            exc = waiter.exception()
            if exc is not None and self._fatal.seen(exc, "waiting for jobs"):
                return
            level = logging.DEBUG if isinstance(exc, BrokerUnavailable) else logging.WARNING
            log.log(level, "waiting for jobs failed (%s: %s)", type(exc).__name__, exc)
            await self._pause(min(1.0, self.settings.poll_interval))

    async def _pause(self, seconds: float) -> None:
        """Sleep, but return early on stop."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)
        self._wake.clear()

    # -- graceful drain ---------------------------------------------------------------

    async def _drain(self, claimer: asyncio.Task[None]) -> None:
        """Stop claiming, let running jobs finish until the timeout, hand back the rest."""
        assert self._executor is not None and self._settler is not None
        self._stopping, self._running = True, False
        self._wake.set()
        self._slots.set()
        await asyncio.wait({claimer})
        await self._release_waiting()
        if self._busy:
            log.info(
                "draining: waiting up to %gs for %d running job(s)",
                self.settings.shutdown_timeout,
                self._busy,
            )
            try:
                await asyncio.wait_for(self._all_done.wait(), self.settings.shutdown_timeout)
            except TimeoutError:
                await self._abort_running()
        await self._settler.close()
        if not claimer.cancelled() and claimer.exception() is not None:
            raise claimer.exception()  # type: ignore[misc]  # a bug in the claim loop: report it after the drain

    async def _release_waiting(self) -> None:
        """Hand back the prefetched jobs that never started (no attempt burnt)."""
        assert self._settler is not None
        leases = list(self._waiting)
        self._waiting.clear()
        if leases:
            await self._settler.release(leases, reason="worker stopping")
            self._busy -= len(leases)
            if self._busy == 0:
                self._all_done.set()

    async def _abort_running(self) -> None:
        """Hand back every job still in its handler (no attempt burnt), then stop the handlers."""
        assert self._executor is not None and self._settler is not None
        executor = self._executor
        executor.aborting = True
        victims = list(executor.in_handler.values())
        log.warning("shutdown timeout: handing back %d unfinished job(s)", len(victims))
        await self._settler.release(
            [lease for lease, _ in victims],
            reason="shutdown timeout",
            outcome=Outcome.CANCELLED,
            durations=[executor.running_for(lease.job.id) for lease, _ in victims],
        )
        for lease, call in victims:
            task = self._tasks.get(lease.job.id)
            if task is not None:
                task.cancel()
            if call is not None:
                self._threads.interrupt(call)
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.wait(tasks, timeout=ABORT_GRACE)
