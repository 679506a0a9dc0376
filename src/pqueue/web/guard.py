"""The ASGI guard in front of every route: token, body size, and last-resort errors.

It runs before routing and before the body is parsed, so a caller without a valid token
cannot make the server read or parse a body (a malformed body with no token is a 401,
not a 422), and an oversized body is refused from its ``Content-Length`` or, when sent
chunked, as soon as it passes the limit -- never buffered beyond it. The body it read is
handed to the app in one piece.

Which paths need what:

- open: ``/healthz``, ``/readyz``, and the pages that hold no data (the dashboard's
  shell ``/`` and ``/static/*``, ``/docs``, ``/openapi.json``); ``/metrics`` when
  ``metrics_public``; ``POST /session/redeem``, whose sign-in code is its credential;
- ``GET``/``HEAD``: the read-only or the admin token, or a dashboard session opened by
  a sign-in link (:class:`~pqueue.web.auth.SignIns`) with the role of the token that
  minted it;
- ``POST /session/link``: either token, never a session (a session must not outlive
  itself by minting another); the link carries the caller's role;
- any other method: the admin token or an admin session (read-only gets 403).

A query parameter given twice is refused (422) unless it is a list (``ids``): otherwise
the app would silently take one of the two values, whichever the framework picks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from pqueue.web.auth import Role, SignIns, Tokens, refusal
from pqueue.web.errors import encode_error, scrub
from pqueue.web.settings import WebSettings

log = logging.getLogger("pqueue.web")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LINK_PATH = "/session/link"
"""Mints a one-time sign-in link for the dashboard (:mod:`pqueue.web.signin`)."""
REDEEM_PATH = "/session/redeem"
"""Trades a sign-in link's code for a session token: open, the code is the credential."""
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/", "/docs", "/openapi.json", "/favicon.ico", REDEEM_PATH})
OPEN_PREFIXES = ("/static/",)
READ_METHODS = frozenset({"GET", "HEAD"})
REPEATABLE_PARAMS = frozenset({"ids"})
"""Query parameters that are lists; every other one may appear once."""
ONE_JOB_PATHS = frozenset({"/jobs", "/task"})
"""Paths whose body is one job: bounded by ``max_job_bytes`` rather than ``max_request_bytes``."""
ROLE_KEY = "pqueue.role"
"""Where the guard leaves the caller's role in the scope (``request.scope``)."""
BODY_BYTES_KEY = "pqueue.body_bytes"
"""Where the guard leaves the size of the body it read (a batch's jobs are held to
``max_job_bytes`` each; a body within that limit needs no look at each job)."""


def route_path(scope: Scope) -> str:
    """The path inside this app, also when it is mounted under a prefix."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


class Guard:
    """Pure ASGI middleware: authorise, bound the body, and answer errors as JSON."""

    def __init__(self, app: ASGIApp, settings: WebSettings, signins: SignIns | None = None) -> None:
        self.app = app
        self.settings = settings
        self.tokens = Tokens(settings.token, settings.read_token)
        self.signins = signins if signins is not None else SignIns()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = route_path(scope), scope["method"]
        refusal = self._authorise(scope, path, method)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        repeated = repeated_param(scope.get("query_string", b""))
        if repeated is not None:
            await _answer(send, 422, "invalid_request", f"query parameter {repeated!r} given more than once")
            return
        if method in READ_METHODS:
            await self._run(scope, receive, send)
            return
        limit = self.settings.max_job_bytes if path in ONE_JOB_PATHS else self.settings.max_request_bytes
        body = await _read_body(scope, receive, limit)
        if body is None:
            await _answer(send, 413, "too_large", f"the body is larger than {limit} bytes")
            return
        scope[BODY_BYTES_KEY] = len(body)
        await self._run(scope, _replay(body, receive), send)

    def _authorise(self, scope: Scope, path: str, method: str) -> tuple[int, str, str, bool] | None:
        """None when the request may go on, else (status, error, detail, ask for a token)."""
        if self.settings.insecure_no_auth:
            scope[ROLE_KEY] = Role.ADMIN
            return None
        if (
            path in OPEN_PATHS
            or path.startswith(OPEN_PREFIXES)
            or (path == "/metrics" and self.settings.metrics_public)
        ):
            return None
        header = dict(scope.get("headers", ())).get(b"authorization")
        role = self.tokens.role(header)
        session = role is None and (role := self.signins.role(header)) is not None
        if role is None:
            return 401, "unauthorized", f"{refusal(header)}: send Authorization: Bearer <token>", True
        if path == LINK_PATH and session:
            return 403, "forbidden", "a dashboard session cannot mint a sign-in link; use an API token", False
        if role is Role.READ and method not in READ_METHODS and path != LINK_PATH:
            return 403, "forbidden", "the read-only token cannot change anything; use the admin token", False
        scope[ROLE_KEY] = role
        return None

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            # The class and a scrubbed message are logged; the traceback stays out of logs and answers.
            log.error(
                "%s %s failed: %s: %s",
                scope["method"],
                route_path(scope),
                type(exc).__name__,
                scrub(str(exc)),
            )
            if started:
                raise
            await _answer(send, 500, "internal", "internal error; the server log has the cause")


def repeated_param(query_string: bytes) -> str | None:
    """The first single-valued query parameter that appears more than once, if any."""
    seen: set[str] = set()
    for name, _ in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if name in seen and name not in REPEATABLE_PARAMS:
            return name
        seen.add(name)
    return None


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it is known to exceed ``limit``."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                if int(value) > limit:
                    return None
            except ValueError:
                return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect, as servers do

    return replay


async def _answer(send: Send, status: int, error: str, detail: str, bearer: bool = False) -> None:
    body = encode_error(error, detail)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
