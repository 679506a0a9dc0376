"""Stopping the handlers of running jobs that were cancelled in the broker (ADR 0106).

``client.cancel(id)`` of a running job makes it ``cancelled`` in the broker at once and
revokes its lease; the broker announces the id on its push channel, which the worker
hears on its claim loop's broker (:meth:`Controller.wait_for_cancels`, on the broker's
notification hub: ADR 0134), and, should that message be lost, the side thread's next
heartbeat finds the lease refused and the job cancelled. Either way the ids land in
:meth:`Cancels.cancel` on the worker's loop, which

- marks the job (:mod:`pqueue.cancellation`), so ``job.cancelled()`` turns True for a
  sync handler that polls it, and a job still waiting for a slot never starts;
- cancels the task of an async handler at once;
- for a sync handler, waits ``cancel_grace`` seconds, then abandons it as a timeout
  does: :class:`JobCancelled` is raised in its thread and the worker moves on.

The executor then reports the run as ``Outcome.CANCELLED``; nothing is settled in the
broker (the job is final already), so it is never retried or dead-lettered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from pqueue import cancellation
from pqueue.broker_control import Controller
from pqueue.errors import BrokerUnavailable
from pqueue.job import Lease
from pqueue.worker.fatal import Seen, never
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import OUTAGE_RETRY
from pqueue.worker.threads import HandlerThreads, JobTimeout, ThreadCall

log = logging.getLogger("pqueue.worker")


class JobCancelled(JobTimeout):
    """Raised in the thread of a sync handler that ignored its job's cancellation past the
    grace period (a :class:`JobTimeout`, so the same cleanup rules apply: use ``finally``)."""


class Cancels:
    """Acts on cancels of jobs this worker holds; runs on the worker's event loop."""

    def __init__(
        self,
        *,
        book: LeaseBook,
        tasks: dict[str, asyncio.Task[None]],
        in_handler: dict[str, tuple[Lease, ThreadCall | None]],
        threads: HandlerThreads,
        grace: float,
    ) -> None:
        self.book = book
        self.tasks = tasks
        self.in_handler = in_handler
        self.threads = threads
        self.grace = grace

    def cancel(self, job_ids: Iterable[str]) -> None:
        """Stop the handlers of these jobs (ids this worker does not hold are ignored)."""
        for job_id in job_ids:
            if not self.book.holds(job_id) or cancellation.requested(job_id):
                continue
            cancellation.request(job_id)
            entry = self.in_handler.get(job_id)
            if entry is None:  # waiting for a slot (it will not start) or settling already
                continue
            _, call = entry
            log.info("job %s was cancelled while running: stopping its handler", job_id)
            if call is None:
                task = self.tasks.get(job_id)
                if task is not None:
                    task.cancel()
            else:
                asyncio.get_running_loop().call_later(self.grace, self._abandon, job_id, call)

    def _abandon(self, job_id: str, call: ThreadCall) -> None:
        """The sync handler ignored the cancel for the grace period: interrupt its thread
        and stop waiting for it (the thread, if stuck in C code, finishes alone)."""
        entry = self.in_handler.get(job_id)
        if entry is None or entry[1] is not call:
            return  # it finished meanwhile
        log.warning(
            "job %s: sync handler ignored its cancellation for %gs; abandoning it", job_id, self.grace
        )
        self.threads.interrupt(call, JobCancelled)
        task = self.tasks.get(job_id)
        if task is not None:
            task.cancel()


CANCEL_WAIT = 1.0
"""Seconds one ``wait_for_cancels`` call waits before the listener asks again."""
LISTEN_RETRY = 1.0
"""Seconds the listener waits after an unexpected error before listening again."""


class CancelListener:
    """The worker's loop over the broker's push channel for cancels of running jobs."""

    def __init__(
        self,
        broker: Controller,
        on_cancel: Callable[[list[str]], None],
        stop: asyncio.Event,
        *,
        fatal: Seen = never,
    ) -> None:
        self.broker = broker
        self.on_cancel = on_cancel
        self.stop = stop
        self.fatal = fatal
        """Sees each failure first: a fatal error is the worker's to report (pqueue.worker.fatal)."""

    @property
    def supported(self) -> bool:
        """Whether the broker has a push channel for cancels (a plug-in backend may not:
        then only the heartbeat notices them)."""
        return callable(getattr(self.broker, "wait_for_cancels", None))

    async def subscribe(self) -> None:
        """Start listening; a failure is logged, not raised (the heartbeat notices cancels too)."""
        if not self.supported:
            return
        try:
            await self.broker.wait_for_cancels(0.0)
        except Exception as exc:  # noqa: BLE001 - the worker must start anyway
            if not self.fatal(exc, "listening for cancels"):
                log.warning("cannot listen for cancels yet (%s: %s); retrying", type(exc).__name__, exc)

    async def run(self) -> None:
        """Hand every id heard to ``on_cancel`` until ``stop`` is set."""
        if not self.supported:
            return
        stopping = asyncio.create_task(self.stop.wait())
        try:
            while not self.stop.is_set():
                listening = asyncio.create_task(self.broker.wait_for_cancels(CANCEL_WAIT))
                await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not listening.done():  # stopping: a wait for a message may be cut short
                    listening.cancel()
                    await asyncio.gather(listening, return_exceptions=True)
                    return
                try:
                    ids = listening.result()
                except BrokerUnavailable as exc:  # logged once per outage by the server's health
                    log.debug("listening for cancels failed (%s); retrying", exc)
                    await self._nap(OUTAGE_RETRY)
                    continue
                except Exception as exc:  # noqa: BLE001 - nothing may end the listener
                    if not self.fatal(exc, "listening for cancels"):
                        kind = type(exc).__name__
                        log.warning("listening for cancels failed (%s: %s); retrying", kind, exc)
                    await self._nap(LISTEN_RETRY)
                    continue
                if ids:
                    self.on_cancel(ids)
        finally:
            stopping.cancel()

    async def _nap(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), seconds)
