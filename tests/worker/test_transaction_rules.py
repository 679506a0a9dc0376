"""``job.transaction()`` where it meets other rules: nesting, and a sync handler's timeout.

Whatever happens, the handler's rows and the job's status agree: rows of a run are there
exactly when that run completed the job, once (ADR 0158).

- **Nesting.** A block opened while another block of the same job is open is refused at
  its entry with ``NestedTransaction``, before anything is written: on Postgres the inner
  block used to commit the ack and the outer one to roll back with ``LeaseLost`` (its rows
  lost, the job completed); on SQLite the inner block waited for the outer one's lock
  until ``busy_timeout``.
- **Timeouts of sync handlers.** Until the block's commit begins, the timeout wins: the
  block rolls back, even when the handler swallowed the ``JobTimeout`` raised in its
  thread. Once it has begun, the worker waits for the commit and reports the job by its
  outcome: completed, never failed and retried.
"""

from __future__ import annotations

import contextlib
import time

from pqueue import AsyncClient, Job, JobStatus, JobTimeout, NestedTransaction, Router
from pqueue.clock import ManualClock
from tests.conftest import only_backends
from tests.worker.conftest import MakeWorker, eventually, running, settled
from tests.worker.txn_effects import SLOW_COMMIT, Effects, effects

__all__ = ["effects"]  # the fixture


@only_backends("postgres", "sqlite")
async def test_a_nested_block_is_refused_and_the_outer_one_rolls_back(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects
) -> None:
    router = Router()

    @router.task("nested")
    async def nested(job: Job) -> None:
        async with job.transaction() as outer:
            await effects.awrite(outer, job.id, "outer")
            async with job.transaction() as inner:
                await effects.awrite(inner, job.id, "inner")

    worker = make_worker(router)
    async with running(worker):
        job = await settled(client, (await client.enqueue("nested", {}, max_retries=0)).id)
    assert job.status is JobStatus.DEAD and job.last_error is not None
    assert job.last_error.kind == "NestedTransaction", job.last_error
    assert job.id in job.last_error.message and "\n" not in job.last_error.message
    assert effects.rows() == []
    assert worker.counters.completed == 0 and worker.counters.lost == 0


@only_backends("postgres", "sqlite")
async def test_a_sync_handler_that_catches_the_refusal_commits_the_outer_block(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects
) -> None:
    router = Router()
    refused: list[NestedTransaction] = []

    @router.task("nested_sync")
    def nested_sync(job: Job) -> None:
        with job.transaction() as outer:
            effects.write(outer, job.id, "outer")
            try:
                with job.transaction() as inner:
                    effects.write(inner, job.id, "inner")
            except NestedTransaction as exc:
                refused.append(exc)

    worker = make_worker(router)
    async with running(worker):
        job = await settled(client, (await client.enqueue("nested_sync", {}, max_retries=0)).id)
    assert job.status is JobStatus.COMPLETED and len(refused) == 1
    assert effects.rows() == [(job.id, "outer")]
    assert worker.counters.completed == 1 and worker.counters.lost == 0


@only_backends("postgres", "sqlite")
async def test_a_sync_handler_past_its_timeout_inside_the_block_rolls_back(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects, clock: ManualClock
) -> None:
    """The timeout strikes while the handler sleeps in the block: the block rolls back, the
    job is retried, and only the retry's row lands."""
    router = Router()
    ended: list[BaseException | None] = []

    @router.task("sleepy", timeout=0.3)
    def sleepy(job: Job) -> None:
        try:
            with job.transaction() as conn:
                effects.write(conn, job.id, f"run {job.attempt}")
                if job.attempt == 1:
                    time.sleep(1.0)
        except BaseException as exc:
            ended.append(exc)
            raise
        ended.append(None)

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("sleepy", {})).id
        job = await settled(client, job_id, JobStatus.RETRY)
        assert job.last_error is not None and job.last_error.kind == "JobTimeout"
        clock.advance(3600)
        job = await settled(client, job_id)
        await eventually(lambda: len(ended) == 2, what="the timed-out thread to end")
    assert job.status is JobStatus.COMPLETED and job.attempt == 2
    assert effects.rows() == [(job_id, "run 2")]
    assert sorted(type(exc).__name__ for exc in ended) == ["JobTimeout", "NoneType"]
    assert worker.counters.timeouts == 1 and worker.counters.completed == 1 and worker.counters.lost == 0


