"""``POST /task`` and ``POST /tasks``: seed 002's enqueue endpoints, as aliases.

A producer written for that service sends ``{"type", "payload", "priority", "execute_at"}``
to ``/task`` and a plain JSON array of them to ``/tasks``. Each item becomes the
:class:`~pqueue.web.models.JobIn` it stands for (the priority naming the queue), and the
answer is ``/jobs``'s or ``/jobs/batch``'s, from the same functions: one set of rules,
two spellings (ADR 0154).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from pqueue.client import AsyncClient
from pqueue.web.api import enqueue_many, enqueue_one
from pqueue.web.guard import BODY_BYTES_KEY
from pqueue.web.models import BatchIn, BatchOut, EnqueuedOut, TaskIn
from pqueue.web.settings import WebSettings

TaskList = Annotated[list[TaskIn], Field(min_length=1), Body(description="The jobs, as a plain JSON array.")]


def alias_routes(client: AsyncClient, settings: WebSettings) -> APIRouter:
    """The two alias routes over ``client``."""
    router = APIRouter(tags=["jobs"])

    @router.post(
        "/task",
        status_code=201,
        response_model=EnqueuedOut,
        responses={200: {"model": EnqueuedOut, "description": "A unique key matched: nothing was added."}},
        summary="Enqueue one job, seed 002's way (alias of POST /jobs)",
    )
    async def enqueue_task(task: TaskIn) -> JSONResponse:
        return await enqueue_one(client, task.to_job())

    @router.post(
        "/tasks",
        response_model=BatchOut,
        summary="Enqueue many jobs, seed 002's way (alias of POST /jobs/batch)",
    )
    async def enqueue_tasks(tasks: TaskList, request: Request) -> JSONResponse:
        batch = BatchIn(jobs=[task.to_job() for task in tasks])
        return await enqueue_many(client, settings, batch, request.scope.get(BODY_BYTES_KEY))

    return router
