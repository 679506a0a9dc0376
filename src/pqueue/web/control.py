"""The control endpoints: pause and resume a queue (admin token), list paused queues.

Each translates one request into one public Client call (``AsyncClient.pause``,
``resume``, ``paused_queues``); cancelling a running job is the existing
``DELETE /jobs/{id}``, which ``AsyncClient.cancel`` now carries to running jobs.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from pqueue.client import AsyncClient
from pqueue.spec import QUEUE_NAME_RE
from pqueue.web.models import doc_pattern

QueuePath = Annotated[
    str, Path(description="The queue's name.", json_schema_extra={"pattern": doc_pattern(QUEUE_NAME_RE)})
]


class QueueStateOut(BaseModel):
    queue: str
    paused: bool = Field(description="Whether the queue is paused now.")
    changed: bool = Field(description="False when it already was in that state.")


class PausedOut(BaseModel):
    paused: list[str] = Field(description="The paused queues, by name.")


def build_control_router(client: AsyncClient) -> APIRouter:
    """The pause/resume routes over ``client``."""
    router = APIRouter(tags=["queues"])

    @router.post(
        "/queues/{queue}/pause",
        response_model=QueueStateOut,
        summary="Pause a queue: workers claim nothing more from it (enqueues go on)",
    )
    async def pause(queue: QueuePath) -> dict[str, Any]:
        return {"queue": queue, "paused": True, "changed": await client.pause(queue)}

    @router.post("/queues/{queue}/resume", response_model=QueueStateOut, summary="Resume a paused queue")
    async def resume(queue: QueuePath) -> dict[str, Any]:
        return {"queue": queue, "paused": False, "changed": await client.resume(queue)}

    @router.get("/queues/paused", response_model=PausedOut, summary="The paused queues")
    async def paused() -> dict[str, Any]:
        return {"paused": await client.paused_queues()}

    return router
