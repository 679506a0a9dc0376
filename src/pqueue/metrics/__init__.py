"""Prometheus metrics for pqueue (the ``metrics`` extra: ``pip install 'pqueue-jobs[metrics]'``).

- :class:`JobMetrics` is a :class:`~pqueue.middleware.Middleware`: give it to a ``Worker``
  (job counters, run and wait histograms, jobs in flight, recoveries) and to a ``Client``
  (jobs enqueued). It only listens to the events the worker and client emit.
- :class:`QueueCollector` reads the broker's stats once per scrape (jobs per queue and
  status, the age of the oldest pending job, live workers).
- :class:`MetricsServer` serves ``/metrics``, ``/healthz`` and ``/readyz`` on a thread;
  ``pqueue worker --metrics-port`` wires all three (see docs/metrics.md).

Importing this package imports ``prometheus_client``; ``import pqueue`` never does.
"""

from pqueue.metrics.collector import QueueCollector
from pqueue.metrics.events import BUCKETS, OUTCOME_LABELS, JobMetrics
from pqueue.metrics.server import MetricsServer

__all__ = ["BUCKETS", "OUTCOME_LABELS", "JobMetrics", "MetricsServer", "QueueCollector"]
