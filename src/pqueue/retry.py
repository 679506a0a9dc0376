"""Retry policies: how long to wait before the next attempt of a failed job.

A policy is any callable ``(attempt, error, job) -> seconds``; ``attempt`` is the
attempt that just failed (1 for the first run). The worker asks the policy only when
the job still has retries left; the dead-letter decision is the worker's, not the
policy's. Every delay is capped.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from pqueue.job import Job

RetryPolicy = Callable[[int, BaseException, Job], float]
"""``(attempt, error, job) -> seconds`` until the next attempt."""

DEFAULT_MAX_DELAY = 3600.0


def _check(name: str, value: float, *, positive: bool = False) -> float:
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ExponentialBackoff:
    """``base * factor**(attempt-1)`` capped at ``max_delay``, with full jitter by default.

    Full jitter (a uniform draw in ``[0, delay]``) spreads a thundering herd of failures
    over the whole window; ``jitter=False`` gives the plain exponential delay.
    """

    base: float = 1.0
    factor: float = 2.0
    max_delay: float = DEFAULT_MAX_DELAY
    jitter: bool = True
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check("base", self.base)
        _check("max_delay", self.max_delay)
        if self.factor < 1:
            raise ValueError(f"factor must be >= 1, got {self.factor!r}")

    def ceiling(self, attempt: int) -> float:
        """The un-jittered delay after ``attempt`` failed."""
        exponent = max(attempt - 1, 0)
        try:
            delay = self.base * self.factor**exponent
        except OverflowError:
            return self.max_delay
        return min(delay, self.max_delay)

    def __call__(self, attempt: int, error: BaseException, job: Job) -> float:
        ceiling = self.ceiling(attempt)
        return self.rng.uniform(0.0, ceiling) if self.jitter else ceiling


@dataclass(frozen=True)
class ConstantBackoff:
    """The same delay after every failure."""

    delay: float = 10.0

    def __post_init__(self) -> None:
        _check("delay", self.delay)

    def __call__(self, attempt: int, error: BaseException, job: Job) -> float:
        return self.delay


@dataclass(frozen=True)
class LinearBackoff:
    """``step * attempt``, capped at ``max_delay``."""

    step: float = 10.0
    max_delay: float = DEFAULT_MAX_DELAY

    def __post_init__(self) -> None:
        _check("step", self.step)
        _check("max_delay", self.max_delay)

    def __call__(self, attempt: int, error: BaseException, job: Job) -> float:
        return min(self.step * max(attempt, 1), self.max_delay)


def retry_delay(
    policy: RetryPolicy, attempt: int, error: BaseException, job: Job, *, cap: float = DEFAULT_MAX_DELAY
) -> float:
    """Ask ``policy`` for a delay and clamp it to ``[0, cap]``; a broken policy falls back to ``cap``.

    A user-supplied callable may return garbage or raise; the job must still be
    rescheduled rather than lost, so the worst case is the longest wait.
    """
    try:
        delay = float(policy(attempt, error, job))
    except Exception:  # noqa: BLE001 - a faulty policy must not lose the job
        return cap
    if math.isnan(delay):
        return cap
    return min(max(delay, 0.0), cap)


DEFAULT_RETRY_POLICY: RetryPolicy = ExponentialBackoff()
