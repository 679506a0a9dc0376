"""What ``pqueue worker --metrics-port`` runs: one exporter per worker process, or one per pool.

- One process: the worker's :class:`~pqueue.metrics.JobMetrics` write to a registry of
  their own; the exporter serves it with the broker gauges and the probes.
- ``--processes N`` (ADR 0085): prometheus-client's multiprocess mode. The supervisor
  makes a fresh directory, every child writes its metrics there
  (``PROMETHEUS_MULTIPROC_DIR``), and the supervisor alone serves the port: it merges
  the children's files at each scrape, adds the broker gauges once, and marks a child
  dead when it exits so its in-flight gauge stops counting while its counters stay. The
  directory is removed when the pool stops, so a restarted pool starts from zero (as a
  restarted single worker does; ``rate()`` handles the reset).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

from pqueue.metrics.collector import QueueCollector
from pqueue.metrics.events import JobMetrics
from pqueue.metrics.server import Check, MetricsServer

if TYPE_CHECKING:
    from pqueue.router import Router
    from pqueue.worker import Worker

log = logging.getLogger("pqueue.metrics")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
TOKEN_ENV = "PQUEUE_METRICS_TOKEN"
"""When set, ``/metrics`` needs ``Authorization: Bearer <token>`` (an environment variable
only: a command line is readable by anyone on the host)."""


class Exporter:
    """``registry`` plus the broker gauges and the probes, served on ``host:port``.

    The broker is reached through its own :class:`pqueue.Client` (its own connection and
    loop thread): scrapes and readiness probes never run on the worker's event loop.
    """

    def __init__(
        self,
        dsn: str,
        registry: CollectorRegistry,
        *,
        host: str,
        port: int,
        live: Check,
        extra: Collector | None = None,
    ) -> None:
        from pqueue.sync import Client

        self.client = Client(dsn)
        registry.register(QueueCollector(self.client.stats))
        if extra is not None:
            registry.register(extra)
        self.server = MetricsServer(
            registry,
            host=host,
            port=port,
            live=live,
            ready=self._ready,
            token=os.environ.get(TOKEN_ENV) or None,
        )

    def _ready(self) -> bool:
        """The broker answers and its schema is current (``Client.health``; raises if not)."""
        self.client.health()
        return True

    def __enter__(self) -> Exporter:
        self.server.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.stop()
        self.client.close()


class WorkerMetrics:
    """The metrics of one worker process: its :class:`JobMetrics` (the router's series
    declared at 0), served by an exporter of its own, or -- a pool's child -- written to
    the pool's shared files (``registry`` None) and caught up every second."""

    def __init__(self, router: Router, *, pool_child: bool) -> None:
        self.registry = None if pool_child else CollectorRegistry()
        self.jobs = JobMetrics(self.registry)
        self.jobs.declare(router)

    @contextmanager
    def serving(self, worker: Worker, dsn: str, *, host: str, port: int | None) -> Iterator[None]:
        """For the body of the block (the worker's run): serve, or keep the shared files current."""
        if self.registry is None:
            stop = self.jobs.catch_up_every(1.0)
            try:
                yield
            finally:
                stop()
            return
        assert port is not None
        with Exporter(dsn, self.registry, host=host, port=port, live=worker.responsive):
            yield


class PoolMetrics:
    """The shared directory of a pool's metrics; :meth:`exporter` serves what its children wrote."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="pqueue-metrics-")

    @property
    def child_env(self) -> dict[str, str]:
        """What the children's environment needs (set before their interpreter starts, as
        prometheus-client picks its value store at import)."""
        return {MULTIPROC_ENV: self.directory}

    def exporter(
        self, dsn: str, *, host: str, port: int, live: Check, extra: Collector | None = None
    ) -> Exporter:
        """Serve the children's merged metrics, the broker gauges, and ``extra`` (the pool's own,
        :class:`~pqueue.metrics.pool.PoolCollector`)."""
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.directory)  # type: ignore[no-untyped-call]  # untyped upstream
        return Exporter(dsn, registry, host=host, port=port, live=live, extra=extra)

    def process_dead(self, pid: int) -> None:
        """A child exited: its live gauges (jobs in flight) stop counting; its counters stay."""
        from prometheus_client.multiprocess import mark_process_dead

        mark_process_dead(pid, self.directory)  # type: ignore[no-untyped-call]  # untyped upstream

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
