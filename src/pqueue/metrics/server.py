"""The HTTP side of metrics: ``/metrics``, ``/healthz`` and ``/readyz`` on a daemon thread.

A small WSGI app on the standard library's threading server (prometheus-client serves
its own ``start_http_server`` the same way), with prometheus-client's WSGI app answering
``/metrics`` (text or OpenMetrics, gzip when asked).

- ``/healthz``: liveness -- the process is alive and its event loop answers. It never
  touches the broker: a broker outage must not make Kubernetes restart every worker.
- ``/readyz``: readiness -- the broker answers one cheap call.
- ``/metrics``: when ``token`` is set (``PQUEUE_METRICS_TOKEN``), it needs
  ``Authorization: Bearer <token>``; probes stay open (they tell nothing but ok / not ok).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from pqueue.errors import ConfigError

log = logging.getLogger("pqueue.metrics")

Check = Callable[[], bool]
StartResponse = Callable[..., Any]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes and probes every few seconds are not worth a log line each."""


class MetricsServer:
    """Serve ``registry`` and the two probes on ``host:port`` (port 0: any free port)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        host: str,
        port: int,
        live: Check,
        ready: Check,
        token: str | None = None,
    ) -> None:
        self._metrics = make_wsgi_app(registry)
        self._live, self._ready = live, ready
        self._token = hashlib.sha256(token.encode()).digest() if token else None
        try:
            self._server = make_server(host, port, self._app, _Server, handler_class=_QuietHandler)
        except OSError as exc:  # port taken, no such address, no permission
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from exc
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port served (the one the OS chose when 0 was asked)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="pqueue-metrics", daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        log.info("metrics on http://%s:%d/metrics (probes /healthz, /readyz)", host, port)

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def _app(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _text(start_response, "405 Method Not Allowed", "use GET\n")
        if path == "/metrics":
            if not self._authorized(environ.get("HTTP_AUTHORIZATION", "")):
                return _text(start_response, "401 Unauthorized", "bearer token required\n", bearer=True)
            return self._metrics(environ, start_response)  # type: ignore[no-any-return]
        if path in ("/healthz", "/readyz"):
            check = self._live if path == "/healthz" else self._ready
            if _safely(check):
                return _text(start_response, "200 OK", "ok\n")
            return _text(start_response, "503 Service Unavailable", "not ok\n")
        return _text(start_response, "404 Not Found", "try /metrics, /healthz or /readyz\n")

    def _authorized(self, header: str) -> bool:
        if self._token is None:
            return True
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(hashlib.sha256(given.strip().encode()).digest(), self._token)


def _safely(check: Check) -> bool:
    try:
        return bool(check())
    except Exception as exc:  # noqa: BLE001 - a failing check is a "not ok", not a 500
        log.debug("probe check failed: %s: %s", type(exc).__name__, exc)
        return False


def _text(start_response: StartResponse, status: str, body: str, *, bearer: bool = False) -> list[bytes]:
    data = body.encode()
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
    if bearer:
        headers.append(("WWW-Authenticate", "Bearer"))
    start_response(status, headers)
    return [data]
