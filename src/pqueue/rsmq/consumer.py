"""``Consumer``: the worker runtime RSMQ never had.

N slots each receive a message, run the handler (sync on a thread of the consumer's
pool, async on the loop), keep the message hidden while it runs (a fenced
change-visibility every vt/3), and then:

- success: delete it;
- failure: hide it for ``backoff(rc)`` seconds (by default vt * 2^(rc-1), at most an
  hour), so it comes back later and later;
- after ``max_receives`` receives (a failure on the last one, or a receive past it --
  a consumer that crashed never reported): move it to the dead queue ``{qname}-dead``,
  itself an RSMQ queue any client can read (ADR 0144).

Every step after the receive is fenced by the ``rc`` it saw (``lua/settle.lua``): once the
vt ran out and another consumer received the message, this one changes nothing. Delivery
is at least once. ``stop()`` (SIGTERM/SIGINT under :meth:`run`) drains: no new receives,
running handlers get ``shutdown_timeout`` seconds, and those still running are handed back
(visible at once, rc kept). An unreachable Redis is logged once per outage (WARNING, and
INFO when it is back); the slots keep retrying. A Redis whose ``maxmemory-policy`` may
evict keys (messages) is worth one WARNING at start, as for pqueue's workers. With
``realtime`` the consumer subscribes to ``{ns}:rt:{qname}`` and idle slots wake at each
send by a realtime client, instead of on their next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from redis.exceptions import RedisError

from pqueue.errors import BrokerUnavailable, PQueueError
from pqueue.rsmq import validation as check
from pqueue.rsmq.aio import AsyncRsmq
from pqueue.rsmq.core import dead_queue
from pqueue.rsmq.dsn import resolve
from pqueue.rsmq.errors import InvalidArgument
from pqueue.rsmq.model import RsmqMessage

log = logging.getLogger("pqueue.rsmq")

_DriverError = RedisError | OSError

Handler = Callable[[RsmqMessage], Any]
"""``handler(message)``: a plain function (run on a thread) or a coroutine function."""

MAX_BACKOFF = 3600.0
"""The longest a failed message waits before it is visible again, in seconds."""

RETRY_PAUSES = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
"""Pauses of a slot between attempts while Redis is unreachable."""


def default_backoff(rc: int, vt: int) -> float:
    """Seconds a message that failed on its ``rc``-th receive stays hidden: vt, 2vt, 4vt, ..."""
    return float(min(max(vt, 1) * 2 ** max(rc - 1, 0), MAX_BACKOFF))


class Events(Protocol):
    """What a consumer reports (metrics); every method is called on the consumer's loop."""

    def started(self, queue: str, message: RsmqMessage) -> None: ...

    def finished(self, queue: str, message: RsmqMessage) -> None: ...

    def settled(self, queue: str, message: RsmqMessage, outcome: str, run_seconds: float | None) -> None: ...


class _NoEvents:
    def started(self, queue: str, message: RsmqMessage) -> None:
        pass

    def finished(self, queue: str, message: RsmqMessage) -> None:
        pass

    def settled(self, queue: str, message: RsmqMessage, outcome: str, run_seconds: float | None) -> None:
        pass


