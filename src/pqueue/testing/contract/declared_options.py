"""A task's declared options reach its jobs wherever they were enqueued (ADR 0157).

A job enqueued without the router (another process, the CLI, HTTP, another language)
records which run-time options its producer left unset, and the worker running it takes
those from its handler: the job's own value first, then the handler's declaration, then
the default. Jobs run through the worker's own executor and settlement
(:func:`pqueue.testing.burst.run_broker_until_empty`), so what is counted is what a
worker does, on each backend's storage and read paths (enqueue, batch enqueue, flows,
hand-off, claim, get_job).
"""

from __future__ import annotations

import asyncio

import pytest

from pqueue.broker import Claimer, FullBroker
from pqueue.job import Job, JobStatus
from pqueue.middleware import Outcome
from pqueue.router import Router
from pqueue.spec import DEFAULT_MAX_RETRIES, build_spec, build_specs
from pqueue.task import Task
from pqueue.testing.burst import BurstResult, run_broker_until_empty
from pqueue.testing.contract.helpers import LEASE, WORKER, OpenAnother, waiting_claimer

DECLARED = "contract:declared"
"""Declares ``max_retries=1`` and a timeout; always fails."""
UNDECLARED = "contract:undeclared"
"""Declares neither; always fails."""
DECLARED_RETRIES = 1
DECLARED_TIMEOUT = 120.0
BOTH_UNSET = frozenset({"max_retries", "timeout"})


def _no_wait(attempt: int, error: BaseException, job: Job) -> float:
    """Retry at once: the test's clock does not move."""
    return 0.0


def _router(seen: list[Job]) -> Router:
    """The two tasks; each records the job its handler was given, then fails."""
    router = Router()

    async def fail(job: Job) -> None:
        seen.append(job)
        raise RuntimeError("always")

    router.task(DECLARED, max_retries=DECLARED_RETRIES, timeout=DECLARED_TIMEOUT, retry=_no_wait)(fail)
    router.task(UNDECLARED, retry=_no_wait)(fail)
    return router


async def _run(broker: FullBroker, seen: list[Job]) -> BurstResult:
    return await run_broker_until_empty(broker, _router(seen), lease=LEASE)


def _runs(result: BurstResult, job_id: str) -> list[Outcome]:
    return [report.outcome for report in result if report.job.id == job_id]


def _until_dead(runs: int) -> list[Outcome]:
    return [Outcome.RETRY] * (runs - 1) + [Outcome.DEAD]


