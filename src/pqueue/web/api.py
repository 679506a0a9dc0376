"""The JSON endpoints: each translates one HTTP request into one public Client call.

Validation of what a job may be lives in :mod:`pqueue.spec` (through ``Client.enqueue*``);
this module maps request fields to :class:`pqueue.Task` and answers with the models'
``to_dict()`` shapes. Errors are raised as pqueue errors and turned into JSON by
:mod:`pqueue.web.errors`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any, cast

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from pqueue.client import AsyncClient
from pqueue.clock import to_iso
from pqueue.durations import parse_duration
from pqueue.errors import InvalidJob, InvalidRequest, PayloadTooLarge
from pqueue.job import JobStatus
from pqueue.options import SHARED_OPTION_NAMES, JobOptions, task_of
from pqueue.spec import DEFAULT_QUEUE, JOB_TYPE_RE, QUEUE_NAME_RE
from pqueue.task import Task
from pqueue.web.auth import Role
from pqueue.web.errors import item_name
from pqueue.web.guard import BODY_BYTES_KEY, ROLE_KEY
from pqueue.web.models import (
    JOB_IN_OPTIONS,
    BatchIn,
    BatchOut,
    CancelOut,
    CountOut,
    EnqueuedOut,
    JobIn,
    JobListOut,
    JobOut,
    QueuesOut,
    RequeueIn,
    SessionOut,
    StatsOut,
    WorkersOut,
    doc_pattern,
)
from pqueue.web.settings import WebSettings

MAX_PAGE = 500
"""Jobs in one page of ``GET /jobs``."""

QueueQuery = Annotated[
    str | None,
    Query(description="Only this queue.", json_schema_extra={"pattern": doc_pattern(QUEUE_NAME_RE)}),
]


def to_task(job: JobIn) -> Task:
    """The :class:`Task` a request item asks for (its options unchecked until enqueue)."""
    options = {name: getattr(job, name) for name in JOB_IN_OPTIONS}
    return task_of(job.type, job.payload, cast("JobOptions", options))


_SHARED = tuple(name for name in JOB_IN_OPTIONS if name in SHARED_OPTION_NAMES)
"""The request fields ``Client.enqueue_map`` can give a whole batch alike."""
_OWN_DEFAULTS = tuple(
    (name, JobIn.model_fields[name].default) for name in JOB_IN_OPTIONS if name not in SHARED_OPTION_NAMES
)
"""The per-job request fields (keys, parents, limits) with their defaults."""


def _own_options(job: JobIn) -> bool:
    """Whether a request item has an option ``Client.enqueue_map`` cannot share across a
    batch: a per-job key, parents or a limit."""
    return any(getattr(job, name) != default for name, default in _OWN_DEFAULTS)


def shared_options(jobs: list[JobIn]) -> dict[str, Any] | None:
    """The options every job of a batch shares, when they share all but the payload and
    none has options of its own (:func:`_own_options`); None otherwise.

    Such a batch is exactly ``Client.enqueue_map(type, payloads, **options)``, which checks
    the options once instead of once per job (about a third of the cost of a job).
    """
    first = jobs[0]
    key = (first.type, *(getattr(first, name) for name in _SHARED))
    for job in jobs:
        if _own_options(job):
            return None
        if (job.type, *(getattr(job, name) for name in _SHARED)) != key:
            return None
    return {name: getattr(first, name) for name in _SHARED}


def bad_item(tasks: list[Task]) -> InvalidJob | None:
    """The first invalid task's error, prefixed with its index (``jobs[3]: invalid queue name ...``)."""
    for index, task in enumerate(tasks):
        try:
            task.to_spec()
        except InvalidJob as exc:
            return InvalidJob(f"{item_name(index)}: {exc}")
    return None


_JOB_JSON = JobIn.__pydantic_serializer__.to_json


