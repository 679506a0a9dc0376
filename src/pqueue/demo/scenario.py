"""The demo scenario: plan a mix of jobs, run a worker pool over it, check every final state.

Every run has its own id, and every unique and idempotency key the demo sends carries
it: a second ``pqueue demo`` on the same broker must not meet the first run's keys
(its reports would be refused as duplicates and never run, its charges acked as
already done). The tracker counts only the jobs this run enqueued, so the table stays
true on a broker that still holds an earlier run's jobs.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TextIO

from pqueue.client import AsyncClient
from pqueue.demo import tasks
from pqueue.demo.display import Progress
from pqueue.job import JobStatus
from pqueue.middleware import JobReport, Middleware, Outcome
from pqueue.task import Task
from pqueue.worker import Worker

FINAL = (Outcome.COMPLETED, Outcome.DEAD, Outcome.DUPLICATE)
RAN = (Outcome.COMPLETED, Outcome.RETRY, Outcome.DEAD)


@dataclass
class Plan:
    """What to enqueue and what each job must end as."""

    tasks: list[Task] = field(default_factory=list)
    expected: list[JobStatus] = field(default_factory=list)
    unique_repeats: list[Task] = field(default_factory=list)
    """Second enqueues of unique reports: each must be refused."""
    charge_keys: list[str] = field(default_factory=list)
    """The idempotency keys of the charges: each must run exactly once."""

    def add(self, task: Task, expected: JobStatus = JobStatus.COMPLETED) -> None:
        self.tasks.append(task)
        self.expected.append(expected)


def new_run_id() -> str:
    """A short random id that scopes one run's unique and idempotency keys."""
    return uuid.uuid4().hex[:12]


