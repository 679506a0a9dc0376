"""SIGTERM/SIGINT: the first asks the worker to drain, the second forces the process out.

Handlers are installed with ``signal.signal`` rather than ``loop.add_signal_handler``:
a Python-level handler runs in the main thread at the next bytecode even while a job
blocks the event loop, so a second signal still forces exit at once. A forced exit
leaves held jobs to lease expiry and recovery (no job is lost, some run again).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

log = logging.getLogger("pqueue.worker")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def forced_exit_code(signum: int) -> int:
    """The shell convention for "killed by signal N"."""
    return 128 + signum


class ShutdownSignals:
    """Context manager: while active, the first signal calls ``on_stop``, the second exits now."""

    def __init__(self, on_stop: Callable[[], None], *, exit: Callable[[int], Any] = os._exit) -> None:
        self.on_stop = on_stop
        self.exit = exit
        self.received = 0
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
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def handle(self, signum: int, frame: FrameType | None = None) -> None:
        self.received += 1
        name = signal.Signals(signum).name
        if self.received == 1:
            log.info("%s received: draining (no new jobs; send it again to exit at once)", name)
            self.on_stop()
            return
        os.write(
            2, f"pqueue: second {name}: exiting now; held jobs return when their leases expire\n".encode()
        )
        self.exit(forced_exit_code(signum))