def oversized_job(jobs: Sequence[JobIn], limit: int, body_bytes: int | None = None) -> PayloadTooLarge | None:
    """The error for the first job of a batch larger than ``limit`` bytes (``max_job_bytes``,
    the limit of a ``POST /jobs`` body), written as compact JSON; None when each fits.

    A batch's jobs are held to the limit of one job, so no route lets in a job that ``/jobs``
    would refuse. A body of at most ``limit`` bytes (``body_bytes``) holds no job over it:
    only bigger batches pay for sizing each job (about 2 µs a job).
    """
    if body_bytes is not None and body_bytes <= limit:
        return None
    for index, job in enumerate(jobs):
        size = len(_JOB_JSON(job, exclude_defaults=True))
        if size > limit:
            return PayloadTooLarge(
                f"{item_name(index)}: the job is larger than {limit} bytes, the limit of one job "
                f"({size} bytes as JSON)"
            )
    return None


async def enqueue_one(client: AsyncClient, job: JobIn) -> JSONResponse:
    """``POST /jobs``: the answer for one validated request body (used by the route and by
    :class:`pqueue.web.fast.FastEnqueue`)."""
    task = to_task(job)
    if client.router is not None and (handler := client.router.get(task.type)) is not None:
        task = handler.defaults(task)
    now = time.time()
    result = await client.enqueue_task(task)  # JobNotFound (404): a parent in depends_on
    if not result.created or task.depends_on:  # waiting, or pending if its parents are done
        stored = await client.get_job(result.id)
        code = 201 if result.created else 200
        return _enqueued(
            code, result.id, stored.queue, stored.status, stored.run_at.timestamp(), created=result.created
        )
    due = task.run_at.timestamp() if task.run_at is not None else now + (job.delay or 0.0)
    status = JobStatus.SCHEDULED if due > now else JobStatus.PENDING
    return _enqueued(201, result.id, task.queue or DEFAULT_QUEUE, status, due, created=True)


async def enqueue_many(
    client: AsyncClient, settings: WebSettings, batch: BatchIn, body_bytes: int | None = None
) -> JSONResponse:
    """``POST /jobs/batch``: the answer for one validated request body of ``body_bytes``
    (None: unknown) bytes, used by the route, by ``POST /tasks`` and by
    :class:`pqueue.web.fast.FastEnqueue`. One broker round trip, or nothing stored."""
    jobs = batch.jobs
    if len(jobs) > settings.max_batch:
        raise InvalidRequest(f"jobs: {len(jobs)} jobs; one batch holds at most {settings.max_batch}")
    if (too_large := oversized_job(jobs, settings.max_job_bytes, body_bytes)) is not None:
        raise too_large
    try:
        shared = shared_options(jobs)
        if shared is not None:  # one type, one set of options: Client.enqueue_map's bulk path
            results = await client.enqueue_map(jobs[0].type, [job.payload for job in jobs], **shared)
        else:
            results = await client.enqueue_many([to_task(job) for job in jobs])
    except InvalidJob as exc:
        raise bad_item([to_task(job) for job in jobs]) or exc from None
    return JSONResponse({"jobs": [{"id": r.id, "created": r.created} for r in results]})


def build_router(client: AsyncClient, settings: WebSettings) -> APIRouter:
    """The API routes over ``client``."""
    router = APIRouter()
    _enqueue_routes(router, client, settings)
    _job_routes(router, client)
    _queue_routes(router, client)
    _dead_routes(router, client)
    return router


def _enqueue_routes(router: APIRouter, client: AsyncClient, settings: WebSettings) -> None:

    @router.post(
        "/jobs",
        status_code=201,
        response_model=EnqueuedOut,
        responses={200: {"model": EnqueuedOut, "description": "A unique key matched: nothing was added."}},
        summary="Enqueue one job",
        tags=["jobs"],
    )
    async def enqueue(job: JobIn) -> JSONResponse:
        return await enqueue_one(client, job)

    @router.post(
        "/jobs/batch", response_model=BatchOut, summary="Enqueue many jobs in one round trip", tags=["jobs"]
    )
    async def enqueue_batch(batch: BatchIn, request: Request) -> JSONResponse:
        return await enqueue_many(client, settings, batch, request.scope.get(BODY_BYTES_KEY))