@only_backends("postgres", "sqlite")
async def test_a_timed_out_run_cannot_commit_even_if_it_swallows_the_timeout(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects, clock: ManualClock
) -> None:
    """A handler (or a library under it) that catches the ``JobTimeout`` raised in its thread
    and carries on to the end of the block: the block refuses to commit. On SQLite it used
    to commit (the worker's fail waited for the block's lock) while the run was reported
    timed out and lost."""
    router = Router()
    refused: list[BaseException] = []

    @router.task("stubborn", timeout=0.3)
    def stubborn(job: Job) -> None:
        try:
            with job.transaction() as conn:
                effects.write(conn, job.id, f"run {job.attempt}")
                if job.attempt == 1:
                    with contextlib.suppress(JobTimeout):  # swallowed: the block ends "cleanly"
                        time.sleep(1.0)
        except BaseException as exc:
            refused.append(exc)
            raise

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("stubborn", {})).id
        job = await settled(client, job_id, JobStatus.RETRY, JobStatus.COMPLETED)
        clock.advance(3600)
        job = await settled(client, job_id)
        await eventually(lambda: refused, what="the timed-out thread to end its block")
    assert job.status is JobStatus.COMPLETED and job.attempt == 2
    assert effects.rows() == [(job_id, "run 2")]
    assert [type(exc) for exc in refused] == [JobTimeout]
    assert worker.counters.timeouts == 1 and worker.counters.completed == 1 and worker.counters.lost == 0


@only_backends("postgres", "sqlite")
async def test_a_commit_in_flight_at_the_timeout_completes_the_job(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects
) -> None:
    """The block's commit is still running when the timeout strikes: the worker waits for it
    and reports the job completed (it used to report it timed out and lost, though the
    commit had completed it)."""
    router = Router()

    @router.task("slow_commit", timeout=0.5)
    def slow_commit(job: Job) -> None:
        own = effects.connection()
        try:
            with job.transaction(own) as conn:
                effects.write(conn, job.id, f"slow commit {job.attempt}")
        finally:
            if own is not None:
                own.close()

    worker = make_worker(router)
    async with running(worker):
        job = await settled(client, (await client.enqueue("slow_commit", {})).id, timeout=10 * SLOW_COMMIT)
    assert job.status is JobStatus.COMPLETED and job.attempt == 1 and job.errors == ()
    assert effects.rows() == [(job.id, "slow commit 1")]
    assert worker.counters.completed == 1 and worker.counters.lost == 0 and worker.counters.retried == 0


@only_backends("postgres", "sqlite")
async def test_a_block_committed_just_before_the_timeout_completes_the_job(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects
) -> None:
    """The block commits, then the handler runs on past its timeout: the job stays completed
    with its one row, and is not retried."""
    router = Router()

    @router.task("then_sleep", timeout=0.3)
    def then_sleep(job: Job) -> None:
        with job.transaction() as conn:
            effects.write(conn, job.id, f"run {job.attempt}")
        time.sleep(1.0)

    worker = make_worker(router)
    async with running(worker):
        job = await settled(client, (await client.enqueue("then_sleep", {})).id)
    assert job.status is JobStatus.COMPLETED and job.attempt == 1 and job.errors == ()
    assert effects.rows() == [(job.id, "run 1")]
    assert worker.counters.completed == 1 and worker.counters.lost == 0 and worker.counters.retried == 0


@only_backends("postgres", "sqlite")
async def test_an_async_commit_in_flight_at_the_timeout_completes_the_job(
    client: AsyncClient, make_worker: MakeWorker, effects: Effects
) -> None:
    """The same rule for an async handler, whose timeout cancels its task: a cancel that lands
    while the block commits waits for the commit (on Postgres, psycopg used to cancel the
    COMMIT on the server: whether it went through was a race with the cancel request)."""
    router = Router()

    @router.task("slow_commit_async", timeout=0.5)
    async def slow_commit_async(job: Job) -> None:
        own = effects.connection()
        try:
            async with job.transaction(own) as conn:
                await effects.awrite(conn, job.id, f"slow commit {job.attempt}")
        finally:
            if own is not None:
                own.close()

    worker = make_worker(router)
    async with running(worker):
        job_id = (await client.enqueue("slow_commit_async", {})).id
        job = await settled(client, job_id, timeout=10 * SLOW_COMMIT)
    assert job.status is JobStatus.COMPLETED and job.attempt == 1 and job.errors == ()
    assert effects.rows() == [(job.id, "slow commit 1")]
    assert worker.counters.completed == 1 and worker.counters.lost == 0 and worker.counters.retried == 0
