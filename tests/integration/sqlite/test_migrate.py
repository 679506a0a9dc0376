"""``pqueue migrate`` on a file that workers are using is safe: it finds nothing to do, takes
the writer lock only for a moment, and the workers finish every job meanwhile."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from pqueue import AsyncClient, JobStatus, Task
from pqueue.brokers.sqlite import migrate
from tests.worker.conftest import eventually

ROOT = Path(__file__).resolve().parents[3]
JOBS = 30


def _run(*args: str, record: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record), "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "pqueue", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE)


async def test_a_second_migrate_while_workers_run_is_safe(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path}/jobs.db"
    record = tmp_path / "runs.log"
    assert migrate(dsn) == [1]
    worker = _run(
        "worker", "tests.worker.apps.crash_app:router", "--dsn", dsn, "--concurrency", "4", record=record
    )
    try:
        async with AsyncClient(dsn) as client:
            await client.enqueue_many([Task("crash:record", 0.05) for _ in range(JOBS)])
            migrators = [_run("migrate", "--dsn", dsn, record=record) for _ in range(2)]
            outputs = [await asyncio.to_thread(m.communicate, timeout=60) for m in migrators]
            assert [m.returncode for m in migrators] == [0, 0], outputs
            assert all(b"nothing to do" in out for out, _ in outputs)

            async def all_done() -> bool:
                return (await client.stats()).total(JobStatus.COMPLETED) == JOBS

            await eventually(all_done, timeout=60, what="every job to complete")
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(worker.communicate, timeout=60)
    assert worker.returncode == 0, err.decode()
