"""The acker: one ack call per batch, lingering for more jobs only under load."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from pqueue import Router, Worker
from pqueue.errors import BrokerUnavailable
from pqueue.ids import new_id
from pqueue.job import Job, JobStatus, Lease
from pqueue.middleware import MiddlewareChain
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import Settler, WorkerCounters


class RecordingBroker:
    """Only what the acker calls: ``ack``, recording each batch's size; a call takes ``rtt``."""

    def __init__(self, rtt: float = 0.0) -> None:
        self.rtt = rtt
        self.batches: list[int] = []

    async def ack(self, leases: list[Lease], results_json: Any = None) -> list[bool]:
        self.batches.append(len(leases))
        await asyncio.sleep(self.rtt)
        return [True] * len(leases)


def _lease() -> Lease:
    now = datetime.now(UTC)
    job = Job(new_id(), "t", "default", None, JobStatus.ACTIVE, 1, 3, 0, 5, now, now)
    return Lease(job, "1", 0.0)


async def _settler(
    broker: RecordingBroker, *, ack_interval: float, busy_batch: int, more_coming: bool = False
) -> Settler:
    settler = Settler(
        broker,  # type: ignore[arg-type]
        LeaseBook(),
        MiddlewareChain(),
        WorkerCounters(),
        ack_interval=ack_interval,
        busy_batch=busy_batch,
        more_coming=lambda: more_coming,
    )
    settler.start()
    return settler


async def test_a_lone_job_is_acked_at_once_whatever_the_interval() -> None:
    broker = RecordingBroker()
    settler = await _settler(broker, ack_interval=30.0, busy_batch=3)
    settler.complete(_lease(), None, 0.0)
    await asyncio.wait_for(settler.close(), 5)  # would wait 30 s if the acker lingered
    assert broker.batches == [1]


async def test_under_load_the_acker_lingers_so_more_jobs_share_an_ack() -> None:
    broker = RecordingBroker(rtt=0.2)
    settler = await _settler(broker, ack_interval=1.0, busy_batch=3)
    for _ in range(3):
        settler.complete(_lease(), None, 0.0)
    await asyncio.sleep(0.3)  # the first batch (3 jobs: load) is acked at once
    settler.complete(_lease(), None, 0.0)
    await asyncio.sleep(0.02)  # the acker lingers (as long as the last ack took: 0.2 s) ...
    settler.complete(_lease(), None, 0.0)
    settler.complete(_lease(), None, 0.0)
    await settler.close()
    assert broker.batches == [3, 3] and settler.counters.completed == 6  # ... so these shared one


async def test_cheap_acks_are_not_waited_for() -> None:
    broker = RecordingBroker(rtt=0.0)
    settler = await _settler(broker, ack_interval=30.0, busy_batch=3)
    for _ in range(3):
        settler.complete(_lease(), None, 0.0)
    await asyncio.sleep(0.01)
    settler.complete(_lease(), None, 0.0)
    await asyncio.wait_for(settler.close(), 5)  # would wait 30 s if the acker lingered
    assert broker.batches == [3, 1]


async def test_while_other_jobs_run_the_acker_waits_for_a_full_batch() -> None:
    # Handlers that await I/O finish one at a time: each ack used to carry 1-2 jobs.
    broker = RecordingBroker()
    settler = await _settler(broker, ack_interval=30.0, busy_batch=3, more_coming=True)
    for _ in range(7):
        settler.complete(_lease(), None, 0.0)
        await asyncio.sleep(0.005)  # one job finishes every few milliseconds
    await asyncio.sleep(0.01)
    assert broker.batches == [3, 3]  # the seventh waits for company
    settler.complete(_lease(), None, 0.0)
    settler.more_coming = lambda: False
    settler.nudge()  # the worker's last running job ended: nobody else is coming
    await asyncio.wait_for(settler.close(), 5)  # (would wait the 30 s interval otherwise)
    assert sum(broker.batches) == 8 and settler.counters.completed == 8


async def test_a_partial_batch_waits_no_longer_than_the_interval() -> None:
    broker = RecordingBroker()
    settler = await _settler(broker, ack_interval=0.05, busy_batch=10, more_coming=True)
    settler.complete(_lease(), None, 0.0)
    await asyncio.sleep(0.01)
    assert broker.batches == []  # other jobs run: it lingers for them ...
    await asyncio.sleep(0.1)
    assert broker.batches == [1]  # ... for ack_interval at most
    await settler.close()


class DownFor:
    """A broker whose ack fails with BrokerUnavailable ``failures`` times, then works."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def ack(self, leases: list[Lease], results_json: Any = None) -> list[bool]:
        self.calls += 1
        if self.calls <= self.failures:
            raise BrokerUnavailable("Redis at 127.0.0.1:1 is unreachable: connection refused")
        return [True] * len(leases)


async def _settle_through(broker: DownFor, patience: float) -> WorkerCounters:
    counters = WorkerCounters()
    settler = Settler(broker, LeaseBook(), MiddlewareChain(), counters, patience=patience)  # type: ignore[arg-type]
    settler.start()
    settler.complete(_lease(), None, 0.0)
    await asyncio.wait_for(settler.close(), 10)
    return counters


async def test_an_ack_is_retried_through_an_outage_while_its_lease_holds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = DownFor(failures=8)  # 0.05 + 0.1 + 0.2 + 5 x 0.2 s down: more tries than before (7)
    with caplog.at_level(logging.INFO, logger="pqueue.worker"):
        counters = await _settle_through(broker, patience=3.0)
    assert broker.calls == 9 and (counters.completed, counters.lost) == (1, 0)
    assert caplog.records == []  # the outage is the broker health's to log, once


async def test_an_ack_gives_up_once_its_lease_cannot_hold(caplog: pytest.LogCaptureFixture) -> None:
    broker = DownFor(failures=1000)
    counters = await _settle_through(broker, patience=0.5)
    assert (counters.completed, counters.lost) == (0, 1)
    assert broker.calls < 10
    assert "could not ack 1 job(s)" in caplog.text


def _worker_running(jobs: int, average: float) -> Worker:
    worker = Worker("memory://more-coming", Router(), concurrency=10)
    worker._pacer.observe(average)
    worker._tasks = dict.fromkeys(map(str, range(jobs)))  # type: ignore[arg-type]  # only counted
    return worker


def test_acks_wait_only_for_jobs_that_finish_within_the_interval() -> None:
    # 10 jobs of 1 ms running: one finishes every 0.1 ms, well within the 2 ms interval.
    assert _worker_running(10, 0.001)._more_coming()
    # 10 jobs of 50 ms: one finishes every 5 ms, later than 2 ms: ack at once, as before.
    assert not _worker_running(10, 0.05)._more_coming()
    assert not _worker_running(0, 0.001)._more_coming()  # nothing running: nobody is coming
