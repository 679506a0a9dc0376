"""``pqueue demo`` as users run it, once and twice on the same broker.

Every job must end in its expected state. Before runs were scoped, the second run's
reports met the first run's unique keys (and its charges the first run's idempotency
keys): they were refused or acked without running, the demo waited for them until its
timeout and its table said "20 completed, 0 runs". Now each run's keys carry its run id
and the table counts only its own jobs.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest

from pqueue import AsyncClient
from pqueue.brokers.memory import drop_store
from pqueue.demo import run_demo
from pqueue.demo.scenario import make_plan
from pqueue.job import JobStatus
from pqueue.middleware import Outcome
from tests.conftest import only_backends

ROOT = Path(__file__).resolve().parents[2]
QUICK = ("--timeout", "60", "--no-progress")
"""A run that waits for a job it will never see fails at the timeout instead of passing."""
COLUMNS = ("jobs", "completed", "dead", "runs", "retries", "dup acked")


def demo(
    dsn: str, *, jobs: int = 300, seed: int = 3, stderr: list[str] | None = None
) -> tuple[str, dict[str, dict[str, int]]]:
    """Run ``pqueue demo``; check it passed; return its output and its table's counts per job
    type (and its stderr into ``stderr``, when given)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pqueue",
            "demo",
            "--jobs",
            str(jobs),
            "--dsn",
            dsn,
            "--seed",
            str(seed),
            *QUICK,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: every one of the" in done.stdout
    if stderr is not None:
        stderr.append(done.stderr)
    table: dict[str, dict[str, int]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("demo:"):
            cells = line.split()
            assert cells[-1] == "yes", line
            table[cells[0]] = dict(zip(COLUMNS, map(int, cells[1:7]), strict=True))
    return done.stdout, table


@pytest.mark.slow
def test_demo_runs_and_every_job_ends_as_expected(backend_dsn: str, pqueue_open_broker: object) -> None:
    _, table = demo(backend_dsn, jobs=600, seed=7)
    kinds = {"demo:flaky-api", "demo:poison", "demo:reminder", "demo:report", "demo:charge", "demo:export"}
    assert kinds <= set(table), table
    assert table["demo:poison"]["dead"] == table["demo:poison"]["jobs"] > 0
    assert table["demo:flaky-api"]["retries"] > 0


def test_no_progress_writes_no_progress_lines() -> None:
    """``--no-progress`` off a terminal: before, stderr still got a progress line a second
    (``[####....] 40/66 60% | ...``); now it gets none, and the table is still on stdout."""
    errors: list[str] = []
    out, table = demo(f"memory://quiet-{random.getrandbits(32):x}", jobs=60, stderr=errors)
    assert "jobs/s" not in errors[0] and "[#" not in errors[0] and "[." not in errors[0], errors[0]
    assert "job type" in out and table["demo:reminder"]["jobs"] > 0


@pytest.mark.slow
@only_backends("redis", "postgres", "sqlite", "redis_cluster")
def test_a_second_demo_on_the_same_broker_runs_every_job_again(
    backend_dsn: str, pqueue_open_broker: object
) -> None:
    first_out, first = demo(backend_dsn)
    second_out, second = demo(backend_dsn)  # before: reports refused, charges acked, 60 s timeout
    assert second == first  # same seed, same mix, and every count is this run's own
    report, charge = second["demo:report"], second["demo:charge"]
    assert report["runs"] == report["completed"] == report["jobs"] > 0
    assert charge["runs"] == charge["dup acked"] == charge["jobs"] // 2 > 0
    runs = [re.search(r"^run (\w+): ", out, re.MULTILINE) for out in (first_out, second_out)]
    assert runs[0] and runs[1] and runs[0].group(1) != runs[1].group(1)


@pytest.mark.slow
async def test_run_demo_counts_only_its_own_jobs_on_a_shared_store() -> None:
    """In process on one memory store, with jobs of an earlier, unfinished run still queued."""
    name = f"demo-rerun-{random.getrandbits(32):x}"
    dsn = f"memory://{name}"
    try:
        first = await run_demo(dsn, jobs=150, workers=1, seed=5, out=StringIO(), live=False)
        leftover = make_plan(150, random.Random(5), "stopped-run")  # as if a run was stopped half-way
        async with AsyncClient(dsn) as client:
            await client.enqueue_many(leftover.tasks)
        second = await run_demo(dsn, jobs=150, workers=1, seed=5, out=StringIO(), live=False)
    finally:
        drop_store(name)
    assert first.ok and second.ok, second.wrong
    assert second.run_id != first.run_id
    assert second.by_type == first.by_type == second.expected_by_type
    assert second.tracker.final == second.created  # the leftovers ran, but were not counted
    assert second.by_type["demo:report"] == Counter({JobStatus.COMPLETED: 2})
    assert len(second.tracker.durations["demo:report"]) == 2  # both reports ran (none refused)
    assert second.tracker.outcomes["demo:charge", Outcome.DUPLICATE] == 2  # one per charge key
    assert len(second.tracker.durations["demo:charge"]) == 2
