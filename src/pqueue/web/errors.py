"""Every error the API answers is JSON ``{"error": code, "detail": text}`` with a 4xx/5xx.

The exception handlers here translate pqueue's errors (one tree, :mod:`pqueue.errors`),
request-validation errors and unknown routes into that shape. Nothing else leaves the
process: no traceback, and no DSN password (:func:`scrub` masks ``user:password@`` in any
text first), neither in a response nor in a log line.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from pqueue.errors import (
    BrokerError,
    BrokerUnavailable,
    ClientClosed,
    InvalidJob,
    InvalidRequest,
    JobNotFound,
    PayloadTooLarge,
    PQueueError,
)

log = logging.getLogger("pqueue.web")

_PASSWORD_RE = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def scrub(text: str) -> str:
    """``text`` with any URL password replaced by ``***`` (driver messages may echo a DSN)."""
    return _PASSWORD_RE.sub(r"\1***@", text)


def error_body(
    status: int, error: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one error response: ``{"error": ..., "detail": ...}``."""
    return JSONResponse({"error": error, "detail": scrub(detail)}, status_code=status, headers=headers)


def encode_error(error: str, detail: str) -> bytes:
    """The same body as bytes, for the ASGI guard that answers before any route runs."""
    return json.dumps({"error": error, "detail": detail}).encode()


def item_name(index: int) -> str:
    """How an error names one job of a batch (``POST /jobs/batch`` and ``POST /tasks``
    alike, as docs/web.md documents): ``jobs[3]``."""
    return f"jobs[{index}]"


_STATUS: Sequence[tuple[type[PQueueError], int, str]] = (
    (JobNotFound, 404, "not_found"),
    (PayloadTooLarge, 413, "too_large"),  # a job over its limit, as a body over its limit is
    (InvalidJob, 422, "invalid_job"),
    (InvalidRequest, 422, "invalid_request"),
    (BrokerUnavailable, 503, "broker_unavailable"),
    (ClientClosed, 503, "shutting_down"),
    (BrokerError, 502, "broker_error"),
)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.add_exception_handler(PQueueError, _pqueue_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)


async def _pqueue_error(request: Request, exc: PQueueError) -> Response:
    response = pqueue_response(exc, f"{request.method} {request.url.path}")
    return response if response is not None else await _unexpected(request, exc)


def pqueue_response(exc: PQueueError, where: str) -> Response | None:
    """The answer to a pqueue error (None for one that is a bug, not the caller's doing)."""
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            if status >= 500:
                log.warning("%s: %s: %s", where, type(exc).__name__, scrub(str(exc)))
            return error_body(status, code, str(exc))
    return None


async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
    return validation_response(list(exc.errors()))


def validation_response(problems: Sequence[Any]) -> Response:
    """400 for malformed JSON, else 422 naming each field (the first five) and what is wrong."""
    if any(p.get("type") == "json_invalid" for p in problems):
        return error_body(400, "malformed_json", "the body is not valid JSON: " + _describe(problems[0]))
    return error_body(422, "invalid_request", "; ".join(_describe(p) for p in problems[:5]))


def _describe(problem: Any) -> str:
    """``jobs[3].queue: Input should be a valid string`` from one pydantic error."""
    loc = tuple(problem.get("loc", ()))
    parts = loc[1:] if loc[:1] == ("body",) else loc
    where = ""
    if parts and isinstance(parts[0], int):  # a body that is an array (POST /tasks) is a batch's jobs
        where, parts = item_name(parts[0]), parts[1:]
    for part in parts:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    message = str(problem.get("msg", "invalid"))
    if loc == ("body",) and problem.get("type") in _NOT_AN_OBJECT:
        message = "the body must be a JSON object, sent with Content-Type: application/json"
    return f"{where or loc[0] if loc else where}: {message}" if loc else message


_NOT_AN_OBJECT = frozenset({"model_attributes_type", "dict_type", "model_type"})


async def _http_error(request: Request, exc: HTTPException) -> Response:
    codes = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 401: "unauthorized"}
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    headers = dict(exc.headers or {})
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no such endpoint: {request.method} {request.url.path}"
    if exc.status_code == 405:
        # Starlette names only the first route's methods; a path served by several routes
        # (GET and POST /jobs) allows all of theirs.
        allowed = _allowed_methods(request)
        headers["Allow"] = ", ".join(allowed)
        detail = f"{request.method} is not allowed here; use {' or '.join(allowed)}"
    return error_body(exc.status_code, codes.get(exc.status_code, "http_error"), detail, headers)


def _allowed_methods(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


async def _unexpected(request: Request, exc: Exception) -> Response:
    # The class and a scrubbed message, never the traceback: logs are shipped and read widely.
    log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, scrub(str(exc)))
    return error_body(500, "internal", "internal error; the server log has the cause")
