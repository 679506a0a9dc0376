"""The command line as users run it: ``pqueue worker`` and ``--processes N`` (``pqueue demo``: test_demo)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pqueue import AsyncClient, JobStatus, Task
from tests.conftest import only_backends
from tests.records import record_lines
from tests.worker.conftest import eventually

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.worker.apps.crash_app:router"


def pqueue(*args: str, record: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record or os.devnull)}
    return subprocess.Popen(
        [sys.executable, "-m", "pqueue", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class StderrLines:
    """Collects a process's stderr lines on a thread, so tests can wait for one."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert proc.stderr is not None
        stream = proc.stderr
        threading.Thread(target=lambda: self.lines.extend(stream), daemon=True).start()

    def matching(self, pattern: str) -> list[re.Match[str]]:
        return [m for line in list(self.lines) if (m := re.search(pattern, line))]


def test_supervisor_restarts_a_dead_child_and_forwards_sigterm() -> None:
    parent = pqueue("worker", APP, "--dsn", "memory://", "--processes", "2", "--lease", "5")
    log = StderrLines(parent)
    try:
        wait_until(lambda: len(log.matching(r"worker \S+ started on")) == 2, "two children to start")
        [first, second] = [int(m.group(1)) for m in log.matching(r"worker process \d started \(pid (\d+)\)")]
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: len(log.matching(r"worker \S+ started on")) == 3, "the killed child to return")
        pids = [int(m.group(1)) for m in log.matching(r"worker process \d started \(pid (\d+)\)")]
        assert pids[:2] == [first, second] and pids[2] not in (first, second)
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(60) == 0, "\n".join(log.lines)
    finally:
        if parent.poll() is None:
            parent.kill()
    assert len(log.matching(r"worker \S+:\d+:\S+ stopped")) == 2  # both live children drained


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_worker_processes_share_the_queue_and_exit_zero(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    async with AsyncClient(backend_dsn) as client:
        # Each job holds its slot until both processes have started one (or 30 s pass): 60 jobs
        # are more than one process holds at once, so the other must take some.
        ids = [r.id for r in await client.enqueue_many([Task("crash:until_shared", 30) for _ in range(60)])]
        parent = pqueue(
            "worker", APP, "--dsn", backend_dsn, "--queues", "default", "--processes", "2", record=record
        )
        try:

            async def two_workers() -> bool:
                return len((await client.stats()).workers) == 2

            await eventually(two_workers, timeout=60, what="two registered workers")

            async def all_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == len(ids)

            await eventually(all_done, timeout=60, what="every job to complete")
        finally:
            parent.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(parent.communicate, timeout=60)
        assert parent.returncode == 0, err
        assert (await client.stats()).workers == []
    pids = {fields[2] for fields in record_lines(record)}
    assert len(pids) == 2  # both processes took jobs


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_worker_runs_jobs_and_drains_on_the_chosen_event_loop(
    backend_dsn: str, pqueue_open_broker: object, loop: str
) -> None:
    async with AsyncClient(backend_dsn) as client:
        await client.enqueue_many([Task("crash:record", 0.01) for _ in range(20)])
        proc = pqueue("worker", APP, "--dsn", backend_dsn, "--queues", "default", "--loop", loop)
        try:

            async def all_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == 20

            await eventually(all_done, timeout=60, what="every job to complete")
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 0, err
    assert f"({loop} loop)" in err
