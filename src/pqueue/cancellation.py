"""Which running jobs of this process have been asked to stop: what ``Job.cancelled()`` reads.

A handler receives a frozen :class:`~pqueue.job.Job`, shared with the worker, so the
cancel flag cannot live on it. The worker marks a job here when a cancel of it arrives
(from the broker's push channel or, as a fallback, the heartbeat) and unmarks it when the
run ends. A plain set of ids: reading it is one hash lookup, and a job never cancelled
costs nothing else (ADR 0106).
"""

from __future__ import annotations

_requested: set[str] = set()


def request(job_id: str) -> None:
    """Mark a job of this process as asked to stop (the worker does this)."""
    _requested.add(job_id)


def clear(job_id: str) -> None:
    """Forget the mark once the job's run ended (the worker does this)."""
    _requested.discard(job_id)


def requested(job_id: str) -> bool:
    """Whether a cancel of this job has reached this process while it runs."""
    return job_id in _requested


def any_requested() -> bool:
    """Whether any job of this process is marked (a cheap guard for the worker's hot path)."""
    return bool(_requested)
