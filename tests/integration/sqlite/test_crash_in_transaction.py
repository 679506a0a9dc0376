"""A process SIGKILLed inside a write transaction leaves the file usable: no lock held, and
none of its writes visible (SQLite rolls the WAL back). The worker chaos test
(tests/worker/test_crash.py) kills workers at random points; this one kills one exactly there."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pqueue
from pqueue.brokers.sqlite import migrate
from pqueue.job import JobStatus

KILLED_INSIDE = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE jobs SET status = 'dead', lease_token = NULL")
conn.execute("DELETE FROM queues")
os.kill(os.getpid(), signal.SIGKILL)
"""


async def test_a_process_killed_inside_a_write_transaction_leaves_the_file_usable(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path}/jobs.db"
    migrate(dsn)
    async with pqueue.AsyncClient(dsn) as client:
        job = await client.enqueue("crash:job", 1)
    command = [sys.executable, "-c", KILLED_INSIDE, str(tmp_path / "jobs.db")]
    killed = await asyncio.to_thread(subprocess.run, command, check=False)
    assert killed.returncode == -signal.SIGKILL
    broker = pqueue.connect(dsn, busy_timeout=0)  # a lock still held would fail at once
    async with broker:
        assert (await broker.get_job(job.id)).status is JobStatus.PENDING
        assert await broker.list_queues() == ["default"]
        [lease] = await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)
        assert await broker.ack([lease]) == [True]
