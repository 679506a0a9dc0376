"""Run queued jobs to completion inside a test: ``run_until_empty(client, router)``.

What Celery's eager mode, RQ's burst worker and River's ``rivertest`` give their users,
without a second runner: each claimed job goes through the worker's own
:class:`~pqueue.worker.executor.Executor` and :class:`~pqueue.worker.settle.Settler`
(handler lookup, timeouts, ``Retry``/``SkipRetry``, the retry policy, idempotency keys,
result encoding, acks), so a test sees what a real worker would have done. What it
leaves out is what a test does not want: processes, signals, heartbeats, prefetch and
waiting for work. It runs one job at a time, in claim order, so tests are deterministic.

"Empty" means no job is due: a job that failed and waits for its retry, or one
scheduled for later, stays where it is (move a :class:`~pqueue.clock.ManualClock` and
call again to run it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pqueue.broker import FullBroker
from pqueue.client import AsyncClient
from pqueue.errors import ConfigError
from pqueue.job import Lease
from pqueue.middleware import JobReport, Middleware, MiddlewareChain, Outcome
from pqueue.router import Router
from pqueue.sync import Client
from pqueue.worker.config import UnknownTypePolicy, WorkerSettings
from pqueue.worker.executor import Executor
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import Settler, WorkerCounters
from pqueue.worker.threads import HandlerThreads

MAX_JOBS = 10_000
"""The most deliveries one call runs by default: a handler that enqueues itself forever
fails the test instead of hanging it."""


@dataclass(frozen=True)
class BurstResult:
    """What one :func:`run_until_empty` ran, in order: one :class:`JobReport` per delivery."""

    reports: tuple[JobReport, ...]

    def __len__(self) -> int:
        return len(self.reports)

    def __iter__(self) -> Iterator[JobReport]:
        return iter(self.reports)

    @property
    def outcomes(self) -> Counter[Outcome]:
        """How many deliveries ended each way, e.g. ``{Outcome.COMPLETED: 3}``."""
        return Counter(report.outcome for report in self.reports)

    def of_type(self, job_type: str) -> list[JobReport]:
        """The deliveries of jobs of ``job_type``."""
        return [report for report in self.reports if report.job.type == job_type]

    def with_outcome(self, outcome: Outcome | str) -> list[JobReport]:
        """The deliveries that ended as ``outcome`` (``"completed"``, ``"dead"``, ...)."""
        wanted = Outcome(outcome)
        return [report for report in self.reports if report.outcome is wanted]

    @property
    def errors(self) -> list[BaseException]:
        """The exceptions handlers raised, in order (retried and dead alike)."""
        return [report.error for report in self.reports if report.error is not None]


class _Collect(Middleware):
    def __init__(self) -> None:
        self.reports: list[JobReport] = []

    def after_job(self, report: JobReport) -> None:
        self.reports.append(report)


async def run_until_empty_async(
    client: AsyncClient,
    router: Router,
    *,
    queues: Sequence[str] | None = None,
    unknown_type: UnknownTypePolicy | str = UnknownTypePolicy.DEAD,
    middleware: Iterable[Middleware] = (),
    lease: float = 300.0,
    max_jobs: int = MAX_JOBS,
) -> BurstResult:
    """Run every due job of ``client``'s broker with ``router``'s handlers; see :func:`run_until_empty`."""
    broker = await client._ready()
    router.use_default(client.dsn)
    return await run_broker_until_empty(
        broker,
        router,
        queues=queues,
        unknown_type=unknown_type,
        middleware=middleware,
        lease=lease,
        max_jobs=max_jobs,
    )


async def run_broker_until_empty(
    broker: FullBroker,
    router: Router,
    *,
    queues: Sequence[str] | None = None,
    unknown_type: UnknownTypePolicy | str = UnknownTypePolicy.DEAD,
    middleware: Iterable[Middleware] = (),
    lease: float = 300.0,
    max_jobs: int = MAX_JOBS,
) -> BurstResult:
    """:func:`run_until_empty_async` on an opened broker (the contract suite's fixture)."""
    if max_jobs < 1:
        raise ConfigError(f"max_jobs must be at least 1, got {max_jobs!r}")
    settings = WorkerSettings.build(
        concurrency=1, queues=list(queues) if queues else None, lease=lease, unknown_type=unknown_type
    )
    collect = _Collect()
    chain = MiddlewareChain([collect, *middleware])
    book, counters, threads = LeaseBook(), WorkerCounters(), HandlerThreads("pqueue-burst")
    settler = Settler(broker, book, chain, counters, patience=lease)
    executor = Executor(
        broker=broker,
        router=router,
        settings=settings,
        book=book,
        threads=threads,
        settler=settler,
        middleware=chain,
        counters=counters,
    )
    settler.start()
    ran = 0
    try:
        while True:
            await broker.promote()
            names = list(queues) if queues else await broker.list_queues()
            leases: list[Lease] = []
            if names:
                leases = await broker.claim(names, worker_id=settings.worker_id, limit=1, lease_for=lease)
            if not leases:
                break
            if ran >= max_jobs:
                await settler.release(leases, reason="run_until_empty: max_jobs reached")
                raise AssertionError(
                    f"run_until_empty ran {ran} jobs and more were still due "
                    f"(a handler that enqueues itself?); raise max_jobs if that is expected"
                )
            book.add(leases)
            counters.claimed += len(leases)
            for one in leases:
                await executor.run(one)
                ran += 1
            await settler.flush()
    finally:
        await settler.close()
        threads.shutdown()
    return BurstResult(tuple(collect.reports))


def run_until_empty(
    client: Client | AsyncClient,
    router: Router,
    *,
    queues: Sequence[str] | None = None,
    unknown_type: UnknownTypePolicy | str = UnknownTypePolicy.DEAD,
    middleware: Iterable[Middleware] = (),
    lease: float = 300.0,
    max_jobs: int = MAX_JOBS,
) -> BurstResult:
    """Run every due job with ``router``'s handlers until none is due; return what ran.

    The blocking form, for a :class:`~pqueue.Client` (from ``async`` tests, await
    :func:`run_until_empty_async` with an :class:`~pqueue.AsyncClient`). Jobs run one at
    a time through the worker's own execution and settlement code, so retries,
    dead-lettering, timeouts, results and ``depends_on`` behave as under ``pqueue worker``.
    Jobs the handlers enqueue run too, when they are due.

    Args:
        queues: the queues to take jobs from; default: every queue that holds a job.
        unknown_type: what to do with a job of a type ``router`` does not know; the
            default, ``dead``, makes the mistake visible at once (a real worker hands it
            back for later, which in a test would look like nothing happened).
        middleware: job middleware to run, as a worker's would.
        lease: seconds each job stays leased (there is no heartbeat).
        max_jobs: fail with ``AssertionError`` once this many deliveries ran and more are due.

    Returns:
        A :class:`BurstResult`: one :class:`~pqueue.middleware.JobReport` per delivery,
        in the order they ran.
    """
    if isinstance(client, AsyncClient):
        raise TypeError(
            "run_until_empty takes a pqueue.Client; with an AsyncClient, await run_until_empty_async"
        )
    return client._call(
        lambda inner: run_until_empty_async(
            inner,
            router,
            queues=queues,
            unknown_type=unknown_type,
            middleware=middleware,
            lease=lease,
            max_jobs=max_jobs,
        )
    )
