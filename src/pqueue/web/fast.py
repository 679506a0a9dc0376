"""``POST /jobs`` without FastAPI's per-request dispatch: the API's hot path.

Single enqueues are the one endpoint that must answer thousands of times a second. On
this project's machine FastAPI's routing, dependency solving and response handling cost
about 0.3 ms of CPU per request. That is more than the enqueue itself on Redis. This
pure-ASGI step answers a JSON ``POST /jobs`` directly, and the rules stay the same:

- it parses the body with the same :class:`~pqueue.web.models.JobIn` model (pydantic's
  ``model_validate_json``: the same checks, the same error list);
- it answers with the same function as the route (:func:`pqueue.web.api.enqueue_one`);
- it turns errors into the same responses (:mod:`pqueue.web.errors`).

It runs inside the guard (token and body limit already checked). It hands every other
request, and a ``POST /jobs`` that is not ``application/json``, to the FastAPI app.
``/openapi.json`` still documents the route. It sets ``scope["route"]`` to that route,
so ``/metrics`` labels the request as FastAPI would.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.responses import Response

from pqueue.client import AsyncClient
from pqueue.errors import PQueueError
from pqueue.web.api import enqueue_one
from pqueue.web.errors import pqueue_response, validation_response
from pqueue.web.guard import ASGIApp, Receive, Scope, Send, route_path
from pqueue.web.models import JobIn


class FastEnqueue:
    """Pure ASGI middleware answering JSON ``POST /jobs`` itself."""

    def __init__(self, app: ASGIApp, client: AsyncClient, route: Any) -> None:
        self.app = app
        self.client = client
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and route_path(scope) == "/jobs"
            and _is_json(scope)
        ):
            await self.app(scope, receive, send)
            return
        scope["route"] = self.route
        body = b""
        while True:  # the guard hands the body over in one message; this also takes more
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        response: Response
        try:
            response = await enqueue_one(self.client, JobIn.model_validate_json(body))
        except ValidationError as exc:
            response = validation_response([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])
        except PQueueError as exc:
            answer = pqueue_response(exc, "POST /jobs")
            if answer is None:
                raise
            response = answer
        await response(scope, receive, send)


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return bool(value.split(b";", 1)[0].strip().lower() == b"application/json")
    return False
