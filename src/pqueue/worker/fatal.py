"""The one place a worker treats a broker error as fatal: storage that retrying cannot heal.

An outage (a refused connection, a timeout, a failover, a busy file) ends by itself, so
the worker's loops retry it and log it once (pqueue.brokers.health). A
:class:`~pqueue.errors.BrokerUnusable` does not: a damaged SQLite file, a schema dropped
or never migrated. Retrying it once a second forever, as the worker used to, logged a
line a second and left the process looking alive. Every loop of the worker (claims,
waits, settlements, heartbeat and housekeeping, the cancel listener, the scheduler) hands
its errors to :meth:`Fatal.seen` first: the first unusable one logs one ERROR and stops
the worker, which then drains and exits with :data:`EXIT_BROKER_UNUSABLE` (ADR 0158).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pqueue.errors import EXIT_BROKER_UNUSABLE, BrokerUnusable

__all__ = ["EXIT_BROKER_UNUSABLE", "Fatal", "Seen", "never"]

log = logging.getLogger("pqueue.worker")

Seen = Callable[[BaseException, str], bool]
"""What the worker's loops call with an error before handling it themselves (:meth:`Fatal.seen`)."""


def never(exc: BaseException, where: str) -> bool:
    """The :data:`Seen` of a loop run outside a worker: no error is fatal to it."""
    return False


class Fatal:
    """Records the first unusable-broker error a worker meets and stops the worker on it.

    :meth:`seen` may be called from any thread (the heartbeat runs on a thread of its own).
    """

    def __init__(self, stop: Callable[[], None]) -> None:
        self._stop = stop
        self._lock = threading.Lock()
        self.error: BrokerUnusable | None = None
        """The error that stopped the worker, or None."""

    def seen(self, exc: BaseException, where: str) -> bool:
        """True when ``exc`` is fatal: the caller then says nothing more and stops retrying.
        The first fatal error logs one ERROR (``where`` it was met) and stops the worker."""
        if not isinstance(exc, BrokerUnusable):
            return False
        with self._lock:
            first = self.error is None
            if first:
                self.error = exc
        if first:
            code = EXIT_BROKER_UNUSABLE
            log.error("%s failed: %s; not an outage: the worker stops (exit code %d)", where, exc, code)
            self._stop()
        else:
            log.debug("%s failed as well: %s", where, exc)
        return True
