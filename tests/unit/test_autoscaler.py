"""``pqueue.autoscaler.Autoscaler.step``: a sample becomes a resize, one INFO line and a count;
a broker that cannot be read changes nothing and is logged once until it answers again."""

from __future__ import annotations

import logging

import pytest

from pqueue.autoscale import Thresholds
from pqueue.autoscaler import Autoscaler, signal_of
from pqueue.client import Stats
from pqueue.job import JobStatus
from pqueue.supervisor import Supervisor


def stats(pending: int, active: int, oldest: float = 0.0, queue: str = "default") -> Stats:
    counts = {queue: {**dict.fromkeys(JobStatus, 0), JobStatus.PENDING: pending, JobStatus.ACTIVE: active}}
    other = {"elsewhere": {**dict.fromkeys(JobStatus, 0), JobStatus.PENDING: 1000}}
    return Stats({**counts, **other}, oldest_pending_age={queue: oldest, "elsewhere": 99.0})


def test_only_the_queues_served_count() -> None:
    signal = signal_of(stats(7, 3, 1.5), ["default", "critical"])
    assert (signal.waiting, signal.running, signal.oldest) == (7, 3, 1.5)


def test_a_step_resizes_the_supervisor_logs_one_line_and_counts_it(caplog: pytest.LogCaptureFixture) -> None:
    pool = Supervisor(["true"], processes=1)
    now = [0.0]
    samples = [stats(40, 2, 1.0)]
    scaler = Autoscaler(
        pool, lambda: samples[-1], ["default"], minimum=1, maximum=3, concurrency=2,
        thresholds=Thresholds(up_after=1.0), clock=lambda: now[0],
    )  # fmt: skip
    caplog.set_level(logging.INFO, "pqueue.autoscale")
    scaler.step()
    now[0] = 1.0
    decision = scaler.step()
    assert decision is not None and decision.direction == "up"
    assert pool.target == 3 and scaler.events == {"up": 1, "down": 0}
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert line.startswith("autoscale up: 1 -> 3 worker processes: 40 due jobs wait for 2 slots")


def test_an_unreadable_broker_keeps_the_pool_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    pool = Supervisor(["true"], processes=2)

    def failing() -> Stats:
        raise ConnectionError("refused")

    scaler = Autoscaler(
        pool, failing, ["default"], minimum=1, maximum=4, concurrency=2, thresholds=Thresholds()
    )
    caplog.set_level(logging.INFO, "pqueue.autoscale")
    assert scaler.step() is None and scaler.step() is None
    assert pool.target == 2
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_a_stopping_pool_is_not_resized() -> None:
    pool = Supervisor(["true"], processes=1)
    pool.signals = 1
    now = [0.0]
    scaler = Autoscaler(
        pool, lambda: stats(40, 2, 30.0), ["default"], minimum=1, maximum=3, concurrency=2,
        thresholds=Thresholds(up_after=0.0), clock=lambda: now[0],
    )  # fmt: skip
    scaler.step()
    assert pool.target == 1 and scaler.events == {"up": 0, "down": 0}
