"""Retry policies and the retry-or-dead decision."""

from __future__ import annotations

import random

import pytest

from pqueue.clock import to_datetime
from pqueue.job import Job, JobStatus
from pqueue.outcome import has_retries_left, next_retry_in
from pqueue.retry import ConstantBackoff, ExponentialBackoff, LinearBackoff, retry_delay


def job(attempt: int, max_retries: int = 3) -> Job:
    now = to_datetime(1_800_000_000)
    return Job(
        id="0", type="t", queue="q", payload=None, status=JobStatus.ACTIVE, attempt=attempt,
        max_retries=max_retries, recoveries=0, max_recoveries=5, run_at=now, created_at=now,
    )  # fmt: skip


ERR = RuntimeError("x")


def test_exponential_without_jitter_doubles_and_caps() -> None:
    policy = ExponentialBackoff(base=1, factor=2, max_delay=10, jitter=False)
    assert [policy(a, ERR, job(a)) for a in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_exponential_full_jitter_stays_within_the_ceiling_and_spreads() -> None:
    policy = ExponentialBackoff(base=1, factor=2, max_delay=3600, rng=random.Random(1))
    draws = [policy(5, ERR, job(5)) for _ in range(2000)]
    assert all(0 <= d <= 16 for d in draws)
    assert min(draws) < 2 and max(draws) > 14  # full jitter uses the whole window
    assert 7 < sum(draws) / len(draws) < 9  # uniform on [0, 16]: mean 8


def test_exponential_survives_huge_attempt_numbers() -> None:
    assert ExponentialBackoff(jitter=False, max_delay=99).ceiling(100_000) == 99


def test_constant_and_linear() -> None:
    assert [ConstantBackoff(7)(a, ERR, job(a)) for a in (1, 5)] == [7, 7]
    assert [LinearBackoff(step=5, max_delay=12)(a, ERR, job(a)) for a in (1, 2, 3)] == [5, 10, 12]


@pytest.mark.parametrize("bad", [lambda: ExponentialBackoff(base=-1), lambda: ExponentialBackoff(factor=0.5),
                                 lambda: ConstantBackoff(-1), lambda: LinearBackoff(step=-2)])  # fmt: skip
def test_bad_policy_parameters_are_refused(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        bad()


def test_any_callable_is_a_policy_and_is_capped() -> None:
    def policy(attempt: int, error: BaseException, j: Job) -> float:
        return 1e9 if isinstance(error, TimeoutError) else attempt * 0.5

    assert retry_delay(policy, 3, ERR, job(3), cap=60) == 1.5
    assert retry_delay(policy, 3, TimeoutError(), job(3), cap=60) == 60


def test_a_broken_policy_falls_back_to_the_cap_instead_of_losing_the_job() -> None:
    def raising(attempt: int, error: BaseException, j: Job) -> float:
        raise ZeroDivisionError

    assert retry_delay(raising, 1, ERR, job(1), cap=30) == 30
    assert retry_delay(lambda a, e, j: float("nan"), 1, ERR, job(1), cap=30) == 30
    assert retry_delay(lambda a, e, j: -5, 1, ERR, job(1), cap=30) == 0


def test_retry_budget() -> None:
    assert [has_retries_left(job(a, max_retries=3)) for a in (1, 2, 3, 4)] == [True, True, True, False]
    assert next_retry_in(job(4, max_retries=3), ERR) is None
    assert next_retry_in(job(1, max_retries=0), ERR) is None
    assert next_retry_in(job(2, max_retries=3), ERR, ConstantBackoff(9)) == 9