def make_plan(jobs: int, rng: random.Random, run_id: str) -> Plan:
    """About ``jobs`` jobs in realistic proportions, plus the special cases.

    The reports' unique keys and the charges' idempotency keys carry ``run_id``.
    """
    plan = Plan()
    reports = max(2, jobs // 150)
    for day in range(reports):
        report_day = f"2026-01-{day + 1:02d}"
        report = tasks.report.task(
            {"day": report_day}, unique_for=3600, unique_key=f"demo:{run_id}:report:{report_day}"
        )
        plan.add(report)
        plan.unique_repeats.append(report)
    for key in range(max(2, jobs // 300)):  # each charge is delivered twice
        plan.charge_keys.append(f"demo:{run_id}:order-{key}")
        for _ in range(2):
            plan.add(tasks.charge.task({"cents": 1999}, idempotency_key=plan.charge_keys[-1]))
    for record in range(max(2, jobs // 100)):
        plan.add(tasks.poison.task({"record": record, "malformed": record % 2 == 1}), JobStatus.DEAD)
    for _ in range(max(1, jobs // 1000)):
        plan.add(tasks.export.task({}), JobStatus.DEAD)
    rest = max(0, jobs - len(plan.tasks))
    weights = [("notify", 10), ("thumbnail", 55), ("invoice", 20), ("flaky", 8), ("reminder", 4)]
    kinds = rng.choices([k for k, _ in weights], [w for _, w in weights], k=rest)
    for i, kind in enumerate(kinds):
        if kind == "notify":
            plan.add(tasks.notify.task({"user": i}))
        elif kind == "thumbnail":
            plan.add(tasks.thumbnail.task({"image": i, "ms": rng.randint(1, 5)}))
        elif kind == "invoice":
            plan.add(tasks.invoice.task({"order": i}))
        elif kind == "flaky":
            plan.add(tasks.flaky_api.task({"call": i, "failures": rng.randint(1, 3)}))
        else:
            plan.add(tasks.reminder.task({"user": i}, delay=rng.uniform(0.5, 3.0)))
    return plan


class Tracker(Middleware):
    """Counts outcomes and handler durations per job type as the workers settle this run's jobs.

    Jobs the workers find from an earlier run (one stopped half-way) run too, but are
    not counted: only the ids given to :meth:`expect` are.
    """

    def __init__(self) -> None:
        self.final = 0
        self.outcomes: Counter[tuple[str, Outcome]] = Counter()
        self.durations: defaultdict[str, list[float]] = defaultdict(list)
        self.ids: frozenset[str] = frozenset()

    def expect(self, ids: list[str]) -> None:
        """Count the jobs with these ids (this run's), and no others."""
        self.ids = frozenset(ids)

    def after_job(self, report: JobReport) -> None:
        if report.job.id not in self.ids:
            return
        job_type = report.job.type
        self.outcomes[job_type, report.outcome] += 1
        if report.outcome in RAN:
            self.durations[job_type].append(report.duration)
        if report.outcome in FINAL:
            self.final += 1


@dataclass
class DemoResult:
    """What the demo saw; ``ok`` when every job ended in its expected state."""

    run_id: str
    created: int
    refused: int
    wrong: list[str]
    tracker: Tracker
    by_type: dict[str, Counter[JobStatus]]
    expected_by_type: dict[str, Counter[JobStatus]]
    elapsed: float
    workers: int
    concurrency: int

    @property
    def ok(self) -> bool:
        return not self.wrong


async def run_demo(
    dsn: str,
    *,
    jobs: int = 3000,
    workers: int = 2,
    concurrency: int = 32,
    timeout: float = 120.0,
    seed: int | None = None,
    run_id: str | None = None,
    out: TextIO | None,
    live: bool,
) -> DemoResult:
    """Enqueue the mix on ``dsn``, run ``workers`` workers until every job is settled, verify.

    ``run_id`` (a fresh random one by default) scopes the run's unique and idempotency
    keys, so runs on the same broker never meet each other's keys. The mix is the same
    for the same ``seed``. Returns what was seen; ``result.ok`` is False if a job ended in
    the wrong state or ``timeout`` seconds passed before all were settled. Progress goes
    to ``out``: a bar redrawn in place when ``live``, a line a second otherwise, nothing
    when ``out`` is None.
    """
    run_id = run_id or new_run_id()
    plan = make_plan(jobs, random.Random(seed), run_id)
    tasks.charges.clear()
    tracker = Tracker()
    async with AsyncClient(dsn, router=tasks.router) as client:
        results = []
        for start in range(0, len(plan.tasks), 1000):
            results += await client.enqueue_many(plan.tasks[start : start + 1000])
        tracker.expect([r.id for r in results])
        repeats = await client.enqueue_many(plan.unique_repeats)
        pool = [
            Worker(
                dsn,
                tasks.router,
                queues=tasks.QUEUES,
                concurrency=concurrency,
                middleware=[tracker],
                log_jobs=False,
                poll_interval=0.2,
                promote_interval=0.1,
                idempotency_busy_delay=0.2,
                shutdown_timeout=5,
            )
            for _ in range(workers)
        ]
        started = time.perf_counter()
        serving = [asyncio.create_task(worker.serve()) for worker in pool]
        progress = Progress(len(results), out, live=live) if out is not None else None
        deadline = started + timeout
        try:
            while tracker.final < len(results) and time.perf_counter() < deadline:
                if progress is not None:
                    progress.update(tracker.final, tracker.outcomes)
                await asyncio.sleep(0.1)
            if progress is not None:
                progress.update(tracker.final, tracker.outcomes)
        finally:
            if progress is not None:
                progress.close()
            for worker in pool:
                worker.stop()
            await asyncio.gather(*serving)
        elapsed = time.perf_counter() - started
        ids = [r.id for r in results]
        wrong, by_type, expected_by_type = await _verify(client, plan, ids)
        if tracker.final < len(results):
            wrong.insert(0, f"timed out after {timeout:g} s: {tracker.final} of {len(results)} jobs settled")
        # Leave no dead demo jobs in a real server's dead-letter queue (completed ones are
        # pruned after the broker's retention like any other).
        dead = [
            job_id for job_id, expected in zip(ids, plan.expected, strict=True) if expected is JobStatus.DEAD
        ]
        await client.purge_dead(job_ids=dead)
    wrong += [f"unique report enqueued twice: {r.id}" for r in repeats if r.created]
    wrong += [
        f"{task.type} {r.id} was not created: its unique key was taken"
        for task, r in zip(plan.tasks, results, strict=True)
        if not r.created
    ]
    wrong += [f"charge {key} ran {n} times" for key in plan.charge_keys if (n := tasks.charges[key]) != 1]
    return DemoResult(
        run_id=run_id,
        created=len(results),
        refused=sum(not r.created for r in repeats),
        wrong=wrong,
        tracker=tracker,
        by_type=by_type,
        expected_by_type=expected_by_type,
        elapsed=elapsed,
        workers=workers,
        concurrency=concurrency,
    )


async def _verify(
    client: AsyncClient, plan: Plan, ids: list[str]
) -> tuple[list[str], dict[str, Counter[JobStatus]], dict[str, Counter[JobStatus]]]:
    wrong: list[str] = []
    by_type: defaultdict[str, Counter[JobStatus]] = defaultdict(Counter)
    expected_by_type: defaultdict[str, Counter[JobStatus]] = defaultdict(Counter)
    for job_id, task, expected in zip(ids, plan.tasks, plan.expected, strict=True):
        job = await client.get_job(job_id)
        by_type[task.type][job.status] += 1
        expected_by_type[task.type][expected] += 1
        if job.status is not expected:
            wrong.append(f"{task.type} {job_id} is {job.status}, expected {expected}")
    return wrong, dict(by_type), dict(expected_by_type)
