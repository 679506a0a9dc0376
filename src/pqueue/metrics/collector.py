"""Broker gauges, read once per scrape: what is stored, not what one worker saw.

``pqueue_queue_jobs{queue,status}``, ``pqueue_queue_oldest_pending_seconds{queue}`` and
``pqueue_workers`` come from one ``Client.stats()`` call per collection -- never a call
per metric, and none when the registry only asks what the collector describes. Every
exporter of the same broker reports the same values, so aggregate them with ``max``, not
``sum`` (docs/metrics.md).
If the broker cannot be reached the gauges are left out of that scrape (an absent series,
not a false zero) and the problem is logged once until it clears.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pqueue.client import Stats
from pqueue.job import JobStatus

log = logging.getLogger("pqueue.metrics")


class QueueCollector(Collector):
    """A prometheus-client collector over ``stats`` (e.g. ``pqueue.Client(dsn).stats``)."""

    def __init__(self, stats: Callable[[], Stats]) -> None:
        self._stats = stats
        self._failing = False

    def describe(self) -> Iterable[Metric]:
        """The metric families, without reading the broker (prometheus-client calls this on register)."""
        return list(_families())

    def collect(self) -> Iterable[Metric]:
        try:
            stats = self._stats()
        except Exception as exc:  # noqa: BLE001 - a broker outage must not fail the whole scrape
            if not self._failing:
                log.warning("broker stats unavailable for metrics (%s: %s)", type(exc).__name__, exc)
            self._failing = True
            return []
        if self._failing:
            log.info("broker stats available again")
        self._failing = False
        jobs, oldest, workers = _families()
        for queue, counts in sorted(stats.queues.items()):
            for status in JobStatus:
                jobs.add_metric([queue, status.value], counts.get(status, 0))
            # 0 when nothing waits: "how late is the queue" has an answer for every queue.
            oldest.add_metric([queue], stats.oldest_pending_age.get(queue, 0.0))
        workers.add_metric([], len(stats.workers))
        return [jobs, oldest, workers]


def _families() -> Iterator[GaugeMetricFamily]:
    yield GaugeMetricFamily(
        "pqueue_queue_jobs", "Jobs stored per queue and status.", labels=["queue", "status"]
    )
    yield GaugeMetricFamily(
        "pqueue_queue_oldest_pending_seconds",
        "Seconds the oldest due pending job of the queue has waited (0 when none waits).",
        labels=["queue"],
    )
    yield GaugeMetricFamily("pqueue_workers", "Workers registered with the broker (heartbeat recent).")