class Consumer:
    """Consume RSMQ queue ``queue`` of namespace ``ns`` on ``dsn`` with ``handler``."""

    def __init__(
        self,
        dsn: str,
        queue: str,
        handler: Handler,
        *,
        ns: str | None = None,
        concurrency: int = 1,
        max_receives: int = 5,
        vt: int | None = None,
        realtime: bool = False,
        poll_interval: float = 1.0,
        shutdown_timeout: float = 30.0,
        backoff: Callable[[int, int], float] = default_backoff,
        events: Events | None = None,
    ) -> None:
        self.queue = check.qname(queue)
        self.dead_queue = dead_queue(queue)
        _at_least("concurrency", concurrency, 1)
        _at_least("max_receives", max_receives, 1)
        if vt is not None and check.seconds("vt", vt) < 1:
            raise InvalidArgument(f"a consumer's vt must be at least 1 second, got {vt!r}")
        if not poll_interval > 0 or not shutdown_timeout >= 0:
            raise InvalidArgument(
                "poll_interval must be > 0 and shutdown_timeout >= 0, "
                f"got {poll_interval!r} and {shutdown_timeout!r}"
            )
        self.dsn, self.handler = dsn, handler
        self.ns = resolve(dsn, ns)[1]
        self.concurrency, self.max_receives, self.realtime = concurrency, max_receives, realtime
        self.poll_interval, self.shutdown_timeout, self.backoff = poll_interval, shutdown_timeout, backoff
        self.events: Events = events or _NoEvents()
        self._vt = vt or 0
        self._is_async = inspect.iscoroutinefunction(handler)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._wake = asyncio.Event()
        self._rsmq: AsyncRsmq | None = None
        self._pool: ThreadPoolExecutor | None = None

    # -- running ---------------------------------------------------------------------------
    def run(self) -> None:
        """Consume until SIGTERM/SIGINT (drain) or :meth:`stop`; blocks this thread. Runs on
        uvloop when it is installed (``PQUEUE_LOOP`` chooses, as for ``pqueue worker``)."""
        from pqueue import loops
        from pqueue.worker.shutdown import ShutdownSignals

        with ShutdownSignals(self.stop):
            loops.run(self.serve())

    def stop(self) -> None:
        """Ask the consumer to drain and return from :meth:`serve` (any thread)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)

    async def serve(self) -> None:
        """Consume until :meth:`stop`; the queue must exist (else :class:`~pqueue.rsmq.QueueNotFound`)."""
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        self._rsmq = AsyncRsmq(resolve(self.dsn, None)[0], ns=self.ns)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="pqueue-rsmq")
        try:
            self._vt = self._vt or (await self._rsmq.get_queue_attributes(self.queue)).vt or 30
            await self._warn_of_eviction()
            log.info(
                "consuming RSMQ queue %s:%s (concurrency %d, vt %ds, max receives %d, dead queue %s)",
                self.ns, self.queue, self.concurrency, self._vt, self.max_receives, self.dead_queue,
            )  # fmt: skip
            listener = asyncio.create_task(self._listen()) if self.realtime else None
            slots = [asyncio.create_task(self._slot()) for _ in range(self.concurrency)]
            await self._stopping.wait()
            self._wake.set()
            _, running = await asyncio.wait(slots, timeout=self.shutdown_timeout)
            for task in running:
                task.cancel()
            await asyncio.gather(*slots, return_exceptions=True)
            if listener is not None:
                listener.cancel()
                await asyncio.gather(listener, return_exceptions=True)
            log.info("drained RSMQ queue %s:%s", self.ns, self.queue)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)
            await self._rsmq.close()

    async def _warn_of_eviction(self) -> None:
        """One WARNING per process if this Redis may evict messages (ADR 0159), as a pqueue
        worker logs; a check that cannot run does not stop the consumer."""
        assert self._rsmq is not None
        try:
            await self._rsmq.transport.warn_if_evicting()
        except (RedisError, OSError) as exc:
            log.debug("could not read maxmemory-policy: %s", exc)

    @property
    def _draining(self) -> bool:
        return self._stopping is not None and self._stopping.is_set()

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if a drain starts or a realtime send wakes the slots."""
        wake = self._wake
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), seconds)

    async def _slot(self) -> None:
        assert self._rsmq is not None
        failures = 0
        while not self._draining:
            try:
                message = await self._rsmq.receive_message(self.queue, vt=self._vt)
            except BrokerUnavailable:  # logged once per outage by the server's health
                await self._pause(RETRY_PAUSES[min(failures, len(RETRY_PAUSES) - 1)])
                failures += 1
                continue
            failures = 0
            if message is None:
                await self._pause(self.poll_interval)
            else:
                await self._handle(message)

    # -- one message -----------------------------------------------------------------------
    async def _handle(self, message: RsmqMessage) -> None:
        if message.rc > self.max_receives:
            log.warning(
                "message %s was received %d times: moved to %s", message.id, message.rc, self.dead_queue
            )
            await self._settle(message, "bury", outcome="dead", run_seconds=None)
            return
        self.events.started(self.queue, message)
        beat = asyncio.create_task(self._heartbeat(message))
        started = time.monotonic()
        try:
            await self._call(message)
        except asyncio.CancelledError:  # a drain past its timeout: hand the message back now
            beat.cancel()
            await self._settle(message, "hide", outcome="released", run_seconds=None)
            raise
        except Exception as exc:  # noqa: BLE001 - a handler's failure is data, not a crash
            beat.cancel()
            await self._failed(message, exc, time.monotonic() - started)
        else:
            beat.cancel()
            await self._settle(message, "delete", outcome="succeeded", run_seconds=time.monotonic() - started)
        finally:
            self.events.finished(self.queue, message)

    async def _call(self, message: RsmqMessage) -> None:
        if self._is_async:
            await self.handler(message)
            return
        assert self._loop is not None
        result = await self._loop.run_in_executor(self._pool, self.handler, message)
        if inspect.isawaitable(result):  # a sync function that returned an awaitable
            await result

    async def _failed(self, message: RsmqMessage, exc: Exception, run_seconds: float) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        if message.rc >= self.max_receives:
            log.warning("message %s failed on receive %d of %d (%s): moved to %s",
                        message.id, message.rc, self.max_receives, reason, self.dead_queue)  # fmt: skip
            await self._settle(message, "bury", outcome="dead", run_seconds=run_seconds)
            return
        delay = self.backoff(message.rc, self._vt)
        log.warning("message %s failed on receive %d of %d (%s): back in %.1fs",
                    message.id, message.rc, self.max_receives, reason, delay)  # fmt: skip
        await self._settle(
            message, "hide", outcome="failed", run_seconds=run_seconds, hide_ms=int(delay * 1000)
        )

    async def _heartbeat(self, message: RsmqMessage) -> None:
        """Keep the message hidden while its handler runs: every vt/3, hide it for vt again."""
        assert self._rsmq is not None
        while True:
            await asyncio.sleep(self._vt / 3)
            try:
                kept = await self._rsmq.settle(self.queue, message, "hide", self._vt * 1000)
            except BrokerUnavailable:
                continue
            if not kept:
                log.warning(
                    "message %s was received again elsewhere (its vt ran out); it may run twice", message.id
                )
                return

    async def _settle(
        self, message: RsmqMessage, action: str, *, outcome: str, run_seconds: float | None, hide_ms: int = 0
    ) -> None:
        """Settle through an outage, for as long as the message stays hidden (after that,
        another consumer may hold it and the fence would refuse anyway)."""
        assert self._rsmq is not None
        give_up = time.monotonic() + self._vt
        attempt = 0
        while True:
            try:
                done = await asyncio.shield(self._rsmq.settle(self.queue, message, action, hide_ms))
                break
            except BrokerUnavailable:
                if time.monotonic() >= give_up:
                    log.debug("message %s: could not %s it before its vt ran out", message.id, action)
                    return
                await asyncio.sleep(RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)])
                attempt += 1
            except PQueueError as exc:
                log.warning("message %s: %s failed (%s)", message.id, action, exc)
                return
        if done:
            self.events.settled(self.queue, message, outcome, run_seconds)
        else:
            log.warning("message %s finished but was received again elsewhere; it may run twice", message.id)

    # -- realtime --------------------------------------------------------------------------
    async def _listen(self) -> None:
        """Wake idle slots at each realtime publish on ``{ns}:rt:{qname}``."""
        assert self._rsmq is not None
        channel = self._rsmq.keys.channel(self.queue)
        attempt = 0
        while not self._draining:
            pubsub = self._rsmq.transport.client.pubsub()
            try:
                await pubsub.subscribe(channel)
                attempt = 0
                while not self._draining:
                    if await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0) is not None:
                        self._wake_slots()
            except Exception as exc:  # noqa: BLE001 - any failure: subscribe again after a pause
                translated = self._rsmq.transport.translate(exc) if isinstance(exc, _DriverError) else exc
                log.debug("realtime listener: %s; subscribing again", translated)
                await asyncio.sleep(RETRY_PAUSES[min(attempt, len(RETRY_PAUSES) - 1)])
                attempt += 1
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _wake_slots(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()
        if self._draining:
            self._wake.set()


def _at_least(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(f"{name} must be a whole number >= {minimum}, got {value!r}")
