"""A claimed row that cannot be decoded is dead-lettered, and the claim's other jobs are
still handed out (a malformed row must not crash-loop workers)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pqueue
from pqueue.brokers.sqlite import migrate
from pqueue.job import JobStatus


def _corrupt(path: Path, job_id: str) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE jobs SET payload = '{not json' WHERE id = ?", (job_id,))
        conn.commit()


async def test_a_row_that_cannot_be_decoded_is_buried_and_the_rest_are_claimed(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    dsn = f"sqlite:///{path}"
    migrate(dsn)
    async with pqueue.AsyncClient(dsn) as client:
        good = await client.enqueue("a:job", 1)
        bad = await client.enqueue("a:job", 2)
        later = await client.enqueue("a:job", 3)
        _corrupt(path, bad.id)
        broker = client.broker
        leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
        assert [lease.job.id for lease in leases] == [good.id, later.id]
        buried = await broker.list_jobs(JobStatus.DEAD)
        assert [job.id for job in buried.jobs] == [bad.id]
