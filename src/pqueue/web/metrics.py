"""``/metrics`` of the API process: the worker's metric families plus HTTP requests.

Nothing here defines a second registry of job metrics: the app's client carries
:class:`pqueue.metrics.JobMetrics` (``pqueue_jobs_enqueued_total`` for every job the API
stores), the broker gauges come from :class:`pqueue.metrics.QueueCollector`, and this
module adds only the HTTP families:

- ``pqueue_http_requests_total{method,route,status}`` (counter),
- ``pqueue_http_request_seconds{method,route}`` (histogram, :data:`pqueue.metrics.BUCKETS`).

``route`` is the route's template (``/jobs/{job_id}``), never the raw path, so ids do not
make series; unmatched paths count as ``unmatched``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from pqueue.client import AsyncClient, Stats
from pqueue.metrics import BUCKETS, QueueCollector
from pqueue.web.guard import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"


class HttpMetrics:
    """Pure ASGI middleware counting and timing every HTTP request into ``registry``."""

    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "pqueue_http_requests_total",
            "HTTP requests answered by the API, by route template and status code.",
            ["method", "route", "status"],
            registry=registry,
        )
        self.seconds = Histogram(
            "pqueue_http_request_seconds",
            "Seconds from a request's arrival to the end of its answer, by route template.",
            ["method", "route"],
            registry=registry,
            buckets=BUCKETS,
        )
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def watching_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watching_send)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or UNMATCHED
            counter, timer = self._child(scope["method"], template, status)
            counter.inc()
            timer.observe(time.perf_counter() - started)

    def _child(self, method: str, route: str, status: int) -> tuple[Any, Any]:
        key = (method if method in _METHODS else "other", route, str(status))
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = (self.requests.labels(*key), self.seconds.labels(*key[:2]))
        return child


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsPage:
    """Renders the registry; the broker gauges read ``Client.stats()`` once per scrape.

    prometheus-client collects synchronously, so the stats are fetched on the event loop
    first and handed to :class:`QueueCollector` (which leaves the gauges out, and logs
    once, when the broker cannot answer).
    """

    def __init__(self, client: AsyncClient, registry: CollectorRegistry) -> None:
        self.client = client
        self.registry = registry
        self._stats: Stats | Exception | None = None
        self._lock = asyncio.Lock()
        registry.register(QueueCollector(self._snapshot))

    def _snapshot(self) -> Stats:
        if isinstance(self._stats, Exception) or self._stats is None:
            raise self._stats or RuntimeError("no stats fetched")
        return self._stats

    async def render(self) -> tuple[bytes, str]:
        async with self._lock:  # one scrape at a time: the snapshot belongs to it
            try:
                self._stats = await self.client.stats()
            except Exception as exc:  # noqa: BLE001 - the collector reports it and drops the gauges
                self._stats = exc
            try:
                return generate_latest(self.registry), CONTENT_TYPE_LATEST
            finally:
                self._stats = None
