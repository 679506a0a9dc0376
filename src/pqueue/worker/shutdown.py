"""SIGTERM/SIGINT: the first asks the worker to drain, the second forces the process out.

Handlers are installed with ``signal.signal`` rather than ``loop.add_signal_handler``:
a Python-level handler runs in the main thread at the next bytecode even while a job
blocks the event loop, so a second signal still forces exit at once. A forced exit
leaves held jobs to lease expiry and recovery (no job is lost, some run again).

A SIGTERM repeated within ``DUPLICATE_WITHIN`` of the first is one stop request delivered
twice, not an operator insisting: coreutils ``timeout`` signals its child and then its
process group, and a ``--processes`` parent forwards what the group already got. Only a
later SIGTERM, or any repeated SIGINT (a person pressing Ctrl-C again), forces the exit.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

log = logging.getLogger("pqueue.worker")

SIGNALS = (signal.SIGTERM, signal.SIGINT)
DUPLICATE_WITHIN = 1.0  # seconds: a repeated SIGTERM this soon is the same request delivered twice
DUPLICATE_WAIT = 0.5
"""Seconds at most that leaving the context waits after a SIGTERM for its second delivery:
a drain can end between ``timeout``'s two ``kill()`` calls (on a loaded machine), and a
copy landing after the default handler is back would kill the drained process (exit 143)."""


def forced_exit_code(signum: int) -> int:
    """The shell convention for "killed by signal N"."""
    return 128 + signum


class ShutdownSignals:
    """Context manager: while active, the first signal calls ``on_stop``, the second exits now."""

    def __init__(
        self,
        on_stop: Callable[[], None],
        *,
        exit: Callable[[int], Any] = os._exit,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        self.on_stop = on_stop
        self.exit = exit
        self.clock = clock
        self.sleep = sleep
        self.received = 0
        self._first: tuple[int, float] | None = None  # (signal, when) of the drain request
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> ShutdownSignals:
        if threading.current_thread() is not threading.main_thread():
            log.warning("not on the main thread: SIGTERM/SIGINT are not handled; call stop() to drain")
            return self
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self.handle)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._previous and self._first is not None and self._first[0] == signal.SIGTERM:
            left = min(DUPLICATE_WAIT, DUPLICATE_WITHIN - (self.clock() - self._first[1]))
            if left > 0:  # our handler still takes (and ignores) a copy of the same SIGTERM
                self.sleep(left)
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def handle(self, signum: int, frame: FrameType | None = None) -> None:
        name = signal.Signals(signum).name
        now = self.clock()
        if self._first is None:
            self._first = (signum, now)
            self.received = 1
            log.info("%s received: draining (no new jobs; send it again to exit at once)", name)
            self.on_stop()
            return
        first_signum, first_at = self._first
        if signum == first_signum == signal.SIGTERM and now - first_at < DUPLICATE_WITHIN:
            log.debug("SIGTERM again %.3fs after the first: the same request delivered twice", now - first_at)
            return
        self.received += 1
        os.write(
            2, f"pqueue: second {name}: exiting now; held jobs return when their leases expire\n".encode()
        )
        self.exit(forced_exit_code(signum))
