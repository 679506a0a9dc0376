"""Prometheus metrics of ``pqueue rsmq worker --metrics-port``: pqueue's metric names where
they fit (docs/metrics.md), with ``type="rsmq"``.

- ``pqueue_jobs_processed_total{queue,type,outcome}``: succeeded, failed (will come back),
  dead (moved to the dead queue), released (handed back by a drain);
- ``pqueue_job_run_seconds``, ``pqueue_job_wait_seconds`` (first receives: send to start),
  ``pqueue_jobs_in_flight{queue}``;
- ``pqueue_queue_jobs{queue,status}`` with status ``visible`` and ``hidden``, for the queue
  and its dead queue, read at each scrape.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pqueue.errors import PQueueError
from pqueue.metrics.events import BUCKETS
from pqueue.rsmq.client import Rsmq
from pqueue.rsmq.model import RsmqMessage

TYPE = "rsmq"


class ConsumerMetrics:
    """The consumer's :class:`~pqueue.rsmq.consumer.Events` as Prometheus metrics."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["queue", "type"]
        self.processed = Counter(
            "pqueue_jobs_processed_total", "Deliveries settled by workers, by outcome.",
            [*labels, "outcome"], registry=registry,
        )  # fmt: skip
        self.run_seconds = Histogram(
            "pqueue_job_run_seconds", "Seconds handlers ran.", labels, registry=registry, buckets=BUCKETS
        )
        self.wait_seconds = Histogram(
            "pqueue_job_wait_seconds", "Seconds from send to the handler's start (first receives).",
            labels, registry=registry, buckets=BUCKETS,
        )  # fmt: skip
        self.in_flight = Gauge("pqueue_jobs_in_flight", "Handlers running now.", ["queue"], registry=registry)

    def started(self, queue: str, message: RsmqMessage) -> None:
        self.in_flight.labels(queue).inc()
        if message.rc == 1:
            self.wait_seconds.labels(queue, TYPE).observe(max(0.0, time.time() - message.sent / 1000))

    def finished(self, queue: str, message: RsmqMessage) -> None:
        self.in_flight.labels(queue).dec()

    def settled(self, queue: str, message: RsmqMessage, outcome: str, run_seconds: float | None) -> None:
        self.processed.labels(queue, TYPE, outcome).inc()
        if run_seconds is not None:
            self.run_seconds.labels(queue, TYPE).observe(run_seconds)


class QueueGauges(Collector):
    """``pqueue_queue_jobs`` of the consumed queues, read through a blocking client at each scrape."""

    def __init__(self, rsmq: Rsmq, queues: list[str]) -> None:
        self.rsmq, self.queues = rsmq, queues

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "pqueue_queue_jobs", "Jobs stored per queue and status.", labels=["queue", "status"]
        )
        for queue in self.queues:
            try:
                attrs = self.rsmq.get_queue_attributes(queue)
            except PQueueError:  # not made yet (a dead queue), or Redis away: no sample
                continue
            family.add_metric([queue, "visible"], attrs.msgs - attrs.hiddenmsgs)
            family.add_metric([queue, "hidden"], attrs.hiddenmsgs)
        yield family
