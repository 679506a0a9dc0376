"""OpenTelemetry tracing for pqueue jobs (``pip install 'pqueue-jobs[otel]'``; docs/tracing.md).

:class:`OpenTelemetryMiddleware` on a Client opens a PRODUCER span per enqueued job
(``send <queue>``) and injects its trace context into the job's ``meta`` (W3C
``traceparent``, through the globally configured propagator). On a Worker it opens a
CONSUMER span per delivery (``process <queue>``), linked to the producer's span, current
while the handler runs (spans the handler opens are its children) and ended once the job
is settled. Attributes follow the OpenTelemetry messaging conventions (ADR 0102).
This module imports ``opentelemetry``; ``import pqueue`` never imports it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from pqueue.job import EnqueueResult, Job, JobSpec
from pqueue.middleware import JobReport, Middleware, Outcome
from pqueue.spec import MAX_META_ENTRIES, META_KEY_RE

SYSTEM = "pqueue"
"""The ``messaging.system`` of every span."""
MAX_OPEN_SENDS = 10_000
"""Producer spans awaiting their ``after_enqueue`` at most (an enqueue that raised never
reaches it; the oldest such span is ended, marked unconfirmed, past this many)."""
MAX_META_VALUE = 1024
_FAILED = frozenset({Outcome.DEAD, Outcome.LOST})


def _attributes(operation: str, queue: str, job_id: str, job_type: str) -> dict[str, Any]:
    return {
        "messaging.system": SYSTEM,
        "messaging.destination.name": queue,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.message.id": job_id,
        "pqueue.job.type": job_type,
    }


class OpenTelemetryMiddleware(Middleware):
    """Trace enqueues (Client) and deliveries (Worker); give the same class to both.

    ``tracer_provider`` defaults to the global one. ``child_of_producer=True`` makes each
    consumer span a child of the producer span (one trace from request to job) instead of
    the root of its own trace with a link to it, the messaging conventions' default.
    """

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, *, child_of_producer: bool = False
    ):
        from pqueue import __version__

        self._tracer = trace.get_tracer("pqueue", __version__, tracer_provider=tracer_provider)
        self._child = child_of_producer
        self._sending: OrderedDict[str, Span] = OrderedDict()
        self._processing: dict[str, Span] = {}

    # -- producer -----------------------------------------------------------------------

    def before_enqueue(self, spec: JobSpec) -> JobSpec:
        span = self._tracer.start_span(
            f"send {spec.queue}",
            kind=SpanKind.PRODUCER,
            attributes=_attributes("send", spec.queue, spec.id, spec.type),
        )
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        meta = dict(spec.meta)
        for key, value in carrier.items():
            if META_KEY_RE.match(key) and len(value) <= MAX_META_VALUE and len(meta) < MAX_META_ENTRIES:
                meta.setdefault(key, value)
        self._sending[spec.id] = span
        while len(self._sending) > MAX_OPEN_SENDS:
            _, stale = self._sending.popitem(last=False)
            stale.set_status(Status(StatusCode.ERROR, "enqueue not confirmed"))
            stale.end()
        return replace(spec, meta=meta)

    def after_enqueue(self, spec: JobSpec, result: EnqueueResult) -> None:
        span = self._sending.pop(spec.id, None)
        if span is None:
            return
        span.set_attribute("pqueue.created", result.created)
        if result.id != spec.id:  # a unique key refused it: the job that holds the key
            span.set_attribute("messaging.message.id", result.id)
        span.end()

    # -- consumer -----------------------------------------------------------------------

    def before_job(self, job: Job) -> None:
        sent = propagate.extract(dict(job.meta))
        producer = trace.get_current_span(sent).get_span_context()
        links = [Link(producer)] if producer.is_valid else []
        attributes = _attributes("process", job.queue, job.id, job.type)
        attributes["pqueue.job.attempt"] = job.attempt
        span = self._tracer.start_span(
            f"process {job.queue}",
            context=sent if self._child else otel_context.Context(),
            kind=SpanKind.CONSUMER,
            links=links,
            attributes=attributes,
        )
        self._processing[job.id] = span
        # before_job runs in the job's own task, whose context the handler sees (async) or
        # gets a copy of (sync): the span is current there, and goes with the task.
        otel_context.attach(trace.set_span_in_context(span))

    def on_error(self, job: Job, error: BaseException) -> None:
        span = self._processing.get(job.id)
        if span is not None:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))

    def after_job(self, report: JobReport) -> None:
        span = self._processing.pop(report.job.id, None)
        if span is None:  # handed back without running: nothing was traced
            return
        span.set_attribute("pqueue.outcome", report.outcome.value)
        if report.outcome in _FAILED and report.error is None:
            span.set_status(Status(StatusCode.ERROR, report.reason or report.outcome.value))
        span.end()
