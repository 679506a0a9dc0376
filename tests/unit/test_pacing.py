"""The prefetch a worker allows itself, from the durations of its recent jobs."""

from __future__ import annotations

import pytest

from pqueue.errors import ConfigError
from pqueue.worker.config import WorkerSettings
from pqueue.worker.pacing import Pacer


def test_nothing_is_prefetched_before_a_job_has_finished() -> None:
    assert Pacer(10, limit=200, window=0.05).extra == 0


def test_fast_jobs_allow_the_whole_limit() -> None:
    pacer = Pacer(10, limit=200, window=0.05)
    pacer.observe(0.0005)  # 10 slots free up 20,000 times a second: 1,000 starts in 50 ms
    assert pacer.extra == 200


def test_the_prefetch_is_what_would_start_within_the_window() -> None:
    pacer = Pacer(10, limit=200, window=0.05)
    pacer.observe(0.01)  # 1,000 starts a second: 50 in 50 ms
    assert pacer.extra == 50


def test_slow_jobs_allow_none() -> None:
    pacer = Pacer(10, limit=200, window=0.05)
    pacer.observe(1.0)  # one start every 100 ms
    assert pacer.extra == 0


def test_the_average_follows_a_change_of_pace() -> None:
    pacer = Pacer(10, limit=200, window=0.05)
    pacer.observe(0.001)
    for _ in range(30):
        pacer.observe(2.0)  # the jobs became slow: the prefetch goes away
    assert pacer.extra == 0


def test_limit_zero_turns_prefetch_off() -> None:
    pacer = Pacer(10, limit=0, window=0.05)
    pacer.observe(0.0001)
    assert pacer.extra == 0


def test_settings_default_and_validation() -> None:
    settings = WorkerSettings.build(concurrency=4)
    assert (settings.prefetch, settings.prefetch_window, settings.ack_interval) == (80, 0.05, 0.002)
    for bad in ({"prefetch": -1}, {"prefetch": True}, {"prefetch_window": 0}, {"ack_interval": -1}):
        with pytest.raises(ConfigError):
            WorkerSettings.build(**bad)  # type: ignore[arg-type]
