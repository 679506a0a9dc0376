"""Daemon threads that run sync handlers, and how a job past its timeout is interrupted.

A sync handler cannot be cancelled like a coroutine. As Dramatiq does, the worker asks
CPython to raise :class:`JobTimeout` inside the handler's thread
(``PyThreadState_SetAsyncExc``). The exception is raised at the thread's next Python
bytecode: pure-Python code stops at once; a call blocked in C (``time.sleep``, a socket
read, a long regex) is interrupted only when it returns to Python. The worker does not
wait for that: the job is settled as timed out at the deadline, and the thread, if it
is still stuck, is left to finish alone (see docs/delivery-semantics.md).

Threads are daemons, so a stuck handler never keeps the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ctypes
import logging
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from pqueue.job import Job

log = logging.getLogger("pqueue.worker")

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc


class JobTimeout(BaseException):
    """A job ran past its timeout.

    Derives from ``BaseException`` (like ``KeyboardInterrupt``) so that a handler's
    ``except Exception`` cannot swallow the interruption; use ``finally`` for cleanup.
    """

    stack: str = ""
    """For a sync handler: where its thread was when the timeout struck."""


_QUEUED, _RUNNING, _DONE = 0, 1, 2

Outcome = tuple[bool, Any]
"""``(True, return value)`` or ``(False, the exception raised)``."""


class ThreadCall:
    """One sync handler call: queued, running on a thread, or done."""

    __slots__ = ("ctx", "fn", "future", "ident", "interrupted", "job", "loop", "state")

    def __init__(
        self,
        fn: Callable[[Job], Any],
        job: Job,
        ctx: contextvars.Context,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.fn = fn
        self.job = job
        self.ctx = ctx
        self.loop = loop
        self.future: asyncio.Future[Outcome] = loop.create_future()
        self.state = _QUEUED
        self.ident = 0
        self.interrupted = False

    @property
    def done(self) -> bool:
        """The call has ended on its thread (or was dropped before it started)."""
        return self.state == _DONE

    def _deliver(self, outcome: Outcome) -> None:
        if not self.future.done():
            self.future.set_result(outcome)


class HandlerThreads:
    """A pool of daemon threads that grows on demand; the worker's slots bound its use."""

    def __init__(self, name: str = "pqueue-handler") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[ThreadCall | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def size(self) -> int:
        return len(self._threads)

    def submit(
        self, fn: Callable[[Job], Any], job: Job, ctx: contextvars.Context, loop: asyncio.AbstractEventLoop
    ) -> ThreadCall:
        """Run ``ctx.run(fn, job)`` on a pool thread; ``call.future`` gets the outcome."""
        call = ThreadCall(fn, job, ctx, loop)
        with self._lock:
            if self._closed:
                raise RuntimeError("handler threads are shut down")
            if self._idle > 0:
                self._idle -= 1
            else:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads) + 1}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._queue.put(call)
        return call

    def interrupt(self, call: ThreadCall, error: type[JobTimeout] = JobTimeout) -> str:
        """Raise ``error`` (:class:`JobTimeout` or a subclass) in the thread running ``call`` (once).

        Returns the thread's stack at that moment ("" when the call is not running);
        a call still queued is dropped instead.
        """
        with self._lock:
            if call.state == _QUEUED:
                call.state = _DONE  # never start it
                return ""
            if call.state != _RUNNING or call.interrupted:
                return ""
            frame = sys._current_frames().get(call.ident)
            stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
            call.interrupted = True
            _set_async_exc(ctypes.c_ulong(call.ident), ctypes.py_object(error))
            return stack

    def shutdown(self) -> None:
        """Stop idle threads; busy ones finish their call (or die with the process)."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._queue.put(None)

    def _work(self) -> None:
        while True:
            call = self._queue.get()
            if call is None:
                return
            outcome = self._run(call)
            with self._lock:
                self._idle += 1  # before the loop hears back, so its next submit reuses this thread
            if outcome is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: the worker is gone
                    call.loop.call_soon_threadsafe(call._deliver, outcome)

    def _run(self, call: ThreadCall) -> Outcome | None:
        with self._lock:
            if call.state != _QUEUED:
                return None
            call.state, call.ident = _RUNNING, threading.get_ident()
        outcome: Outcome
        try:
            try:
                outcome = (True, call.ctx.run(call.fn, call.job))
            except BaseException as exc:  # noqa: BLE001 - the handler's error is the job's outcome
                outcome = (False, exc)
            self._finish(call)
        except JobTimeout as exc:  # the interrupt landed just after the handler returned
            outcome = (False, exc)
            self._finish(call)
        return outcome

    def _finish(self, call: ThreadCall) -> None:
        """Mark the call done; clear an interrupt that was sent but not yet delivered."""
        with self._lock:
            call.state = _DONE
            if call.interrupted:
                _set_async_exc(ctypes.c_ulong(call.ident), None)
