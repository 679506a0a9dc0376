"""Drain jobs through real ``pqueue worker`` processes while the broker's server restarts.

The process-level half of :mod:`pqueue.testing.faults`: :func:`run` enqueues, starts
worker processes, stops and starts your server (anything with ``start``/``stop``/``kill``:
a :class:`Server`) while they work, and reports an :class:`Outcome`; :func:`check`
asserts what every backend must show (0 lost, 0 dead, 0 worker exits, a clean drain,
one WARNING and one INFO line per outage and, after graceful restarts, 0 repeated runs).
:class:`RestartContract` runs both for a backend that provides a
``pqueue_restart_server`` fixture. pqueue's own restart tests
(tests/integration/*/test_restart.py) and bench/restarts.py (resume times and repeats
per restart, in docs/benchmarks.md) use this one implementation. ``graceful`` stops the
server cleanly, ``crash`` kills it (SIGKILL, ``pg_ctl stop -m immediate``).

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
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import pytest

from pqueue.client import AsyncClient
from pqueue.job import JobStatus
from pqueue.task import Task

QUEUE = "restarts"
APP = "pqueue.testing.faults.restart_app:router"
Mode = Literal["graceful", "crash"]


class Server(Protocol):
    """A broker server the test owns: started, stopped cleanly, or crashed."""

    def start(self) -> None:
        """Start (again) on the same address and data; return once it accepts connections."""
        ...

    def stop(self) -> None:
        """Shut down cleanly."""
        ...

    def kill(self) -> None:
        """Crash: no shutdown at all."""
        ...


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


def record_lines(path: Path) -> list[list[str]]:
    """The whitespace-split fields of each complete line of ``path`` ([] before it exists).

    Writers append each line with one ``O_APPEND`` write, so lines of several processes
    never interleave. A reader can still see the first part of a line being written (a
    line that crosses a page boundary), so a last line without its newline is left for
    the next read.
    """
    if not path.exists():
        return []
    text = path.read_text()
    return [line.split() for line in text[: text.rfind("\n") + 1].splitlines()]


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
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record)}
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


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
        pids = {w.pid for w in workers}
        for _ in range(1200):  # every worker is up once it started a job (at most 60 s): a
            # restart while one is still opening its broker would end it, as it should
            if {pid for _, pid, _ in _starts(record)} >= pids:
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
                await _resumed(client, record, pids, back, done_before=done_before, restart=restart)
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


# -- what every backend must show ----------------------------------------------------------

LOST = re.compile(r" WARNING pqueue\.broker: lost (.+?) at \S+ \((.+)\); retrying until it is back$")
BACK = re.compile(r" INFO +pqueue\.broker: (.+?) at \S+ is back after [0-9.]+s \(it was gone: .+\)$")
# An ack applied just before the server went away, whose reply was lost, is refused when
# retried (the job is already completed): reported as a lost lease, though nothing ran twice.
# Likewise a claim applied whose reply was lost: its leases expire and the jobs are
# recovered (they had not started, so they run once).
_REPLY_LOST = ("finished but its lease was lost", ": lost after ", "whose worker stopped beating")


def check(outcome: Outcome, plan: Plan) -> None:
    """Assert what every backend must show after :func:`run`: nothing lost or dead, no
    worker exit, clean drains, ``plan.restarts`` restarts, no repeat after graceful ones,
    and each worker's log as :func:`check_log` wants it."""
    assert outcome.lost == 0, f"{outcome.lost} job(s) lost"
    assert outcome.dead == 0
    assert outcome.exited == [], f"workers exited during the run: {outcome.exited}"
    assert outcome.exit_codes == [0] * plan.workers, outcome.exit_codes
    assert len(outcome.restarts) == plan.restarts
    if plan.mode == "graceful":
        assert outcome.repeats == 0, f"{outcome.repeats} repeated run(s) after graceful restarts"
    for log in outcome.logs:
        check_log(log, plan)


def check_log(log: str, plan: Plan) -> None:
    """One WARNING per outage (with its cause) and one INFO when the server is back; no
    driver chatter, no traceback, no other warning (but see _REPLY_LOST)."""
    lines = log.splitlines()
    lost = [line for line in lines if LOST.search(line)]
    back = [line for line in lines if BACK.search(line)]
    assert 1 <= len(lost) <= plan.restarts, "\n".join(lost) or "no outage was logged"
    assert len(back) == len(lost), "\n".join(lost + back)
    assert "Traceback" not in log
    assert "psycopg" not in log and "redis.exceptions" not in log
    others = [
        line
        for line in lines
        if (" WARNING " in line or " ERROR " in line)
        and not LOST.search(line)
        and not any(part in line for part in _REPLY_LOST)
        and not (plan.mode == "crash" and "lease lost for" in line)  # a claim the crash forgot
    ]
    assert others == [], "\n".join(others)


@pytest.mark.asyncio
class RestartContract:
    """Worker processes ride out server restarts: the backend provides a fixture
    ``pqueue_restart_server`` yielding ``(server, dsn)`` -- a started :class:`Server` of
    its own (never a shared one: it is stopped and killed) and a DSN that reaches it.

    A backend whose server cannot be back within the default lease (3 s) after a
    one-second stop overrides :meth:`restart_plan` with a longer lease: a worker that
    cannot reach the server for longer than its lease loses that lease, by design."""

    def restart_plan(self, mode: Mode) -> Plan:
        """The plan each restart test runs (the defaults, in ``mode``)."""
        return Plan(mode=mode)

    @pytest.mark.parametrize("mode", ["graceful", "crash"])
    async def test_workers_ride_out_restarts(
        self, pqueue_restart_server: tuple[Server, str], tmp_path: Path, mode: Mode
    ) -> None:
        server, dsn = pqueue_restart_server
        plan = self.restart_plan(mode)
        check(await run(plan, server, dsn, tmp_path), plan)
