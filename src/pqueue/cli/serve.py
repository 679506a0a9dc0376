"""``pqueue serve --dsn ...``: the HTTP API, ``/metrics`` and the dashboard on uvicorn.

Needs the ``web`` extra. Refuses to start without an admin token
(``--api-token``/``PQUEUE_API_TOKEN``) unless ``--insecure-no-auth`` is given, and then
serves loopback only unless ``--insecure-remote`` says otherwise. Prefer the environment
variables for tokens: a command line is readable by every user of the host. ``--app
MODULE:ROUTER`` (``PQUEUE_APP``) gives the API the app's router, so enqueues take their
tasks' declarations and unknown types are refused, as ``Client(dsn, router=...)`` does.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
from typing import Any

from pqueue.brokers import is_known_scheme, known_schemes, redact
from pqueue.cli._app import load_router
from pqueue.cli._options import add_flag, boolean, resolve
from pqueue.cli.worker import log_level, port_number, positive_int
from pqueue.errors import ConfigError
from pqueue.extras import install_hint
from pqueue.logs import configure_logging

log = logging.getLogger("pqueue.web")

DESCRIPTION = """\
Serve the HTTP API (enqueue, inspect, dead jobs), /metrics, /healthz, /readyz and the
dashboard at / with one uvicorn process. Every flag has an environment variable
(--api-token: PQUEUE_API_TOKEN). See docs/web.md.
"""


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="HTTP API and dashboard: pqueue serve --dsn redis://... (needs the pqueue-jobs[web] extra)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flag(parser, "--dsn", help="broker DSN: memory://, redis://..., postgresql://...")
    add_flag(parser, "--app", metavar="MODULE:ROUTER",
             help="the app's Router: its tasks' declarations apply, unknown types are refused")  # fmt: skip
    add_flag(parser, "--host", default="127.0.0.1", help="address to bind")
    add_flag(parser, "--port", type=port_number, default=8080, help="TCP port")
    add_flag(parser, "--api-token", help="admin bearer token (prefer the environment variable)")
    add_flag(parser, "--api-read-token", help="read-only bearer token for dashboards (GETs only)")
    add_flag(parser, "--insecure-no-auth", type=boolean, default=False, nargs="?", const=True,
             help="serve without tokens (loopback only unless --insecure-remote)")  # fmt: skip
    add_flag(parser, "--insecure-remote", type=boolean, default=False, nargs="?", const=True,
             help="with --insecure-no-auth, allow a non-loopback --host")  # fmt: skip
    add_flag(parser, "--metrics-public", type=boolean, default=False, nargs="?", const=True,
             help="serve /metrics without a token")  # fmt: skip
    add_flag(parser, "--max-job-bytes", type=positive_int, default=1024 * 1024, help="POST /jobs body limit")
    add_flag(
        parser, "--max-request-bytes", type=positive_int, default=16 * 1024 * 1024, help="other bodies' limit"
    )
    add_flag(parser, "--max-batch", type=positive_int, default=10_000, help="jobs in one POST /jobs/batch")
    add_flag(parser, "--access-log", type=boolean, default=False, nargs="?", const=True,
             help="log every request (uvicorn's access log)")  # fmt: skip
    add_flag(parser, "--log-level", type=log_level, default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    add_flag(parser, "--log-format", default="text", choices=["text", "json"], help="log line format")
    parser.set_defaults(func=run)


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.x.y.z`` or ``::1``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def settings_from(args: argparse.Namespace) -> Any:
    """The app's :class:`~pqueue.web.WebSettings` from the parsed flags (validated there)."""
    from pqueue.web import WebSettings

    if args.insecure_no_auth and not is_loopback(args.host) and not args.insecure_remote:
        raise ConfigError(
            f"--insecure-no-auth serves loopback only; --host {args.host} would expose an API without "
            "authentication: set a token (PQUEUE_API_TOKEN), or add --insecure-remote if you mean it"
        )
    return WebSettings(
        token=args.api_token or None,
        read_token=args.api_read_token or None,
        insecure_no_auth=bool(args.insecure_no_auth),
        metrics_public=bool(args.metrics_public),
        max_job_bytes=args.max_job_bytes,
        max_request_bytes=args.max_request_bytes,
        max_batch=args.max_batch,
    )


def run(args: argparse.Namespace) -> int:
    resolve(args)
    if not args.dsn:
        raise ConfigError("no broker DSN: pass --dsn or set PQUEUE_DSN")
    scheme = args.dsn.split("://", 1)[0].lower() if "://" in args.dsn else ""
    if not is_known_scheme(scheme):
        raise ConfigError(f"--dsn {redact(args.dsn)!r}: use one of {', '.join(known_schemes())}://...")
    try:
        import uvicorn

        from pqueue.web import create_app
    except ImportError as exc:
        raise ConfigError(f"pqueue serve needs the web extra ({exc}): {install_hint('web')}") from exc
    settings = settings_from(args)
    router = load_router(args.app) if args.app else None
    configure_logging(args.log_level, args.log_format)
    app = create_app(args.dsn, settings=settings, router=router)
    if settings.insecure_no_auth:
        log.warning("serving WITHOUT authentication (--insecure-no-auth): every caller is admin")
    log.info(
        "pqueue API on http://%s:%d/ (broker %s%s)",
        args.host,
        args.port,
        redact(args.dsn),
        f", router {args.app}: {len(router)} job types" if router is not None else "",
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_config=None,  # keep pqueue's handlers and format
        log_level=args.log_level.lower(),
        access_log=bool(args.access_log),
        server_header=False,
        workers=1,
    )
    return 0
