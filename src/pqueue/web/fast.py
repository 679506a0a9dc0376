"""``POST /jobs`` and ``POST /jobs/batch`` without FastAPI's per-request dispatch: the
API's hot paths.

Single enqueues must answer thousands of times a second: on this project's machine
FastAPI's routing, dependency solving and response handling cost about 0.3 ms of CPU per
request, more than the enqueue itself on Redis. A batch of thousands of jobs pays twice
for its body instead: FastAPI parses it with ``json.loads`` and then validates the Python
objects, where pydantic's ``model_validate_json`` does both in one pass (about 5 µs a job
less). This pure-ASGI step answers both directly, and the rules stay the same:

- it parses the body with the same models (:class:`~pqueue.web.models.JobIn`,
  :class:`~pqueue.web.models.BatchIn`): the same checks, the same error list;
- it answers with the same functions as the routes (:func:`pqueue.web.api.enqueue_one`,
  :func:`pqueue.web.api.enqueue_many`);
- it turns errors into the same responses (:mod:`pqueue.web.errors`).

It runs inside the guard (token and body limit already checked). It hands every other
request, and a POST that is not ``application/json``, to the FastAPI app.
``/openapi.json`` still documents the routes. It sets ``scope["route"]`` to the route,
so ``/metrics`` labels the request as FastAPI would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.responses import Response

from pqueue.client import AsyncClient
from pqueue.errors import PQueueError
from pqueue.web.api import enqueue_many, enqueue_one
from pqueue.web.errors import pqueue_response, validation_response
from pqueue.web.guard import ASGIApp, Receive, Scope, Send, route_path
from pqueue.web.models import BatchIn, JobIn
from pqueue.web.settings import WebSettings

Answer = Callable[[Any, int], Awaitable[Response]]
"""Answers a validated body of so many bytes."""


class FastEnqueue:
    """Pure ASGI middleware answering JSON ``POST /jobs`` and ``POST /jobs/batch`` itself."""

    def __init__(
        self, app: ASGIApp, client: AsyncClient, settings: WebSettings, routes: dict[str, Any]
    ) -> None:
        """``routes`` maps ``/jobs`` and ``/jobs/batch`` to their FastAPI routes (for labels)."""
        self.app = app
        self.paths: dict[str, tuple[Any, type[BaseModel], Answer]] = {
            "/jobs": (routes["/jobs"], JobIn, lambda job, _: enqueue_one(client, job)),
            "/jobs/batch": (
                routes["/jobs/batch"],
                BatchIn,
                lambda batch, size: enqueue_many(client, settings, batch, size),
            ),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route_path(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        fast = self.paths.get(path) if path is not None and _is_json(scope) else None
        if fast is None:
            await self.app(scope, receive, send)
            return
        route, model, answer = fast
        scope["route"] = route
        body = b""
        while True:  # the guard hands the body over in one message; this also takes more
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        response: Response
        try:
            response = await answer(model.model_validate_json(body), len(body))
        except ValidationError as exc:
            response = validation_response([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])
        except PQueueError as exc:
            refusal = pqueue_response(exc, f"POST {path}")
            if refusal is None:
                raise
            response = refusal
        await response(scope, receive, send)


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return bool(value.split(b";", 1)[0].strip().lower() == b"application/json")
    return False
