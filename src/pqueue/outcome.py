"""The retry-or-dead decision shared by every backend's worker: policy above the seam."""

from __future__ import annotations

from pqueue.job import Job
from pqueue.retry import DEFAULT_MAX_DELAY, DEFAULT_RETRY_POLICY, RetryPolicy, retry_delay


def has_retries_left(job: Job) -> bool:
    """True while the attempt that just failed was not the last one allowed.

    ``max_retries=3`` allows 4 runs in all: attempts 1..3 may retry, attempt 4 may not.
    """
    return job.attempt <= job.max_retries


def next_retry_in(
    job: Job,
    error: BaseException,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    *,
    cap: float = DEFAULT_MAX_DELAY,
) -> float | None:
    """Seconds until the next attempt of ``job`` after ``error``, or None to dead-letter it."""
    if not has_retries_left(job):
        return None
    return retry_delay(policy, job.attempt, error, job, cap=cap)
