"""A consumer serving on a thread of its own, and a wait on a condition, for the tests."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from pqueue.rsmq import Consumer


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


class Running:
    """A consumer serving on a thread of its own until :meth:`stop`."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_until(lambda: consumer._stopping is not None)

    def _run(self) -> None:
        try:
            asyncio.run(self.consumer.serve())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def stop(self) -> None:
        self.consumer.stop()
        self.thread.join(30)
        assert not self.thread.is_alive() and self.error is None
