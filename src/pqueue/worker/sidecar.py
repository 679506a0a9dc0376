"""The worker's side thread: its own event loop and its own broker, for heartbeats and housekeeping.

Handlers may block the worker's loop (``time.sleep`` in an ``async def``) or spin the
CPU; leases must still be extended. So the heartbeat does not live on that loop: it
runs here, with a second broker connection (``pqueue.connect(dsn)`` again -- Redis and
Postgres brokers bind to one loop; ``memory://`` shares its named store).
Recovery, promotion and pruning run here too, keeping the claim loop lean.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pqueue.broker import FullBroker, RecoveryReport, WorkerInfo
from pqueue.brokers import connect
from pqueue.clock import Clock
from pqueue.errors import BrokerUnavailable
from pqueue.job import Lease
from pqueue.periodic import Schedule
from pqueue.worker.config import WorkerSettings
from pqueue.worker.fatal import Seen, never
from pqueue.worker.heartbeat import Heartbeat
from pqueue.worker.leases import LeaseBook
from pqueue.worker.maintenance import Maintenance
from pqueue.worker.schedules import Scheduler
from pqueue.worker.settle import OUTAGE_RETRY

log = logging.getLogger("pqueue.worker")


class Sidecar:
    """Start with :meth:`start` (returns once connected and registered), stop with :meth:`stop`."""

    def __init__(
        self,
        dsn: str,
        settings: WorkerSettings,
        book: LeaseBook,
        info: WorkerInfo,
        *,
        clock: Clock | None = None,
        broker_options: dict[str, Any] | None = None,
        on_work: Callable[[], None] = lambda: None,
        on_lost: Callable[[list[Lease]], None] = lambda leases: None,
        on_recovered: Callable[[RecoveryReport], None] = lambda report: None,
        schedules: Sequence[Schedule] = (),
        on_cancel: Callable[[list[str]], None] = lambda job_ids: None,
        fatal: Seen = never,
    ) -> None:
        self._dsn = dsn
        self._fatal = fatal
        self._clock = clock
        self._options = broker_options or {}
        self._settings = settings
        self._book = book
        self._info = info
        self._on_work = on_work
        self._on_lost = on_lost
        self._on_recovered = on_recovered
        self._schedules = tuple(schedules)
        self._on_cancel = on_cancel
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.heartbeat: Heartbeat | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="pqueue-heartbeat", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    def stop(self, timeout: float = 10.0) -> None:
        """Unregister the worker, close the broker and end the thread."""
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is None or stop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            if not self._ready.is_set():
                self._error = exc
                self._ready.set()
            else:
                log.exception("heartbeat thread crashed; leases will expire and jobs be recovered")

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        broker = connect(self._dsn, clock=self._clock, **self._options)
        await broker.open()
        try:
            heartbeat = Heartbeat(
                broker,
                self._book,
                self._info,
                lease=self._settings.lease,
                on_lost=self._on_lost,
                on_cancel=self._on_cancel,
            )
            self.heartbeat = heartbeat
            await heartbeat.beat()
            self._ready.set()
            await self._run_loops(broker, heartbeat)
            try:
                await heartbeat.goodbye()
            except Exception as exc:  # noqa: BLE001 - its registration expires by itself
                if not self._fatal(exc, "unregistering"):
                    log.warning("could not unregister worker %s; it expires on its own", self._info.id)
        finally:
            await broker.close()

    async def _run_loops(self, broker: FullBroker, heartbeat: Heartbeat) -> None:
        assert self._stop is not None
        s = self._settings
        loops = [self._every(s.beat_interval, heartbeat.beat, "heartbeat")]
        if s.maintenance:
            jobs = Maintenance(
                broker, on_work=self._on_work, on_recovered=self._on_recovered, stop=self._stop
            )
            loops += [
                self._every(s.promote_interval, jobs.promote, "promote"),
                self._every(s.recover_interval, jobs.recover, "recover"),
                self._every(s.prune_interval, jobs.prune, "prune"),
            ]
        if self._schedules:  # periodic jobs (pqueue.worker.schedules); no loop without any
            loops.append(Scheduler(broker, self._schedules, fatal=self._fatal).run(self._stop))
        # The loops end by themselves once stop is set: a broker call in flight is never
        # cancelled (some drivers swallow a cancellation that lands mid-command).
        await asyncio.gather(*loops)

    async def _every(self, interval: float, step: Callable[[], Awaitable[object]], name: str) -> None:
        """Run ``step`` every ``interval`` seconds until stopped; errors are logged and the loop goes on."""
        assert self._stop is not None
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            started, wait = loop.time(), interval
            try:
                await step()
            except BrokerUnavailable as exc:
                # Logged once per outage by the server's health (pqueue.brokers.health); try
                # again soon, so leases are extended the moment the server is back.
                log.debug("%s failed (%s); retrying", name, exc)
                wait = min(interval, OUTAGE_RETRY)
            except Exception as exc:  # noqa: BLE001 - nothing may end the heartbeat
                if not self._fatal(exc, name):
                    log.warning("%s failed (%s: %s); retrying", name, type(exc).__name__, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), max(0.0, wait - (loop.time() - started)))
