"""``pqueue worker MODULE:ROUTER``: run jobs until SIGTERM/SIGINT, then drain and exit 0.

Every flag has a ``PQUEUE_*`` environment variable (``--shutdown-timeout`` ->
``PQUEUE_SHUTDOWN_TIMEOUT``; the router is ``PQUEUE_ROUTER``). ``--processes N`` runs
N worker processes under a supervisor that forwards signals and restarts crashed ones.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import Any

from pqueue.brokers import is_known_scheme, known_schemes, redact
from pqueue.cli._app import load_router
from pqueue.cli._options import add_flag, boolean, from_env, resolve
from pqueue.errors import ConfigError
from pqueue.extras import install_hint
from pqueue.logs import configure_logging
from pqueue.loops import LOOP_CHOICES, loop_choice

log = logging.getLogger("pqueue.worker")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"must be >= 1, got {value}")
    return value


def prefetch_count(text: str) -> int | None:
    """``auto`` (20 per slot, bounded by job time) or a number of jobs >= 0."""
    if text.strip().lower() == "auto":
        return None
    value = int(text)
    if value < 0:
        raise ValueError(f"must be >= 0 or 'auto', got {value}")
    return value


def port_number(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise ValueError(f"must be a TCP port 1..65535, got {value}")
    return value


def log_level(text: str) -> str:
    level = text.strip().upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ValueError(f"unknown log level {text!r}")
    return level


DESCRIPTION = """\
Run the jobs of MODULE:ROUTER until SIGTERM/SIGINT, then drain and exit 0.
A second signal exits at once (held jobs come back when their leases expire); a
SIGTERM repeated within a second of the first counts as the same request.
Every flag has an environment variable (--shutdown-timeout: PQUEUE_SHUTDOWN_TIMEOUT).
"""


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "worker",
        help="run jobs: pqueue worker myapp.tasks:router --dsn redis://...",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("router", nargs="?", help="where the Router is, MODULE:ATTRIBUTE [env PQUEUE_ROUTER]")
    add_options(parser)
    parser.set_defaults(func=run)


def add_options(parser: argparse.ArgumentParser) -> None:
    """Every flag of ``pqueue worker`` but the router: also ``manage.py pqueue_worker``'s."""
    add_flag(parser, "--dsn", help="broker DSN: memory://, redis://..., postgresql://...")
    add_flag(parser, "--concurrency", type=positive_int, default=10, help="jobs run at once per process")
    add_flag(parser, "--queues", default="critical:6,default:3,low:1", help="queues and weights")
    parser.add_argument(
        "--strict",
        action="store_const",
        const=True,
        default=None,
        help="strict priority: drain higher-weight queues first [env PQUEUE_STRICT]",
    )
    add_flag(parser, "--lease", type=float, default=30.0, help="seconds a job stays ours without a heartbeat")
    add_flag(
        parser, "--shutdown-timeout", type=float, default=30.0, help="seconds a drain waits for running jobs"
    )
    add_flag(parser, "--processes", type=positive_int, default=1, help="worker processes to run")
    add_flag(
        parser,
        "--prefetch",
        type=prefetch_count,
        default="auto",
        help="jobs held beyond the running ones: auto (20 per slot, bounded by job time) or a count; 0: none",
    )
    add_flag(
        parser,
        "--unknown-type",
        default="retry",
        choices=["retry", "dead"],
        help="jobs of a type no handler is registered for",
    )
    add_flag(
        parser,
        "--loop",
        type=loop_choice,
        default="auto",
        choices=LOOP_CHOICES,
        help="event loop: uvloop when installed (auto), or asyncio / uvloop",
    )
    add_flag(parser, "--log-level", type=log_level, default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    add_flag(parser, "--log-format", default="text", choices=["text", "json"], help="log line format")
    add_flag(
        parser,
        "--metrics-port",
        type=port_number,
        default=None,
        help="serve Prometheus /metrics and the /healthz, /readyz probes on this port "
        "(one port for all --processes; needs the metrics extra)",
    )
    add_flag(
        parser,
        "--metrics-host",
        default="0.0.0.0",
        help="address the metrics port listens on (0.0.0.0: reachable by Prometheus and kubelet probes)",
    )
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--metrics-dir", default=None, help=argparse.SUPPRESS)  # a pool child's metrics


def run(args: argparse.Namespace) -> int:
    resolve(args)
    args.router = args.router or os.environ.get("PQUEUE_ROUTER")
    if args.strict is None:
        args.strict = from_env("--strict", boolean, False)
    if not args.router:
        raise ConfigError("name the router: pqueue worker MODULE:ROUTER (or set PQUEUE_ROUTER)")
    if not args.dsn:
        raise ConfigError("no broker DSN: pass --dsn or set PQUEUE_DSN")
    scheme = args.dsn.split("://", 1)[0].lower() if "://" in args.dsn else ""
    if not is_known_scheme(scheme):
        raise ConfigError(f"--dsn {redact(args.dsn)!r}: use one of {', '.join(known_schemes())}://...")
    configure_logging(args.log_level, args.log_format)
    if args.processes > 1:
        from pqueue.supervisor import Supervisor

        if args.dsn.startswith("memory:"):
            log.warning(
                "memory:// lives in one process: %d worker processes will not share jobs", args.processes
            )

        load_router(args.router)  # fail here, once, rather than in every child
        if args.metrics_port is None:
            return Supervisor(child_command(args), args.processes, env=child_env(args)).run()
        return _serve_pool_with_metrics(args)
    return serve(args)


def _serve_pool_with_metrics(args: argparse.Namespace) -> int:
    """``--processes N --metrics-port P``: the children write metrics to a shared directory,
    this process serves them on the one port (ADR 0085)."""
    require_metrics_extra()
    from pqueue.metrics.exporter import PoolMetrics
    from pqueue.supervisor import Supervisor

    pool = PoolMetrics()
    try:
        supervisor = Supervisor(
            [*child_command(args), "--metrics-dir", pool.directory],
            args.processes,
            env={**child_env(args), **pool.child_env},
            on_exit=pool.process_dead,
        )
        exporter = pool.exporter(
            args.dsn, host=args.metrics_host, port=args.metrics_port, live=supervisor.responsive
        )
        with exporter:
            return supervisor.run()
    finally:
        pool.close()


def child_command(args: argparse.Namespace) -> list[str]:
    """The command line of one child process of ``--processes N``.

    Without the DSN, which may hold a password: anyone on the host can read a command
    line (``ps``); the children get it from :func:`child_env`.
    """
    command = [
        sys.executable, "-m", "pqueue", "worker", args.router,
        "--concurrency", str(args.concurrency),
        "--queues", args.queues,
        "--lease", str(args.lease),
        "--shutdown-timeout", str(args.shutdown_timeout),
        "--prefetch", "auto" if args.prefetch is None else str(args.prefetch),
        "--unknown-type", args.unknown_type,
        "--loop", args.loop,
        "--log-level", args.log_level,
        "--log-format", args.log_format,
        "--processes", "1",
        "--parent-pid", str(os.getpid()),
    ]  # fmt: skip
    return [*command, "--strict"] if args.strict else command


def child_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment of the children of ``--processes N``: ours, with the DSN in ``PQUEUE_DSN``
    and without ``PQUEUE_METRICS_PORT`` (only the parent serves the port)."""
    env = {key: value for key, value in os.environ.items() if key != "PQUEUE_METRICS_PORT"}
    return {**env, "PQUEUE_DSN": args.dsn}


def require_metrics_extra() -> None:
    """A clear error when ``--metrics-port`` is asked for without prometheus-client installed."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise ConfigError(f"--metrics-port needs prometheus-client: {install_hint('metrics')}") from None


def serve(args: argparse.Namespace) -> int:
    from pqueue.worker import Worker

    router = load_router(args.router)
    metrics = None
    if args.metrics_port is not None or args.metrics_dir is not None:
        require_metrics_extra()
        from pqueue.metrics.exporter import WorkerMetrics

        metrics = WorkerMetrics(router, pool_child=args.metrics_dir is not None)
    worker = Worker(
        args.dsn,
        router,
        concurrency=args.concurrency,
        queues=args.queues,
        strict=args.strict,
        lease=args.lease,
        shutdown_timeout=args.shutdown_timeout,
        unknown_type=args.unknown_type,
        prefetch=args.prefetch,
        middleware=[] if metrics is None else [metrics.jobs],
    )
    if args.parent_pid is not None:
        _watch_parent(args.parent_pid, worker.stop)
    if metrics is None:
        return worker.run(loop=args.loop)
    with metrics.serving(worker, args.dsn, host=args.metrics_host, port=args.metrics_port):
        return worker.run(loop=args.loop)


def _watch_parent(parent_pid: int, stop: Any) -> None:
    """Drain when the supervising parent is gone (this process was re-parented)."""

    def watch() -> None:
        while not stopped.wait(1.0):
            if os.getppid() != parent_pid:
                log.warning("supervisor (pid %d) is gone: draining", parent_pid)
                stop()
                return

    stopped = threading.Event()
    threading.Thread(target=watch, name="pqueue-parent-watch", daemon=True).start()
