"""Cheap per-event tallies that prometheus-client metrics catch up with at each scrape.

A prometheus-client increment takes a lock and a few Python calls (a histogram
observation about 1-2 us); per job that cost more than the 5 % of a Redis drain the
metrics may take. So the hooks only add to plain, lock-free running totals here (they
all run on the worker's one loop thread), and :meth:`Tally.catch_up` -- at each scrape,
or every second in a pool's child -- adds what changed since the last catch-up to the
real metrics. Totals only grow and catch-ups only read them, so a catch-up on another
thread never loses an event: one it does not see yet, the next one sees.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import Counter, Gauge, Histogram


class CountTally:
    """A running count for one counter child."""

    __slots__ = ("child", "done", "total")

    def __init__(self, child: Counter) -> None:
        self.child, self.total, self.done = child, 0, 0

    def catch_up(self) -> None:
        total = self.total
        if total != self.done:
            self.child.inc(total - self.done)
            self.done = total


class LevelTally:
    """Starts and ends for one gauge child (jobs in flight): the gauge is set to their difference."""

    __slots__ = ("child", "ended", "started")

    def __init__(self, child: Gauge) -> None:
        self.child, self.started, self.ended = child, 0, 0

    def catch_up(self) -> None:
        self.child.set(self.started - self.ended)


class HistogramTally:
    """Running bucket counts and sum for one histogram child."""

    __slots__ = ("bounds", "child", "counts", "done", "done_sum", "sum")

    def __init__(self, child: Histogram, bounds: Sequence[float]) -> None:
        self.child = child
        self.bounds = list(bounds)  # with +Inf last, as the child's buckets
        self.counts = [0] * len(self.bounds)
        self.done = [0] * len(self.bounds)
        self.sum = self.done_sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def catch_up(self) -> None:
        # prometheus-client has no public "add n observations to bucket i"; its children
        # keep one value per bucket (also in multiprocess mode), which this adds to.
        # tests/metrics/test_tally.py pins the result against Histogram.observe.
        buckets: list[Any] = self.child._buckets
        for i, count in enumerate(self.counts):
            if count != self.done[i]:
                buckets[i].inc(count - self.done[i])
                self.done[i] = count
        total = self.sum
        if total != self.done_sum:
            self.child._sum.inc(total - self.done_sum)
            self.done_sum = total


CatchUp = Callable[[], None]
