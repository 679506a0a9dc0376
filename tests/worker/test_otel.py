"""OpenTelemetry middleware: a producer span per enqueue whose context travels in job.meta,
and a consumer span per delivery linked to it, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pqueue import AsyncClient, Job, Router, SkipRetry
from pqueue.clock import ManualClock
from pqueue.job import JobStatus
from pqueue.otel import OpenTelemetryMiddleware
from tests.worker.conftest import MakeWorker, eventually, running, settled


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


async def test_enqueue_and_delivery_are_traced_and_linked(
    client: AsyncClient,
    make_worker: MakeWorker,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    clock: ManualClock,
) -> None:
    tracing = OpenTelemetryMiddleware(provider)
    router = Router()
    inner: list[trace.SpanContext] = []

    @router.task("traced")
    async def traced(job: Job) -> None:
        with provider.get_tracer("app").start_as_current_span("inside") as span:
            inner.append(span.get_span_context())

    @router.task("doomed")
    def doomed(job: Job) -> None:
        raise SkipRetry("no way")

    async with AsyncClient(client.dsn, clock=clock, middleware=[tracing]) as producer:
        ok = await producer.enqueue("traced", {"n": 1})
        bad = await producer.enqueue("doomed")
    [send_ok, send_bad] = _named(exporter, "send default")
    assert send_ok.kind is SpanKind.PRODUCER and send_ok.attributes is not None
    assert dict(send_ok.attributes) == {
        "messaging.system": "pqueue",
        "messaging.destination.name": "default",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.message.id": ok.id,
        "pqueue.job.type": "traced",
        "pqueue.created": True,
    }
    stored = await client.get_job(ok.id)
    assert stored.meta["traceparent"].split("-")[2] == f"{send_ok.context.span_id:016x}"

    async with running(make_worker(router, middleware=[tracing])):
        await settled(client, ok.id, JobStatus.COMPLETED)
        await settled(client, bad.id, JobStatus.DEAD)
        await eventually(lambda: len(_named(exporter, "process default")) == 2, what="consumer spans")
    spans = {dict(s.attributes or {})["messaging.message.id"]: s for s in _named(exporter, "process default")}
    run_ok, run_bad = spans[ok.id], spans[bad.id]
    assert run_ok.kind is SpanKind.CONSUMER and run_ok.parent is None  # a root, linked to the send
    assert [link.context.span_id for link in run_ok.links] == [send_ok.context.span_id]
    assert run_ok.attributes is not None and dict(run_ok.attributes) == {
        "messaging.system": "pqueue",
        "messaging.destination.name": "default",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.message.id": ok.id,
        "pqueue.job.type": "traced",
        "pqueue.job.attempt": 1,
        "pqueue.outcome": "completed",
    }
    assert run_ok.status.status_code is StatusCode.UNSET
    [inside] = _named(exporter, "inside")
    assert inside.parent is not None and inside.parent.span_id == run_ok.context.span_id
    assert [link.context.span_id for link in run_bad.links] == [send_bad.context.span_id]
    assert run_bad.status.status_code is StatusCode.ERROR and "no way" in (run_bad.status.description or "")
    assert [e.name for e in run_bad.events] == ["exception"]


async def test_child_of_producer_puts_the_job_in_the_enqueuer_trace(
    client: AsyncClient,
    make_worker: MakeWorker,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    clock: ManualClock,
) -> None:
    router = Router()

    @router.task("traced")
    def traced(job: Job) -> None: ...

    tracing = OpenTelemetryMiddleware(provider, child_of_producer=True)
    async with AsyncClient(client.dsn, clock=clock, middleware=[tracing]) as producer:
        with provider.get_tracer("app").start_as_current_span("request") as request:
            job = await producer.enqueue("traced")
    async with running(make_worker(router, middleware=[tracing])):
        await settled(client, job.id, JobStatus.COMPLETED)
        await eventually(lambda: _named(exporter, "process default"), what="consumer span")
    [send] = _named(exporter, "send default")
    [run] = _named(exporter, "process default")
    assert send.parent is not None and send.parent.span_id == request.get_span_context().span_id
    assert run.parent is not None and run.parent.span_id == send.context.span_id
    assert run.context.trace_id == request.get_span_context().trace_id
