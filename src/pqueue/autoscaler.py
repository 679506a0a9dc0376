"""The thread that scales a :class:`~pqueue.supervisor.Supervisor` (``--autoscale MIN:MAX``).

Every ``interval`` seconds it reads the broker's stats (its own :class:`pqueue.Client`:
its own connection and loop thread), keeps what concerns the queues this pool serves
(:func:`signal_of`), asks :func:`pqueue.autoscale.decide`, and hands a new size to the
supervisor, whose watch loop starts or retires processes. A failed read changes nothing
(the pool keeps its size through a broker outage) and is logged once until it clears.
Each change is one INFO line with its reason, and a count per direction for the
``pqueue_autoscale_events_total`` metric.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from pqueue.autoscale import Decision, Memory, Pool, Signal, Thresholds, decide
from pqueue.client import Stats
from pqueue.job import JobStatus
from pqueue.supervisor import Supervisor

log = logging.getLogger("pqueue.autoscale")


def signal_of(stats: Stats, queues: Sequence[str]) -> Signal:
    """The part of ``stats`` the rule reads: due jobs waiting, jobs running, oldest wait, on ``queues``."""
    return Signal(
        waiting=sum(stats.total(JobStatus.PENDING, q) for q in queues),
        running=sum(stats.total(JobStatus.ACTIVE, q) for q in queues),
        oldest=max((stats.oldest_pending_age.get(q, 0.0) for q in queues), default=0.0),
    )


class Autoscaler:
    """Scale ``supervisor`` between ``minimum`` and ``maximum`` processes of ``concurrency`` slots."""

    def __init__(
        self,
        supervisor: Supervisor,
        stats: Callable[[], Stats],
        queues: Sequence[str],
        *,
        minimum: int,
        maximum: int,
        concurrency: int,
        thresholds: Thresholds,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.supervisor = supervisor
        self.events = {"up": 0, "down": 0}
        self._stats = stats
        self._queues = tuple(queues)
        self._bounds = (minimum, maximum, concurrency)
        self._thresholds = thresholds
        self._interval = interval
        self._clock = clock
        self._memory = Memory()
        self._failing = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self) -> Decision | None:
        """Sample once and apply the answer; None when the broker could not be read."""
        try:
            signal = signal_of(self._stats(), self._queues)
        except Exception as exc:  # noqa: BLE001 - an outage keeps the pool as it is
            if not self._failing:
                log.warning(
                    "autoscale: broker stats unavailable, pool kept as it is (%s: %s)",
                    type(exc).__name__,
                    exc,
                )
            self._failing = True
            return None
        if self._failing:
            log.info("autoscale: broker stats available again")
        self._failing = False
        minimum, maximum, concurrency = self._bounds
        size = self.supervisor.target
        log.debug(
            "autoscale sample: %d waiting, %d running, oldest %.1fs; %d processes",
            signal.waiting,
            signal.running,
            signal.oldest,
            size,
        )
        decision = decide(
            signal, Pool(size, minimum, maximum, concurrency), self._memory, self._thresholds, self._clock()
        )
        self._memory = decision.memory
        if decision.direction is not None and decision.processes != size:
            if not self.supervisor.resize(decision.processes):
                return decision  # the pool is stopping
            self.events[decision.direction] += 1
            log.info(
                "autoscale %s: %d -> %d worker processes: %s",
                decision.direction,
                size,
                decision.processes,
                decision.reason,
            )
        return decision

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self._interval):
                self.step()

        self._thread = threading.Thread(target=loop, name="pqueue-autoscale", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
