"""``create_app``: the HTTP API, ``/metrics``, probes and the dashboard as one ASGI app.

Serve it with ``pqueue serve`` (uvicorn), or mount it in your own FastAPI, Starlette or
Django ASGI application (docs/web.md). ADR 0095 says why FastAPI; ADR 0096 how tokens
and the dashboard's login work; ADR 0160 how it opens signed in (a header, a one-time link).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from prometheus_client import CollectorRegistry

from pqueue import __version__
from pqueue.client import AsyncClient
from pqueue.errors import ConfigError
from pqueue.metrics import JobMetrics
from pqueue.router import Router
from pqueue.web import errors, probes
from pqueue.web.aliases import alias_routes
from pqueue.web.api import build_router
from pqueue.web.auth import SignIns
from pqueue.web.control import build_control_router
from pqueue.web.fast import FastEnqueue
from pqueue.web.guard import REDEEM_PATH, Guard
from pqueue.web.metrics import HttpMetrics, MetricsPage
from pqueue.web.models import ErrorOut, HealthOut
from pqueue.web.schedules import schedules_router
from pqueue.web.settings import WebSettings
from pqueue.web.signin import signin_router

STATIC = Path(__file__).parent / "static"
_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    # Only the page's own script, style and API calls; no framing, no referrer leaks.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
READY_TIMEOUT = probes.READY_TIMEOUT
"""Seconds ``/readyz`` waits for the broker (kept here for those who imported it)."""

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "Malformed JSON."},
    401: {"model": ErrorOut, "description": "No bearer token, or a wrong one."},
    403: {"model": ErrorOut, "description": "The read-only token cannot change anything."},
    404: {"model": ErrorOut, "description": "No such job or endpoint."},
    413: {
        "model": ErrorOut,
        "description": "The body is larger than its limit, or a job of a batch larger than one job's.",
    },
    422: {"model": ErrorOut, "description": "A field is missing, of the wrong type or out of range."},
    503: {"model": ErrorOut, "description": "The broker cannot be reached."},
}


def create_app(
    client: AsyncClient | str,
    *,
    token: str | None = None,
    read_token: str | None = None,
    insecure_no_auth: bool = False,
    metrics_public: bool = False,
    settings: WebSettings | None = None,
    registry: CollectorRegistry | None = None,
    router: Router | None = None,
) -> FastAPI:
    """The API over ``client`` (an :class:`~pqueue.AsyncClient`, or a DSN to open one).

    With a DSN, the app owns its client: it counts enqueued jobs into ``/metrics`` and is
    closed when the app shuts down (when served; a mounted app's client closes with the
    process). With your own client, you close it; give it
    ``middleware=[pqueue.metrics.JobMetrics(registry)]`` with the same ``registry`` to
    count enqueues. ``token``/``read_token``/``insecure_no_auth``/``metrics_public`` are
    shortcuts for :class:`WebSettings` fields; ``settings`` sets the limits too.
    ``router`` (with a DSN; your own client takes it as ``AsyncClient(dsn, router=...)``)
    makes enqueues take their tasks' declarations and refuses unknown types
    (``pqueue serve --app``).
    When served, the app checks the broker once at start and logs one WARNING if it is not
    ready (it serves anyway; ``/readyz`` answers 503 until the broker is back).
    Raises :class:`~pqueue.errors.ConfigError` without a token unless ``insecure_no_auth``.
    """
    settings = settings or WebSettings(
        token=token, read_token=read_token, insecure_no_auth=insecure_no_auth, metrics_public=metrics_public
    )
    registry = registry if registry is not None else CollectorRegistry()
    owned = isinstance(client, str)
    if isinstance(client, str):
        client = AsyncClient(client, middleware=[JobMetrics(registry)], router=router)
    elif router is not None and client.router is not router:
        raise ConfigError("create_app: give the router to your client, AsyncClient(dsn, router=...)")
    page = MetricsPage(client, registry)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await probes.warn_if_not_ready(client)  # at most READY_TIMEOUT; then serve regardless
        yield
        if owned:
            await client.close()

    app = FastAPI(
        title="pqueue",
        version=__version__,
        description="Enqueue and inspect pqueue jobs over HTTP. Send `Authorization: Bearer <token>`.",
        lifespan=lifespan,
        responses=_ERRORS,
        redoc_url=None,
    )
    app.state.pqueue_client = client
    app.state.pqueue_settings = settings
    errors.install(app)
    api = build_router(client, settings)
    app.include_router(api)
    app.include_router(alias_routes(client, settings))
    app.include_router(schedules_router(client))
    app.include_router(build_control_router(client))
    signins = SignIns()
    app.include_router(signin_router(signins))
    _probes_and_metrics(app, client, page)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=_PAGE_HEADERS)

    routes = {path: _route(api, "POST", path) for path in ("/jobs", "/jobs/batch")}
    app.add_middleware(FastEnqueue, client=client, settings=settings, routes=routes)
    app.add_middleware(Guard, settings=settings, signins=signins)
    app.add_middleware(HttpMetrics, registry=registry)
    _declare_bearer(app)
    return app


def _probes_and_metrics(app: FastAPI, client: AsyncClient, page: MetricsPage) -> None:
    @app.get(
        "/healthz", response_model=HealthOut, tags=["probes"], summary="Liveness (never touches the broker)"
    )
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", response_model=HealthOut, tags=["probes"], summary="Readiness: the broker answers")
    async def readyz() -> Response:
        try:
            checked = await probes.readiness(client)
        except probes.NotReady as problem:
            return errors.error_body(503, "not_ready", str(problem))
        return JSONResponse({"status": "ok", "checked": checked})

    @app.get(
        "/metrics",
        tags=["probes"],
        summary="Prometheus metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics() -> Response:
        body, content_type = await page.render()
        return Response(body, media_type=content_type)


def _route(router: APIRouter, method: str, path: str) -> APIRoute:
    """The route serving ``method path`` (the fast path labels its requests with it)."""
    for route in router.routes:
        if isinstance(route, APIRoute) and route.path == path and method in (route.methods or ()):
            return route
    raise LookupError(f"no route {method} {path}")


_OPEN = {"/healthz", "/readyz", REDEEM_PATH}


def _declare_bearer(app: FastAPI) -> None:
    """Say in the OpenAPI document which operations need the bearer token (the guard
    enforces it before routing; this is only its description)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "admin or read-only token"}
            }
            settings: WebSettings = app.state.pqueue_settings
            for path, operations in schema.get("paths", {}).items():
                if path in _OPEN or (path == "/metrics" and settings.metrics_public):
                    continue
                if settings.insecure_no_auth:
                    continue
                for operation in operations.values():
                    operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
