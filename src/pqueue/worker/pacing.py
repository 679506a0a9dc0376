"""How many jobs a worker claims: its free slots, plus a prefetch sized by measured job time.

A worker that claims only when a slot frees leaves that slot idle for a whole claim round
trip, and claims in small batches (one statement and commit per few jobs). Prefetching
hides the round trip and makes batches larger, but a job waiting in one worker's buffer
is a job an idle worker cannot run. So the prefetch is bounded by time, not only by
count: a worker holds, beyond its running jobs, only as many as it expects to *start*
within ``prefetch_window`` seconds, estimated from how long its recent jobs took. Until
a job has finished, and for slow jobs, that is none (ADR 0040).
"""

from __future__ import annotations

import math

SMOOTHING = 0.2
"""Weight of the newest job in the moving average of job durations."""


class Pacer:
    """The moving average of job durations, and the prefetch it allows (:attr:`extra`)."""

    __slots__ = ("_average", "concurrency", "extra", "limit", "window")

    def __init__(self, concurrency: int, *, limit: int, window: float) -> None:
        self.concurrency = concurrency
        self.limit = limit
        """The most jobs held beyond ``concurrency`` (0: never prefetch)."""
        self.window = window
        """Seconds a prefetched job may expect to wait for a slot."""
        self._average = math.inf  # unknown: no prefetch until a job has finished
        self.extra = 0
        """Jobs to hold beyond the running ones: those a slot should free up for in time."""

    @property
    def average(self) -> float:
        """The moving average of job durations in seconds (infinite until one job finished)."""
        return self._average

    def observe(self, seconds: float) -> None:
        """Note how long one job took (handler and settling, as the slot saw it)."""
        if self._average == math.inf:
            self._average = seconds
        else:
            self._average += SMOOTHING * (seconds - self._average)
        if self.limit:
            starts_per_second = self.concurrency / max(self._average, 1e-6)
            self.extra = min(self.limit, int(self.window * starts_per_second))
