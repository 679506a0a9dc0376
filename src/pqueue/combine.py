"""Concurrent producers share round trips: enqueues that arrive together go out together.

A caller that finds nothing in flight sends at once (a lone producer waits for nothing:
no timer, no batching window). Callers arriving while a round trip is in flight queue
up; when it ends, the next round trip carries every one of them, as one broker enqueue
(one Redis pipeline, one Postgres statement and commit). Each caller returns after the
round trip holding its own jobs, with its own results or its own error: if the merged
call fails for a reason other than an unreachable server, each request is sent again
alone (:func:`merged`), so one bad job never fails its neighbours.

On Redis the round trip is one pipeline whose script calls fail one by one, so the
broker sorts requests into calls itself (``RedisBroker.enqueue_each``) and needs no
second attempt.

One policy (:class:`Line`, :func:`merged`), two waiting primitives: :class:`Combiner`
for threads sharing one sync ``Client``, :class:`AsyncCombiner` for coroutines sharing
one ``AsyncClient``. docs/architecture.md ("Producers: shared round trips") and ADR 0121.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from pqueue.errors import BrokerUnavailable
from pqueue.job import EnqueueResult, JobSpec
from pqueue.steps import Steps, run_async, run_sync

W = TypeVar("W")

Request = Sequence[JobSpec]
"""One caller's jobs (a single enqueue, or one enqueue_many batch)."""
Results = list[EnqueueResult]
Outcome = Results | BaseException
"""What one caller gets back: its results, or the error to raise in its thread/task."""


class Line(Generic[W]):
    """Who sends, and what each send carries; the same for both flavours (no I/O, no lock).

    ``arrive`` says whether the newcomer must start sending (nothing was in flight);
    ``take`` hands the sender every waiting caller; ``finish`` ends a round trip and
    names the first caller that arrived during it (it leads the next), or frees the line.
    """

    __slots__ = ("busy", "waiting")

    def __init__(self) -> None:
        self.waiting: list[W] = []
        self.busy = False

    def arrive(self, waiter: W) -> bool:
        self.waiting.append(waiter)
        if self.busy:
            return False
        self.busy = True
        return True

    def take(self) -> list[W]:
        batch, self.waiting = self.waiting, []
        return batch

    def finish(self) -> W | None:
        if self.waiting:
            return self.waiting[0]
        self.busy = False
        return None


def merged(requests: Sequence[Request]) -> Steps[Request, Results, list[Outcome]]:
    """Send ``requests`` as one enqueue; if that fails, each alone: every request's outcome.

    The merged call is one statement on Postgres (atomic: a failure stored nothing) and
    one script call per queue on Redis. An unreachable server fails every request the
    same way, so it is not retried request by request.
    """
    if len(requests) == 1:
        try:
            return [(yield requests[0])]
        except Exception as exc:  # noqa: BLE001 - handed to its own caller
            return [exc]
    flat = [spec for request in requests for spec in request]
    try:
        results = yield flat
    except BrokerUnavailable as exc:
        return [exc] * len(requests)
    except Exception:  # noqa: BLE001 - someone's bad job: find whose, alone
        outcomes: list[Outcome] = []
        for request in requests:
            try:
                outcomes.append((yield request))
            except Exception as exc:  # noqa: BLE001 - handed to its own caller
                outcomes.append(exc)
        return outcomes
    split: list[Outcome] = []
    start = 0
    for request in requests:
        split.append(results[start : start + len(request)])
        start += len(request)
    return split


def merging(enqueue: Callable[[Request], Results]) -> Callable[[list[Request]], list[Outcome]]:
    """A combiner's send over a blocking ``enqueue`` whose one call is atomic (:func:`merged`)."""
    return lambda requests: run_sync(merged(requests), enqueue)


async def merging_async(
    enqueue: Callable[[Request], Awaitable[Results]], requests: list[Request]
) -> list[Outcome]:
    """:func:`merging` for an awaitable ``enqueue``."""
    return await run_async(merged(requests), enqueue)


def _settled(outcome: Outcome) -> Results:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


class _Waiter:
    """One thread's place in the line: its request, then its outcome or the lead."""

    __slots__ = ("gate", "lead", "outcome", "request")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.outcome: Outcome | None = None
        self.lead = False
        self.gate: threading.Lock | None = None  # a thread that must wait: held until it is woken

    def wait(self) -> None:
        assert self.gate is not None
        self.gate.acquire()

    def wake(self) -> None:
        if self.gate is not None:  # None: it led this round trip itself
            self.gate.release()


