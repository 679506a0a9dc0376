"""One writer at a time: an operation waits for the file's writer lock up to ``busy_timeout``,
goes through as soon as the lock is let go, and past the timeout fails with one typed line."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

import pqueue
from pqueue.brokers.sqlite import migrate
from pqueue.errors import BrokerUnavailable


def _hold(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


async def test_a_writer_waits_for_the_lock_and_goes_through_when_it_is_let_go(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path}/jobs.db"
    migrate(dsn)
    async with pqueue.AsyncClient(dsn) as client:
        holder = _hold(tmp_path / "jobs.db")
        enqueue = asyncio.create_task(client.enqueue("a:job", 1))
        await asyncio.sleep(0.3)
        assert not enqueue.done()  # waiting for the lock
        holder.execute("ROLLBACK")
        holder.close()
        job = await asyncio.wait_for(enqueue, 10)
        assert (await client.get_job(job.id)).payload == 1


async def test_a_lock_held_past_busy_timeout_is_one_typed_line(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path}/jobs.db?busy_timeout=0.2"
    migrate(dsn)
    async with pqueue.connect(dsn) as broker:
        holder = _hold(tmp_path / "jobs.db")
        try:
            with pytest.raises(BrokerUnavailable, match="locked") as info:
                await broker.promote()
            assert "\n" not in str(info.value)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert await broker.promote() == 0