@pytest.mark.asyncio
class DeclaredOptionsContract:
    async def test_a_job_enqueued_without_the_router_takes_its_handlers_max_retries(
        self, broker: FullBroker
    ) -> None:
        spec = Task(DECLARED, {"card": 1}).to_spec()  # what a Client without router= sends
        [result] = await broker.enqueue([spec])
        stored = await broker.get_job(result.id)
        assert stored.unset == BOTH_UNSET  # stored as defaults, and known to be
        assert stored.max_retries == DEFAULT_MAX_RETRIES
        seen: list[Job] = []
        ran = await _run(broker, seen)
        assert _runs(ran, result.id) == _until_dead(DECLARED_RETRIES + 1)
        # the handler saw the values that applied
        assert {(job.max_retries, job.timeout) for job in seen} == {(DECLARED_RETRIES, DECLARED_TIMEOUT)}
        dead = await broker.get_job(result.id)
        assert (dead.status, dead.attempt) == (JobStatus.DEAD, DECLARED_RETRIES + 1)

    async def test_an_explicit_value_beats_the_handlers(self, broker: FullBroker) -> None:
        [result] = await broker.enqueue([Task(DECLARED, max_retries=2, timeout=5.0).to_spec()])
        assert (await broker.get_job(result.id)).unset == frozenset()
        seen: list[Job] = []
        ran = await _run(broker, seen)
        assert _runs(ran, result.id) == _until_dead(3)
        assert {(job.max_retries, job.timeout) for job in seen} == {(2, 5.0)}

    async def test_one_option_set_the_other_left_to_the_handler(self, broker: FullBroker) -> None:
        [result] = await broker.enqueue([Task(DECLARED, timeout=5.0).to_spec()])
        assert (await broker.get_job(result.id)).unset == frozenset({"max_retries"})
        seen: list[Job] = []
        ran = await _run(broker, seen)
        assert _runs(ran, result.id) == _until_dead(DECLARED_RETRIES + 1)
        assert {(job.max_retries, job.timeout) for job in seen} == {(DECLARED_RETRIES, 5.0)}

    async def test_without_either_the_default_applies(self, broker: FullBroker) -> None:
        [result] = await broker.enqueue([Task(UNDECLARED).to_spec()])
        seen: list[Job] = []
        ran = await _run(broker, seen)
        assert _runs(ran, result.id) == _until_dead(DEFAULT_MAX_RETRIES + 1)
        assert {(job.max_retries, job.timeout) for job in seen} == {(DEFAULT_MAX_RETRIES, None)}

    async def test_a_job_stored_without_the_record_keeps_its_stored_values(self, broker: FullBroker) -> None:
        """What an older pqueue stored (no record of unset options): its values hold, as before."""
        [result] = await broker.enqueue([build_spec(DECLARED)])
        assert (await broker.get_job(result.id)).unset == frozenset()
        ran = await _run(broker, [])
        assert _runs(ran, result.id) == _until_dead(DEFAULT_MAX_RETRIES + 1)

    async def test_batches_carry_each_jobs_record(self, broker: FullBroker) -> None:
        """A batch that shares its options (``enqueue_map``), and one that mixes jobs with
        and without unset options: each job keeps its own."""
        shared = build_specs(DECLARED, [1, 2], unset=Task(DECLARED).unset())
        mixed = [
            Task(DECLARED, 3).to_spec(),
            Task(DECLARED, 4, max_retries=0).to_spec(),
            build_spec(DECLARED, 5),
        ]
        results = await broker.enqueue([*shared, *mixed])
        unset = [(await broker.get_job(r.id)).unset for r in results]
        assert unset == [BOTH_UNSET, BOTH_UNSET, BOTH_UNSET, frozenset({"timeout"}), frozenset()]
        ran = await _run(broker, [])
        runs = [len(_runs(ran, r.id)) for r in results]
        assert runs == [2, 2, 2, 1, DEFAULT_MAX_RETRIES + 1]

    async def test_a_job_that_waits_for_a_parent_keeps_its_record(self, broker: FullBroker) -> None:
        parent = build_spec(UNDECLARED, max_retries=0)
        child = Task(DECLARED, depends_on=(parent.id,), on_parent_failure="run").to_spec()
        await broker.enqueue_flow([parent, child])
        assert (await broker.get_job(child.id)).unset == BOTH_UNSET
        ran = await _run(broker, [])
        assert _runs(ran, parent.id) == [Outcome.DEAD]
        assert _runs(ran, child.id) == _until_dead(DECLARED_RETRIES + 1)

    async def test_a_handed_off_job_keeps_its_record(
        self, broker: FullBroker, open_broker: OpenAnother
    ) -> None:
        """A claimer waiting when the job is enqueued: handed the job (``HANDOFF``) or woken
        to claim it, it gets the record either way."""
        producer = await open_broker()
        waiter = await waiting_claimer(broker, Claimer(WORKER, limit=1, lease_for=LEASE))
        spec = Task(DECLARED, {"card": 2}).to_spec()
        await producer.enqueue([spec])
        assert await asyncio.wait_for(waiter, 10) is True
        [lease] = await broker.claim(["default"], worker_id=WORKER, limit=1, lease_for=LEASE)
        assert (lease.job.id, lease.job.unset) == (spec.id, BOTH_UNSET)
        assert await broker.ack([lease]) == [True]

    async def test_every_read_path_returns_the_record(self, broker: FullBroker) -> None:
        """Listings and claims read the record back as get_job does."""
        specs = [Task(DECLARED, None, max_retries=1).to_spec(), Task(DECLARED, queue="other").to_spec()]
        await broker.enqueue(specs)
        listed = {job.id: job.unset for job in (await broker.list_jobs(JobStatus.PENDING)).jobs}
        assert listed == {specs[0].id: frozenset({"timeout"}), specs[1].id: BOTH_UNSET}
        leases = await broker.claim(["default", "other"], worker_id=WORKER, limit=2, lease_for=LEASE)
        assert {lease.job.id: lease.job.unset for lease in leases} == listed
