"""``pqueue worker --autoscale MIN:MAX`` with real processes on Redis and Postgres: the pool
grows to MAX under a backlog and shrinks to MIN once idle, a retired process drains (or,
killed, loses nothing), and a burst cleared quickly starts no process. The thresholds are
shortened by flags; jobs hold their slots until the test opens their gate
(tests/worker/apps/scale_app.py), so who holds what is decided, not timed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pqueue import AsyncClient, JobStatus, Task
from tests.conftest import only_backends
from tests.metrics.scrape import scrape, value
from tests.ports import free_port
from tests.records import record_lines
from tests.worker.conftest import eventually
from tests.worker.test_cli import StderrLines, pqueue

APP = "tests.worker.apps.scale_app:router"
FAST = [
    "--queues", "default",
    "--autoscale-interval", "0.1",
    "--autoscale-up-after", "0.3",
    "--autoscale-down-after", "0.5",
    "--autoscale-cooldown", "0.3",
]  # fmt: skip


def start_pool(dsn: str, record: Path, *flags: str) -> tuple[subprocess.Popen[str], StderrLines]:
    parent = pqueue("worker", APP, "--dsn", dsn, *FAST, *flags, record=record)
    return parent, StderrLines(parent)


async def stop_pool(parent: subprocess.Popen[str], log: StderrLines) -> int:
    if parent.poll() is None:
        parent.send_signal(signal.SIGTERM)
    try:
        return await asyncio.to_thread(parent.wait, 60)
    finally:
        if parent.poll() is None:
            parent.kill()


async def seen(log: StderrLines, pattern: str, count: int = 1, what: str = "") -> None:
    try:
        await eventually(lambda: len(log.matching(pattern)) >= count, timeout=60, what=what or pattern)
    except pytest.fail.Exception:
        print("\n".join(log.lines[-40:]))  # the pool's log, in the failure report
        raise


async def completed(client: AsyncClient, n: int) -> None:
    async def done() -> bool:
        return (await client.stats()).total(JobStatus.COMPLETED) == n

    await eventually(done, timeout=60, what=f"{n} completed jobs")


def runs(record: Path) -> tuple[Counter[str], Counter[str], dict[str, list[str]]]:
    """Starts and ends per job id, and the pids that started each job (in order)."""
    starts, ends, pids = Counter[str](), Counter[str](), dict[str, list[str]]()
    for event, job_id, pid in record_lines(record):
        (starts if event == "start" else ends)[job_id] += 1
        if event == "start":
            pids.setdefault(job_id, []).append(pid)
    return starts, ends, pids


@only_backends("redis", "postgres")
async def test_the_pool_grows_to_max_under_a_backlog_and_shrinks_to_min_once_idle(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record, gate, port = tmp_path / "runs.log", tmp_path / "gate", free_port()
    gate.mkdir()
    parent, log = start_pool(
        backend_dsn, record, "--autoscale", "1:3", "--concurrency", "2",
        "--metrics-port", str(port), "--metrics-host", "127.0.0.1",
    )  # fmt: skip
    try:
        await seen(log, r"worker \S+ started on", what="the first worker process")
        async with AsyncClient(backend_dsn) as client:
            ids = [
                r.id for r in await client.enqueue_many([Task("scale:hold", str(gate)) for _ in range(12)])
            ]
            await seen(log, r"autoscale up: 1 -> 3 worker processes: 1\d due jobs wait for 2 slots")
            await eventually(
                lambda: len(set().union(*runs(record)[2].values())) == 3, timeout=60, what="3 pids"
            )
            (gate / "all").touch()
            await completed(client, len(ids))
            await seen(log, r"autoscale down: 3 -> 2 worker processes: no due job waits")
            await seen(log, r"autoscale down: 2 -> 1 worker processes")
            await seen(log, r"worker process \d \(pid \d+\) retired$", count=2, what="two clean retirements")
            samples = scrape(port)
    finally:
        code = await stop_pool(parent, log)
    assert code == 0, "\n".join(log.lines)
    starts, ends, _ = runs(record)
    assert starts == ends == dict.fromkeys(ids, 1), "a job was lost or ran twice while the pool shrank"
    assert value(samples, "pqueue_worker_processes") == 1
    assert value(samples, "pqueue_autoscale_events_total", direction="up") == 1
    assert value(samples, "pqueue_autoscale_events_total", direction="down") == 2


@only_backends("redis", "postgres")
@pytest.mark.parametrize("end", ["drained", "killed"])
async def test_a_retiring_process_holding_jobs_drains_them_or_loses_nothing_when_killed(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path, end: str
) -> None:
    record, gate = tmp_path / "runs.log", tmp_path / "gate"
    gate.mkdir()
    # Grow on age only: 2 jobs waiting 0.5 s start the second process; a recovered job
    # after the kill is claimed at once by the idle first one.
    parent, log = start_pool(
        backend_dsn, record, "--autoscale", "1:2", "--concurrency", "2", "--lease", "2",
        "--autoscale-backlog", "100", "--autoscale-age", "0.5",
    )  # fmt: skip
    try:
        await seen(log, r"worker \S+ started on", what="the first worker process")
        async with AsyncClient(backend_dsn) as client:
            ids = [r.id for r in await client.enqueue_many([Task("scale:hold", str(gate)) for _ in range(4)])]
            await seen(log, r"autoscale up: 1 -> 2 worker processes")
            await eventually(lambda: len(runs(record)[0]) == 4, timeout=60, what="4 jobs started")
            [first, second] = [m.group(1) for m in log.matching(r"worker process \d started \(pid (\d+)\)")]
            held = {pid: [j for j, ps in runs(record)[2].items() if ps[0] == pid] for pid in (first, second)}
            assert len(held[first]) == len(held[second]) == 2
            for job_id in held[first]:
                (gate / job_id).touch()  # the first process goes idle: the second is spare
            await seen(log, rf"worker process 2 \(pid {second}\) retiring")
            if end == "killed":
                os.kill(int(second), signal.SIGKILL)
                await seen(log, rf"pid {second}\) exited with -9 while retiring; not restarted")
            for job_id in held[second]:
                (gate / job_id).touch()
            await completed(client, len(ids))
            if end == "drained":
                await seen(log, rf"worker process 2 \(pid {second}\) retired$")
    finally:
        code = await stop_pool(parent, log)
    assert code == 0, "\n".join(log.lines)
    starts, ends, pids = runs(record)
    assert ends == dict.fromkeys(ids, 1), "a job was lost or finished twice"
    if end == "drained":  # no attempt burnt: each job ran once, in the process that took it
        assert starts == dict.fromkeys(ids, 1)
        assert len(log.matching(r"worker process \d started")) == 2, "a retired process was restarted"
    else:  # the killed process's jobs ran again elsewhere (its slot was not restarted), once each
        assert all(pids[j][0] == second and len(pids[j]) == 2 and pids[j][1] != second for j in held[second])


@only_backends("redis", "postgres")
async def test_a_burst_cleared_quickly_starts_no_process(
    backend_dsn: str, pqueue_open_broker: object, tmp_path: Path
) -> None:
    record = tmp_path / "runs.log"
    # Pressure must last 3 s (default 2 s; a margin for a loaded CI machine). 24 jobs of
    # 100 ms on 4 slots keep 4 or more waiting for about half a second: samples (every
    # 0.1 s, logged at DEBUG) see the pressure, which ends before it has lasted.
    parent, log = start_pool(
        backend_dsn, record, "--autoscale", "1:3", "--concurrency", "4", "--autoscale-up-after", "3",
        "--log-level", "DEBUG",
    )  # fmt: skip
    try:
        await seen(log, r"worker \S+ started on", what="the first worker process")
        async with AsyncClient(backend_dsn) as client:
            await client.enqueue_many([Task("scale:quick", 0.1) for _ in range(24)])
            await completed(client, 24)
            after = len(log.lines)
            await eventually(
                lambda: any("autoscale sample: 0 waiting, 0 running" in line for line in log.lines[after:]),
                timeout=60,
                what="a sample after the burst",
            )
    finally:
        code = await stop_pool(parent, log)
    assert code == 0, "\n".join(log.lines)
    pressure = [int(m.group(1)) for m in log.matching(r"autoscale sample: (\d+) waiting")]
    assert max(pressure) >= 4, "no sample saw the burst: the test proves nothing"
    assert not log.matching(r"autoscale up"), "a burst of 24 short jobs started a process"
    assert len(log.matching(r"worker process \d started")) == 1
