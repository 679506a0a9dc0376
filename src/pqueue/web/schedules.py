"""``GET /schedules``: the periodic schedules workers run (``Client.schedules()``).

Read-only, so the read-only token may call it (the guard lets every ``GET`` through with
either token). The answer is ``ScheduleInfo.to_dict()`` per schedule, the shape the
dashboard's schedules panel reads.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from pqueue.client import AsyncClient


class ScheduleOut(BaseModel):
    """A schedule (``ScheduleInfo.to_dict()``): times ISO-8601 UTC, ``every`` in seconds."""

    name: str
    type: str
    queue: str
    cron: str | None
    every: float | None
    tz: str
    next_run_at: datetime
    last_run_at: datetime | None
    missed: Literal["skip", "catch_up"]
    catch_up: int


class SchedulesOut(BaseModel):
    schedules: list[ScheduleOut]


def schedules_router(client: AsyncClient) -> APIRouter:
    """The router serving ``GET /schedules`` over ``client``."""
    router = APIRouter()

    @router.get(
        "/schedules",
        response_model=SchedulesOut,
        summary="Periodic schedules with their next and last run",
        tags=["queues"],
    )
    async def schedules() -> JSONResponse:
        return JSONResponse({"schedules": [s.to_dict() for s in await client.schedules()]})

    return router
