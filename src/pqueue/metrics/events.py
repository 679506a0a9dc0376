"""Job metrics from the worker's and the client's lifecycle events (a middleware).

Counters and histograms move as middleware hooks fire; nothing in the worker knows
metrics exist. A hook only adds to plain running totals (:mod:`.tally`, one dict lookup
and an addition); the prometheus-client metrics catch up with them whenever the registry
is collected (a scrape) and, in a pool's child, every second.

Outcomes (``pqueue_jobs_processed_total{outcome}``): ``succeeded``, ``failed`` (will be
retried), ``dead``, ``cancelled`` (handler cut short by a drain past its timeout, job
handed back), ``duplicate`` (idempotency key already done, not run) and ``released``
(handed back unrun: drain, busy idempotency key, unknown type). A delivery whose
settlement the broker refused (lease lost) is not counted: its job comes back through
recovery (``pqueue_jobs_recovered_total``) and is counted when it is processed again.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from pqueue.broker import RecoveryReport
from pqueue.job import EnqueueResult, Job, JobSpec
from pqueue.metrics.labels import DEFAULT_LIMIT, BoundedValues
from pqueue.metrics.tally import CountTally, HistogramTally, LevelTally
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

_JobTallies = tuple[LevelTally, HistogramTally, HistogramTally]
"""Of one (queue, type): jobs in flight, run time, wait time."""


class JobMetrics(Middleware):
    """Prometheus counters, histograms and the in-flight gauge, fed by middleware events.

    Give one instance to ``Worker(middleware=[...])`` and/or ``Client(middleware=[...])``.
    ``registry`` defaults to prometheus-client's global one; collecting it (a scrape)
    first brings the metrics up to date. With ``registry=None`` (a pool's child, whose
    values go to prometheus-client's multiprocess files) call :meth:`catch_up_every`.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = REGISTRY,
        *,
        buckets: Sequence[float] = BUCKETS,
        max_label_values: int = DEFAULT_LIMIT,
    ) -> None:
        self._lock = threading.Lock()
        if registry is not None:  # registered first: a collection catches up before reading
            registry.register(_CatchUpFirst(self.catch_up))
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
        self._bounds = sorted({float(b) for b in buckets} | {math.inf})
        self._queue = BoundedValues("queue", max_label_values)
        self._type = BoundedValues("type", max_label_values)
        self._running: dict[str, _JobTallies] = {}  # job id -> its tallies
        self._jobs: dict[tuple[str, str], _JobTallies] = {}
        self._levels: dict[str, LevelTally] = {}
        self._runs: dict[tuple[str, str], HistogramTally] = {}
        self._waits: dict[tuple[str, str], HistogramTally] = {}
        self._counts: dict[tuple[Counter, tuple[str, ...]], CountTally] = {}
        self._outcomes: dict[tuple[str, str, Outcome], CountTally | None] = {}
        self._tallies: list[CountTally | LevelTally | HistogramTally] = []

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
            self._count(self.enqueued, handler.queue, name)
            for outcome in OUTCOME_LABELS:
                self._outcome(handler.queue, name, outcome)
            self._count(self.recovered, handler.queue)
            self._per_job(handler.queue, name)
        self.catch_up()

    # -- producers ----------------------------------------------------------------------

    def after_enqueue(self, spec: JobSpec, result: EnqueueResult) -> None:
        if result.created:
            self._count(self.enqueued, spec.queue, spec.type).total += 1

    # -- workers --------------------------------------------------------------------------

    def before_job(self, job: Job) -> None:
        tallies = self._jobs.get((job.queue, job.type)) or self._per_job(job.queue, job.type)
        # run_at is the enqueue time, or the due time of a scheduled or retried job.
        wait = time.time() - job.run_at.timestamp()
        tallies[2].observe(wait if wait > 0.0 else 0.0)
        tallies[0].started += 1
        self._running[job.id] = tallies

    def after_job(self, report: JobReport) -> None:
        job = report.job
        tallies = self._running.pop(job.id, None)
        if tallies is not None:  # its handler started
            tallies[0].ended += 1
            if report.outcome not in _NOT_RUN:
                tallies[1].observe(report.duration)
        key = (job.queue, job.type, report.outcome)
        try:
            count = self._outcomes[key]
        except KeyError:  # first of its kind (free on the hit path)
            count = self._outcome(*key)
        if count is not None:
            count.total += 1

    def after_recover(self, report: RecoveryReport) -> None:
        for queue, jobs in report.queues.items():
            self._count(self.recovered, queue).total += jobs

    # -- catching up ------------------------------------------------------------------------

    def catch_up(self) -> None:
        """Bring the prometheus-client metrics up to date with the running totals."""
        with self._lock:
            for tally in list(self._tallies):
                tally.catch_up()

    def catch_up_every(self, interval: float = 1.0) -> Callable[[], None]:
        """Catch up every ``interval`` seconds on a daemon thread (a pool's child writes its
        multiprocess files this way); returns ``stop``, which catches up one last time."""
        stopped = threading.Event()

        def loop() -> None:
            while not stopped.wait(interval):
                self.catch_up()

        thread = threading.Thread(target=loop, name="pqueue-metrics-catch-up", daemon=True)
        thread.start()

        def stop() -> None:
            stopped.set()
            thread.join(5)
            self.catch_up()

        return stop

    # -- tallies, one per series (raw values bounded to labels once) -------------------------

    def _per_job(self, queue: str, job_type: str) -> _JobTallies:
        labels = (self._queue(queue), self._type(job_type))
        level = self._levels.get(labels[0])
        if level is None:
            level = self._levels[labels[0]] = self._add(LevelTally(self.in_flight.labels(labels[0])))
        run = self._runs.get(labels)
        if run is None:
            run = self._runs[labels] = self._add(
                HistogramTally(self.run_seconds.labels(*labels), self._bounds)
            )
        wait = self._waits.get(labels)
        if wait is None:
            child = self.wait_seconds.labels(*labels)
            wait = self._waits[labels] = self._add(HistogramTally(child, self._bounds))
        tallies = (level, run, wait)
        if len(self._jobs) < _RAW_KEYS:
            self._jobs[queue, job_type] = tallies
        return tallies

    def _outcome(self, queue: str, job_type: str, outcome: Outcome) -> CountTally | None:
        label = OUTCOME_LABELS.get(outcome)
        count = None if label is None else self._count(self.processed, queue, job_type, label)
        if len(self._outcomes) < _RAW_KEYS:
            self._outcomes[queue, job_type, outcome] = count
        return count

    def _count(self, counter: Counter, queue: str, job_type: str | None = None, *rest: str) -> CountTally:
        labels = (
            (self._queue(queue),) if job_type is None else (self._queue(queue), self._type(job_type), *rest)
        )
        count = self._counts.get((counter, labels))
        if count is None:
            count = self._counts[counter, labels] = self._add(CountTally(counter.labels(*labels)))
        return count

    def _add(self, tally: _T) -> _T:
        self._tallies.append(tally)
        return tally


_T = TypeVar("_T", CountTally, LevelTally, HistogramTally)

_RAW_KEYS = 10_000
"""Raw (queue, type) keys remembered for the fast path; beyond, each event maps its labels again."""


class _CatchUpFirst(Collector):
    """Registered before the metrics: each collection of the registry catches them up first."""

    def __init__(self, catch_up: Callable[[], None]) -> None:
        self._catch_up = catch_up

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        self._catch_up()
        return []
