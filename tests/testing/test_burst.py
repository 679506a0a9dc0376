"""``run_until_empty``: due jobs run to their end through the worker's own code, in order."""

from __future__ import annotations

import pytest

from pqueue import AsyncClient, Client, JobStatus, Router
from pqueue.clock import ManualClock
from pqueue.errors import SkipRetry
from pqueue.job import Job
from pqueue.testing import Outcome, run_until_empty, run_until_empty_async


def _router() -> Router:
    router = Router()

    @router.task("order:place")
    def place(job: Job) -> dict[str, int]:
        ship.enqueue({"order": job.payload["order"]})
        return {"order": job.payload["order"]}

    @router.task("order:ship", queue="shipping")
    def ship_order(job: Job) -> None:
        return None

    ship = ship_order

    @router.task("order:refuse", max_retries=0)
    def refuse(job: Job) -> None:
        raise SkipRetry("out of stock")

    @router.task("order:flaky", max_retries=3)
    def flaky(job: Job) -> str:
        if job.attempt < 2:
            raise RuntimeError(f"try {job.attempt}")
        return "ok"

    return router


def test_runs_due_jobs_and_the_jobs_they_enqueue(pqueue_client: Client) -> None:
    router = _router()
    router.use(pqueue_client)
    [placed] = [pqueue_client.enqueue("order:place", {"order": 7})]
    result = run_until_empty(pqueue_client, router)
    assert [(r.job.type, r.outcome) for r in result] == [
        ("order:place", Outcome.COMPLETED),
        ("order:ship", Outcome.COMPLETED),
    ]
    assert pqueue_client.result(placed.id) == {"order": 7}
    assert run_until_empty(pqueue_client, router).reports == ()  # nothing left


def test_failures_end_as_a_real_worker_ends_them(pqueue_memory_dsn: str) -> None:
    clock = ManualClock()
    router = _router()
    with Client(pqueue_memory_dsn, clock=clock) as client:
        router.use(client)
        refused = client.enqueue("order:refuse", {})
        flaky = client.enqueue("order:flaky", {})
        unknown = client.enqueue("order:nobody", {})
        first = run_until_empty(client, router)
        assert first.outcomes == {Outcome.DEAD: 2, Outcome.RETRY: 1}
        assert [str(e) for e in first.errors][:2] == ["out of stock", "try 1"]
        assert client.get_job(refused.id).status is JobStatus.DEAD
        assert client.get_job(unknown.id).status is JobStatus.DEAD  # not handed back for later
        assert client.get_job(flaky.id).status is JobStatus.RETRY  # its retry is not due
        [retry] = first.with_outcome("retry")
        assert retry.retry_in is not None
        clock.advance(retry.retry_in + 0.001)
        second = run_until_empty(client, router)
        assert [r.outcome for r in second] == [Outcome.COMPLETED]
        assert client.result(flaky.id) == "ok"


def test_a_job_that_enqueues_itself_forever_fails_the_test(pqueue_client: Client) -> None:
    router = Router()

    @router.task("loop")
    def again(job: Job) -> None:
        again.enqueue(None)

    router.use(pqueue_client)
    pqueue_client.enqueue("loop")
    with pytest.raises(AssertionError, match="ran 5 jobs and more were still due"):
        run_until_empty(pqueue_client, router, max_jobs=5)


def test_only_the_queues_asked_for(pqueue_client: Client) -> None:
    router = _router()
    router.use(pqueue_client)
    pqueue_client.enqueue("order:ship", {}, queue="shipping")
    pqueue_client.enqueue("order:flaky", {}, queue="elsewhere")
    result = run_until_empty(pqueue_client, router, queues=["shipping"])
    assert [r.job.queue for r in result] == ["shipping"]


def test_the_blocking_form_refuses_an_async_client(pqueue_memory_dsn: str) -> None:
    with pytest.raises(TypeError, match="run_until_empty_async"):
        run_until_empty(AsyncClient(pqueue_memory_dsn), Router())  # type: ignore[arg-type]


async def test_async_form_with_async_handlers(pqueue_async_client: AsyncClient) -> None:
    router = Router()
    seen: list[int] = []

    @router.task("count")
    async def count(job: Job) -> int:
        seen.append(job.payload)
        return job.payload * 2

    ids = [(await pqueue_async_client.enqueue("count", n)).id for n in range(3)]
    result = await run_until_empty_async(pqueue_async_client, router)
    assert seen == [0, 1, 2] and result.outcomes == {Outcome.COMPLETED: 3}
    assert [await pqueue_async_client.result(i) for i in ids] == [0, 2, 4]


async def test_every_backend(backend_dsn: str) -> None:
    """The kit speaks only the public client and the seam: it runs on every backend."""
    router = _router()
    async with AsyncClient(backend_dsn) as client:
        router.use(backend_dsn)
        await client.enqueue("order:place", {"order": 1})
        result = await run_until_empty_async(client, router)
        assert [r.job.type for r in result.with_outcome(Outcome.COMPLETED)] == ["order:place", "order:ship"]
    router.close()


def test_children_run_once_their_parents_completed(pqueue_client: Client) -> None:
    router = Router()
    order: list[str] = []

    @router.task("step")
    def step(job: Job) -> str:
        order.append(job.payload)
        return str(job.payload)

    parent = pqueue_client.enqueue("step", "parent")
    child = pqueue_client.enqueue("step", "child", depends_on=[parent.id])
    result = run_until_empty(pqueue_client, router)
    assert order == ["parent", "child"] and result.outcomes == {Outcome.COMPLETED: 2}
    assert pqueue_client.get_job(child.id).status is JobStatus.COMPLETED
