"""Drain jobs through real ``pqueue worker`` processes while the broker's server restarts.

One implementation for the restart tests (tests/integration/*/test_restart.py, which
assert 0 lost, 0 worker exits and, after graceful restarts, 0 repeated runs) and for
bench/restarts.py (which reports the resume time and repeats per restart in
docs/benchmarks.md). The server is a :mod:`tests.private_servers` one; ``graceful``
stops it cleanly, ``crash`` kills it (SIGKILL / ``pg_ctl stop -m immediate``).

Resume time, per restart, from the moment the server accepts connections again:
``claim`` -- until the first job starts in a worker (its claim went through), and
``claim_all`` -- until every worker has started one;
``settle`` -- until the first job completes on the server (its ack went through; seen by
a client polling every 10 ms, so it includes that client's own reconnect).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from pqueue import AsyncClient, JobStatus, Task
from tests.records import record_lines

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "restarts"
APP = "tests.worker.apps.restart_app:router"
Mode = Literal["graceful", "crash"]


class Server(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def kill(self) -> None: ...


@dataclass(frozen=True)
class Plan:
    mode: Mode = "graceful"
    jobs: int = 600
    job_seconds: float = 0.1
    workers: int = 2
    concurrency: int = 10
    lease: float = 3.0
    restarts: int = 2
    down: float = 1.0
    """Seconds the server stays down each time."""
    gap: float = 1.0
    """Seconds of work between restarts (and before the first)."""
    trickle: bool = False
    """Enqueue 100 jobs every 0.2 s once the workers are up (idle workers, small acks),
    instead of all of them beforehand."""
    timeout: float = 40.0
    """Most seconds the whole run may take; an unfinished run reports its lost jobs."""


@dataclass
class Restart:
    down: float
    claim: float | None = None
    """Seconds from the server's return to the first job started (None: none in 10 s)."""
    claim_all: float | None = None
    """... until every worker had started a job again (None: one did not within 10 s)."""
    settle: float | None = None
    """Seconds from the server's return to the first job completed after it."""


@dataclass
class Outcome:
    jobs: int
    completed: int = 0
    dead: int = 0
    repeats: int = 0
    exited: list[int] = field(default_factory=list)
    """Exit codes of workers that ended before they were told to stop (must be empty)."""
    exit_codes: list[int | None] = field(default_factory=list)
    """Exit codes after SIGTERM (0: a clean drain)."""
    restarts: list[Restart] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    """Each worker's stderr."""

    @property
    def lost(self) -> int:
        return self.jobs - self.completed - self.dead


def _starts(record: Path) -> list[tuple[str, int, float]]:
    rows = []
    for parts in record_lines(record):
        if len(parts) == 4 and parts[0] == "start":
            rows.append((parts[1], int(parts[2]), float(parts[3])))
    return rows


def _worker(dsn: str, plan: Plan, record: Path, log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "pqueue", "worker", APP, "--dsn", dsn, "--queues", QUEUE,
        "--concurrency", str(plan.concurrency), "--lease", str(plan.lease), "--log-level", "INFO",
    ]  # fmt: skip
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if p)
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record), "PYTHONPATH": path}
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


async def _completed(client: AsyncClient) -> tuple[int, int]:
    stats = await client.stats()
    return stats.total(JobStatus.COMPLETED, QUEUE), stats.total(JobStatus.DEAD, QUEUE)


async def _resumed(
    client: AsyncClient, record: Path, pids: set[int], back: float, *, done_before: int, restart: Restart
) -> None:
    """Watch for the first start (in any worker, and in every one of ``pids``) and the
    first completion after ``back`` (epoch seconds)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (restart.claim_all is None or restart.settle is None):
        if restart.claim_all is None:
            first: dict[int, float] = {}
            for _, pid, at in _starts(record):
                if at >= back:
                    first[pid] = min(at, first.get(pid, at))
            if first:
                restart.claim = min(first.values()) - back
            if first and set(first) >= pids:
                restart.claim_all = max(first.values()) - back
        if restart.settle is None:
            with contextlib.suppress(Exception):  # the client reconnects too
                if (await _completed(client))[0] > done_before:
                    restart.settle = time.time() - back
        await asyncio.sleep(0.01)


async def run(plan: Plan, server: Server, dsn: str, workdir: Path) -> Outcome:
    """Enqueue, start the workers, restart the server ``plan.restarts`` times, drain, report."""
    record = workdir / "starts.log"
    outcome = Outcome(plan.jobs)
    tasks = [Task("restart:work", plan.job_seconds, queue=QUEUE) for _ in range(plan.jobs)]
    if not plan.trickle:
        async with AsyncClient(dsn) as client:
            await client.enqueue_many(tasks)
    logs = [workdir / f"worker-{i}.log" for i in range(plan.workers)]
    workers = [_worker(dsn, plan, record, log) for log in logs]
    started = time.monotonic()
    feeder = asyncio.create_task(_trickle(dsn, tasks)) if plan.trickle else None
    try:
        for _ in range(600):  # the workers are up once a job started (at most 30 s)
            if _starts(record):
                break
            await asyncio.sleep(0.05)
        for _ in range(plan.restarts):
            await asyncio.sleep(plan.gap)
            async with AsyncClient(dsn) as client:
                done_before = (await _completed(client))[0]
            went = time.time()
            server.stop() if plan.mode == "graceful" else server.kill()
            await asyncio.sleep(max(0.0, plan.down - (time.time() - went)))
            server.start()
            back = time.time()
            restart = Restart(down=back - went)
            outcome.restarts.append(restart)
            async with AsyncClient(dsn) as client:
                await _resumed(
                    client, record, {w.pid for w in workers}, back, done_before=done_before, restart=restart
                )
        async with AsyncClient(dsn) as client:
            while time.monotonic() - started < plan.timeout:
                outcome.completed, outcome.dead = await _completed(client)
                if outcome.completed + outcome.dead >= plan.jobs:
                    break
                await asyncio.sleep(0.1)
        outcome.exited = [code for code in (w.poll() for w in workers) if code is not None]
    finally:
        if feeder is not None:
            feeder.cancel()
            await asyncio.gather(feeder, return_exceptions=True)
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                outcome.exit_codes.append(w.wait(timeout=30))
            except subprocess.TimeoutExpired:
                w.kill()
                outcome.exit_codes.append(w.wait())
    starts = Counter(job for job, _, _ in _starts(record))
    outcome.repeats = sum(starts.values()) - len(starts)
    outcome.logs = [log.read_text(errors="replace") for log in logs]
    return outcome


async def _trickle(dsn: str, tasks: list[Task]) -> None:
    """Enqueue ``tasks`` 100 at a time, 0.2 s apart, after the workers' start-up (2 s)."""
    await asyncio.sleep(2.0)
    async with AsyncClient(dsn) as client:
        for start in range(0, len(tasks), 100):
            await client.enqueue_many(tasks[start : start + 100])
            await asyncio.sleep(0.2)


def migrate(dsn: str) -> None:
    """Create pqueue's schema in a fresh Postgres (the CLI, as an operator would)."""
    subprocess.run(
        [sys.executable, "-m", "pqueue", "migrate", "--dsn", dsn], cwd=ROOT, check=True, capture_output=True
    )
