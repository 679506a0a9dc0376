"""Job metrics from the worker's and the client's lifecycle events (a middleware).

Counters and histograms move as middleware hooks fire; nothing in the worker knows
metrics exist. Label children are cached per (queue, type[, outcome]) so an event costs
a dict lookup and an increment, not ``labels()``'s locking and validation.

Outcomes (``pqueue_jobs_processed_total{outcome}``): ``succeeded``, ``failed`` (will be
retried), ``dead``, ``cancelled`` (handler cut short by a drain past its timeout, job
handed back), ``duplicate`` (idempotency key already done, not run) and ``released``
(handed back unrun: drain, busy idempotency key, unknown type). A delivery whose
settlement the broker refused (lease lost) is not counted: its job comes back through
recovery (``pqueue_jobs_recovered_total``) and is counted when it is processed again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from pqueue.broker import RecoveryReport
from pqueue.job import EnqueueResult, Job, JobSpec
from pqueue.metrics.labels import DEFAULT_LIMIT, BoundedValues
from pqueue.middleware import JobReport, Middleware, Outcome
from pqueue.router import Router

BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
)  # fmt: skip
"""Histogram edges in seconds: 0.5 ms to 1 h in steps of about 2.5x (19 edges), so both a
sub-millisecond handler and an hour-long report land in a bucket of their own size."""

OUTCOME_LABELS: dict[Outcome, str] = {
    Outcome.COMPLETED: "succeeded",
    Outcome.RETRY: "failed",
    Outcome.DEAD: "dead",
    Outcome.CANCELLED: "cancelled",
    Outcome.DUPLICATE: "duplicate",
    Outcome.RELEASED: "released",
}
"""The ``outcome`` label of each settled delivery; ``Outcome.LOST`` is not counted."""

_NOT_RUN = (Outcome.RELEASED, Outcome.CANCELLED, Outcome.DUPLICATE)
"""Outcomes whose report carries no handler run time."""


class JobMetrics(Middleware):
    """Prometheus counters, histograms and the in-flight gauge, fed by middleware events.

    Give one instance to ``Worker(middleware=[...])`` and/or ``Client(middleware=[...])``.
    ``registry`` defaults to prometheus-client's global one; under its multiprocess mode
    (``PROMETHEUS_MULTIPROC_DIR``) the values go to the shared files whatever the registry.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = REGISTRY,
        *,
        buckets: Sequence[float] = BUCKETS,
        max_label_values: int = DEFAULT_LIMIT,
    ) -> None:
        labels = ["queue", "type"]
        self.enqueued = Counter(
            "pqueue_jobs_enqueued_total",
            "Jobs stored by producers (duplicates refused by a unique key are not).",
            labels,
            registry=registry,
        )
        self.processed = Counter(
            "pqueue_jobs_processed_total",
            "Deliveries settled by workers, by outcome.",
            [*labels, "outcome"],
            registry=registry,
        )
        self.recovered = Counter(
            "pqueue_jobs_recovered_total",
            "Jobs taken back after their lease expired (a worker crashed or stalled), counted by the "
            "worker whose housekeeping took them back.",
            ["queue"],
            registry=registry,
        )
        self.run_seconds = Histogram(
            "pqueue_job_run_seconds", "Seconds handlers ran.", labels, registry=registry, buckets=buckets
        )
        self.wait_seconds = Histogram(
            "pqueue_job_wait_seconds",
            "Seconds from enqueue (or the due time of a scheduled or retried job) to the handler's start.",
            labels,
            registry=registry,
            buckets=buckets,
        )
        self.in_flight = Gauge(
            "pqueue_jobs_in_flight",
            "Handlers running now.",
            ["queue"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self._queue = BoundedValues("queue", max_label_values)
        self._type = BoundedValues("type", max_label_values)
        self._running: dict[str, Gauge] = {}  # job id -> its queue's in-flight child
        self._gauges: dict[str, Gauge] = {}
        self._timing: dict[tuple[str, str], tuple[Histogram, Histogram]] = {}
        self._counts: dict[tuple[str, str, str], Counter] = {}

    def declare(self, router: Router) -> None:
        """Create the series of every job type of ``router`` (in its handler's queue) at 0.

        Prometheus misses the first value of a new series: a counter that appears at 3
        shows no ``increase()``, so the first dead job of a type would never alert. The
        worker command declares its router at start-up; producers may do the same.
        """
        for name in router.names:
            handler = router.get(name)
            if handler is None:
                continue
            queue, job_type = self._queue(handler.queue), self._type(name)
            self.enqueued.labels(queue, job_type)
            for outcome in OUTCOME_LABELS.values():
                self.processed.labels(queue, job_type, outcome)
            self.recovered.labels(queue)
            self.in_flight.labels(queue)

    # -- producers ----------------------------------------------------------------------

    def after_enqueue(self, spec: JobSpec, result: EnqueueResult) -> None:
        if result.created:
            self.enqueued.labels(self._queue(spec.queue), self._type(spec.type)).inc()

    # -- workers --------------------------------------------------------------------------

    def before_job(self, job: Job) -> None:
        _, wait = self._timers(job)
        due = max(job.created_at, job.run_at).timestamp()
        wait.observe(max(0.0, time.time() - due))
        gauge = self._gauge(job.queue)
        gauge.inc()
        self._running[job.id] = gauge

    def after_job(self, report: JobReport) -> None:
        job = report.job
        gauge = self._running.pop(job.id, None)
        if gauge is not None:  # its handler started
            gauge.dec()
            if report.outcome not in _NOT_RUN:
                self._timers(job)[0].observe(report.duration)
        outcome = OUTCOME_LABELS.get(report.outcome)
        if outcome is not None:
            self._count(job, outcome).inc()

    def after_recover(self, report: RecoveryReport) -> None:
        for queue, jobs in report.queues.items():
            self.recovered.labels(self._queue(queue)).inc(jobs)

    # -- cached label children ------------------------------------------------------------

    def _timers(self, job: Job) -> tuple[Histogram, Histogram]:
        key = (job.queue, job.type)
        timers = self._timing.get(key)
        if timers is None:
            labels = (self._queue(job.queue), self._type(job.type))
            timers = self._timing[key] = (self.run_seconds.labels(*labels), self.wait_seconds.labels(*labels))
        return timers

    def _gauge(self, queue: str) -> Gauge:
        gauge = self._gauges.get(queue)
        if gauge is None:
            gauge = self._gauges[queue] = self.in_flight.labels(self._queue(queue))
        return gauge

    def _count(self, job: Job, outcome: str) -> Counter:
        key = (job.queue, job.type, outcome)
        counter = self._counts.get(key)
        if counter is None:
            labels = (self._queue(job.queue), self._type(job.type), outcome)
            counter = self._counts[key] = self.processed.labels(*labels)
        return counter