class Combiner:
    """Threads sharing one sync client: the thread that leads a round trip sends everything
    waiting, wakes the first late-comer to lead the next, then hands each waiter its outcome."""

    def __init__(self, send: Callable[[list[Request]], list[Outcome]]) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._line: Line[_Waiter] = Line()
        self._crowd = 1  # callers in the last round trip

    def submit(self, request: Request) -> Results:
        """Enqueue ``request`` in the next round trip; its results, or its error raised here."""
        me = _Waiter(request)
        with self._lock:
            lead = self._line.arrive(me)
            if not lead:  # a lock of its own only for a thread that waits (cheaper than an Event)
                me.gate = threading.Lock()
                me.gate.acquire()
        if lead and self._crowd > 1:
            # Nothing in flight, but the last round trip carried several callers: before
            # sending, let go of the GIL for as long as that brings newcomers, so threads
            # it woke, already on their way back, join this one instead of each leading
            # one of their own. Not a timer, and a lone producer never does it (it costs
            # a system call).
            while True:
                arrived = len(self._line.waiting)
                time.sleep(0)
                if len(self._line.waiting) == arrived:
                    break
        elif not lead:
            me.wait()
            if not me.lead:
                return _settled(me.outcome)  # type: ignore[arg-type]
        with self._lock:
            batch = self._line.take()
        self._crowd = len(batch)
        outcomes: Sequence[Outcome]
        try:
            outcomes = self._send([w.request for w in batch])
        except BaseException as exc:  # noqa: BLE001 - e.g. KeyboardInterrupt: free everyone
            outcomes = [exc] * len(batch)
        with self._lock:
            after = self._line.finish()
        if after is not None:
            after.lead = True
            after.wake()
        for waiter, outcome in zip(batch, outcomes, strict=True):
            waiter.outcome = outcome
            if waiter is not me:
                waiter.wake()
        return _settled(me.outcome)  # type: ignore[arg-type]


Q = TypeVar("Q")
R = TypeVar("R")


class _AsyncWaiter(Generic[Q, R]):
    __slots__ = ("future", "request")

    def __init__(self, request: Q, future: asyncio.Future[R]) -> None:
        self.request = request
        self.future = future


class AsyncCombiner(Generic[Q, R]):
    """Coroutines sharing one asyncio client: one task runs round trips while callers wait
    (``AsyncClient``'s enqueues, ``AsyncRsmq``'s calls). ``send`` returns a result or an
    exception per request.

    The round trips run in a task of their own, so a caller cancelled while waiting
    neither cancels its neighbours' round trip nor stalls the line; a request not yet
    sent when its caller is cancelled is not sent at all.
    """

    def __init__(
        self,
        send: Callable[[list[Q]], Awaitable[list[R | BaseException]]],
        *,
        name: str = "pqueue-enqueue-rounds",
    ) -> None:
        self._send = send
        self._name = name
        self._line: Line[_AsyncWaiter[Q, R]] = Line()
        self._rounds: asyncio.Task[None] | None = None

    async def submit(self, request: Q) -> R:
        """Put ``request`` in the next round trip; its result, or its error raised here."""
        loop = asyncio.get_running_loop()
        me: _AsyncWaiter[Q, R] = _AsyncWaiter(request, loop.create_future())
        if self._line.arrive(me):
            self._rounds = loop.create_task(self._run(), name=self._name)
        try:
            return await me.future
        except asyncio.CancelledError:
            if me in self._line.waiting:
                self._line.waiting.remove(me)
            raise

    async def _run(self) -> None:
        batch: list[_AsyncWaiter[Q, R]] = []
        try:
            while True:
                batch = [w for w in self._line.take() if not w.future.done()]
                if batch:
                    outcomes = await self._send([w.request for w in batch])
                    for waiter, outcome in zip(batch, outcomes, strict=True):
                        if waiter.future.done():
                            continue
                        if isinstance(outcome, BaseException):
                            waiter.future.set_exception(outcome)
                        else:
                            waiter.future.set_result(outcome)
                batch = []
                if self._line.finish() is None:
                    return
        except BaseException:  # this task was cancelled (its loop is closing): free every waiter
            for waiter in batch + self._line.take():
                if not waiter.future.done():
                    waiter.future.cancel()
            self._line.busy = False
            raise