def _job_routes(router: APIRouter, client: AsyncClient) -> None:

    @router.get("/jobs/{job_id}", response_model=JobOut, summary="One job", tags=["jobs"])
    async def get_job(job_id: str) -> JSONResponse:
        return JSONResponse((await client.get_job(job_id)).to_dict())

    @router.delete(
        "/jobs/{job_id}", response_model=CancelOut, summary="Cancel a waiting or running job", tags=["jobs"]
    )
    async def cancel(job_id: str) -> dict[str, Any]:
        return {"id": job_id, "cancelled": await client.cancel(job_id)}

    @router.get("/jobs", response_model=JobListOut, summary="A page of jobs in one status", tags=["jobs"])
    async def list_jobs(
        status: Annotated[JobStatus, Query(description="Jobs in this status.")],
        queue: QueueQuery = None,
        type: Annotated[
            str | None,
            Query(description="Only this job type.", json_schema_extra={"pattern": doc_pattern(JOB_TYPE_RE)}),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[
            str | None, Query(description="next_cursor of the previous page.", pattern=r"^[0-9]{1,12}$")
        ] = None,
    ) -> JSONResponse:
        offset = int(cursor) if cursor is not None else 0
        page = await client.list_jobs(status, queue=queue, type=type, limit=limit, offset=offset)
        next_cursor = None if page.next_offset is None else str(page.next_offset)
        return JSONResponse({"jobs": [job.to_dict() for job in page.jobs], "next_cursor": next_cursor})

    @router.get("/session", response_model=SessionOut, summary="What this token may do", tags=["auth"])
    async def session(request: Request) -> dict[str, str]:
        return {"role": str(request.scope.get(ROLE_KEY, Role.READ))}


def _queue_routes(router: APIRouter, client: AsyncClient) -> None:

    @router.get(
        "/queues", response_model=QueuesOut, summary="Queues with their depths and rates", tags=["queues"]
    )
    async def queues() -> dict[str, Any]:
        stats = (await client.stats()).to_dict()
        return {
            "queues": [
                {
                    "name": name,
                    "jobs": counts,
                    "oldest_pending_age": stats["oldest_pending_age"].get(name),
                    "done_per_second": stats["done_per_second"].get(name, 0.0),
                    "paused": name in stats["paused"],
                }
                for name, counts in sorted(stats["queues"].items())
            ]
        }

    @router.get("/stats", response_model=StatsOut, summary="Counts, rates and workers", tags=["queues"])
    async def stats() -> JSONResponse:
        return JSONResponse((await client.stats()).to_dict())

    @router.get("/workers", response_model=WorkersOut, summary="Live workers", tags=["queues"])
    async def workers() -> JSONResponse:
        return JSONResponse({"workers": [w.to_dict() for w in await client.list_workers()]})


def _dead_routes(router: APIRouter, client: AsyncClient) -> None:

    @router.post(
        "/dead/requeue",
        response_model=CountOut,
        summary="Requeue dead jobs: these ids, a queue's, or (with {}) every one",
        tags=["dead"],
    )
    async def requeue(body: RequeueIn) -> dict[str, int]:
        return {"count": await client.requeue_dead(queue=body.queue, job_ids=body.ids)}

    @router.delete(
        "/dead",
        response_model=CountOut,
        summary="Purge dead jobs matching every filter given (no filter: every dead job)",
        tags=["dead"],
    )
    async def purge(
        queue: QueueQuery = None,
        older_than: Annotated[
            str | None,
            Query(
                description="Only jobs dead this long: seconds, or 30s, 10m, 2h, 7d.",
                pattern=r"^[0-9]{1,9}[smhd]?$",
            ),
        ] = None,
        ids: Annotated[list[str] | None, Query(description="Only these dead jobs.", max_length=1000)] = None,
    ) -> dict[str, int]:
        age = None if older_than is None else parse_duration(older_than)
        return {"count": await client.purge_dead(queue=queue, job_ids=ids, older_than=age)}


def _enqueued(
    code: int, job_id: str, queue: str, status: JobStatus, due: float, *, created: bool
) -> JSONResponse:
    body = {"id": job_id, "queue": queue, "status": status.value, "run_at": to_iso(due), "created": created}
    return JSONResponse(body, status_code=code)
