"""A lease is reported lost only when it was: the heartbeat racing a settlement is no loss.

The heartbeat (side thread) snapshots the held leases, then extends them. When an ack of
one of them lands on the server between the snapshot and the extend, the extend is
refused (the job is no longer active) while the ack's reply is still on its way back, so
the lease is still in the book. The heartbeat used to call that a lost lease -- "lease
lost for 1 job(s)" about a second (one beat) after a busy worker started.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from pqueue.broker import WorkerInfo
from pqueue.ids import new_id
from pqueue.job import Job, JobStatus, Lease
from pqueue.middleware import MiddlewareChain
from pqueue.worker.heartbeat import Heartbeat
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import Settler, WorkerCounters


class RaceBroker:
    """An ack is applied at once, but its reply waits for ``reply``; extend refuses acked jobs."""

    def __init__(self) -> None:
        self.acked: set[str] = set()
        self.ack_landed = asyncio.Event()
        self.reply = asyncio.Event()

    async def ack(self, leases: list[Lease], results_json: Any = None) -> list[bool]:
        self.acked.update(lease.job.id for lease in leases)
        self.ack_landed.set()
        await self.reply.wait()
        return [True] * len(leases)

    async def extend(self, leases: list[Lease], *, lease_for: float) -> list[bool]:
        return [lease.job.id not in self.acked for lease in leases]

    async def register_worker(self, info: WorkerInfo, *, ttl: float) -> None:
        return None


def _lease() -> Lease:
    now = datetime.now(UTC)
    job = Job(new_id(), "t", "default", None, JobStatus.ACTIVE, 1, 3, 0, 5, now, now)
    return Lease(job, "token-1", 0.0)


def _parts(broker: RaceBroker) -> tuple[Lease, Settler, Heartbeat, list[Lease]]:
    """A lease held in a book, the settler and heartbeat sharing that book, and the
    leases the heartbeat reports lost."""
    lease = _lease()
    book = LeaseBook()
    book.add([lease])
    settler = Settler(broker, book, MiddlewareChain(), WorkerCounters())  # type: ignore[arg-type]
    reported: list[Lease] = []
    info = WorkerInfo(id="w", host="h", pid=1, queues=("default",), concurrency=1, started_at=0.0)
    heartbeat = Heartbeat(broker, book, info, lease=3.0, on_lost=reported.extend)  # type: ignore[arg-type]
    return lease, settler, heartbeat, reported


async def test_an_ack_landing_between_snapshot_and_extend_is_no_lost_lease(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = RaceBroker()
    lease, settler, heartbeat, reported = _parts(broker)
    settler.start()
    settler.complete(lease, None, 0.01)
    await asyncio.wait_for(broker.ack_landed.wait(), 5)  # applied; its reply not back yet
    with caplog.at_level(logging.WARNING, logger="pqueue.worker"):
        await heartbeat.beat()  # the lease is still in the book, and its extend is refused
    broker.reply.set()
    await asyncio.wait_for(settler.close(), 5)
    assert reported == []
    assert "lease lost" not in caplog.text
    assert settler.counters.completed == 1 and settler.counters.lost == 0


async def test_a_lease_refused_while_nobody_settles_it_is_reported_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = RaceBroker()
    lease, _settler, heartbeat, reported = _parts(broker)
    broker.acked.add(lease.job.id)  # recovered and settled elsewhere: the extend is refused
    with caplog.at_level(logging.WARNING, logger="pqueue.worker"):
        await heartbeat.beat()
        await heartbeat.beat()  # reported once, not at every beat
    assert reported == [lease]
    assert caplog.text.count("lease lost for 1 job(s)") == 1
