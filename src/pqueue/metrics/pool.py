"""The supervising process's own series (``--processes N`` / ``--autoscale MIN:MAX`` with
``--metrics-port``): ``pqueue_worker_processes``, the processes the pool runs now (retiring
ones excluded), and, with ``--autoscale``, ``pqueue_autoscale_events_total{direction}``,
the times it grew (``up``) or shrank (``down``). Read from the supervisor at each scrape."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

DIRECTIONS = ("up", "down")


class PoolCollector(Collector):
    """``processes()``: the pool's size now; ``events()``: scale events per direction (None: no autoscale)."""

    def __init__(
        self, processes: Callable[[], int], events: Callable[[], Mapping[str, int]] | None = None
    ) -> None:
        self._processes = processes
        self._events = events

    def collect(self) -> Iterable[Metric]:
        size = GaugeMetricFamily(
            "pqueue_worker_processes", "Worker processes the pool runs now (retiring ones excluded)."
        )
        size.add_metric([], self._processes())
        if self._events is None:
            return [size]
        events = CounterMetricFamily(
            "pqueue_autoscale_events",
            "Times --autoscale grew (up) or shrank (down) the pool.",
            labels=["direction"],
        )
        counts = self._events()
        for direction in DIRECTIONS:
            events.add_metric([direction], counts.get(direction, 0))
        return [size, events]
