"""Assertions about what was enqueued: ``assert_enqueued(client, "email:send", payload=...)``.

They read the broker through the client's public inspection API (``scan_jobs``), so they
work on every backend and see jobs in any status: a job that already ran was still
enqueued. A failure message lists what *was* enqueued, so a typo in a type or a payload
shows at a glance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pqueue.broker import JobScan
from pqueue.client import AsyncClient
from pqueue.job import Job
from pqueue.sync import Client


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY: Final[Any] = _Any()
"""The default of ``payload``/``queue``: match any value (``payload=None`` matches a None payload)."""

SHOWN = 20
"""Jobs listed in a failure message at most."""


async def enqueued_async(client: AsyncClient, job_type: str | None = None) -> list[Job]:
    """Every stored job (of ``job_type``, if given), in any status, oldest first."""
    found: list[Job] = []
    async for page in client.scan_jobs(JobScan()):
        found.extend(job for job in page if job_type is None or job.type == job_type)
    found.sort(key=lambda job: (job.created_at, job.id))
    return found


def enqueued(client: Client, job_type: str | None = None) -> list[Job]:
    """The blocking form of :func:`enqueued_async`, for a :class:`~pqueue.Client`."""
    found = [job for page in client.scan_jobs(JobScan()) for job in page]
    found = [job for job in found if job_type is None or job.type == job_type]
    found.sort(key=lambda job: (job.created_at, job.id))
    return found


def _check(jobs: Sequence[Job], job_type: str, payload: Any, queue: Any, count: int | None) -> list[Job]:
    def keeps(job: Job) -> bool:
        return (
            job.type == job_type
            and (payload is ANY or job.payload == payload)
            and (queue is ANY or job.queue == queue)
        )

    matching = [job for job in jobs if keeps(job)]
    if (count is None and matching) or (count is not None and len(matching) == count):
        return matching
    wanted = [repr(job_type)]
    if payload is not ANY:
        wanted.append(f"payload={payload!r}")
    if queue is not ANY:
        wanted.append(f"queue={queue!r}")
    times = "at least once" if count is None else f"{count} time(s)"
    lines = [f"expected a job {' '.join(wanted)} enqueued {times}, found {len(matching)}."]
    if not jobs:
        lines.append("Nothing was enqueued.")
    else:
        lines.append(f"Enqueued ({len(jobs)} job(s)):")
        lines += [
            f"  {job.type!r} queue={job.queue!r} payload={job.payload!r} ({job.status})"
            for job in jobs[:SHOWN]
        ]
        if len(jobs) > SHOWN:
            lines.append(f"  ... and {len(jobs) - SHOWN} more")
    raise AssertionError("\n".join(lines))


async def assert_enqueued_async(
    client: AsyncClient, job_type: str, *, payload: Any = ANY, queue: Any = ANY, count: int | None = None
) -> list[Job]:
    """Assert that a job of ``job_type`` (with this ``payload``, in this ``queue``) was
    enqueued -- ``count`` times exactly, when given (``count=0``: never) -- and return the
    matching jobs. The failure message lists every job that was enqueued."""
    return _check(await enqueued_async(client), job_type, payload, queue, count)


def assert_enqueued(
    client: Client, job_type: str, *, payload: Any = ANY, queue: Any = ANY, count: int | None = None
) -> list[Job]:
    """The blocking form of :func:`assert_enqueued_async`, for a :class:`~pqueue.Client`."""
    return _check(enqueued(client), job_type, payload, queue, count)


def assert_not_enqueued(client: Client, job_type: str, *, payload: Any = ANY, queue: Any = ANY) -> None:
    """Assert that no job of ``job_type`` (with this ``payload``, in this ``queue``) was enqueued."""
    _check(enqueued(client), job_type, payload, queue, 0)
