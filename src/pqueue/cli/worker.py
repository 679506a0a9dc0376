"""``pqueue worker MODULE:ROUTER``: run jobs until SIGTERM/SIGINT, then drain and exit 0
(exit 3 when the broker's storage becomes unusable: see :data:`DESCRIPTION`).

Every flag has a ``PQUEUE_*`` environment variable (``--shutdown-timeout`` ->
``PQUEUE_SHUTDOWN_TIMEOUT``; the router is ``PQUEUE_ROUTER``). ``--processes N`` runs
N worker processes under a supervisor that forwards signals and restarts crashed ones;
``--autoscale MIN:MAX`` runs between MIN and MAX of them, as many as the backlog of the
queues served needs (:mod:`pqueue.autoscale`, docs/scaling.md).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pqueue.autoscale import Thresholds, parse_range
from pqueue.brokers import is_known_scheme, known_schemes, redact
from pqueue.cli._app import load_router
from pqueue.cli._options import UsageError, add_flag, boolean, from_env, given, resolve
from pqueue.errors import ConfigError
from pqueue.extras import install_hint
from pqueue.logs import configure_logging
from pqueue.loops import LOOP_CHOICES, loop_choice

if TYPE_CHECKING:
    from pqueue.autoscaler import Autoscaler
    from pqueue.supervisor import Supervisor

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


LARGEST = 1_000_000.0
"""The largest threshold or interval the autoscale flags take: ``inf`` (or 1e10) would pass
``> 0`` and then overflow the autoscaler thread's waits, leaving the pool at MIN."""


def positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value <= LARGEST:
        raise ValueError(f"must be > 0 and at most {LARGEST:,.0f}, got {text}")
    return value


def seconds(text: str) -> float:
    value = float(text)
    if not 0 <= value <= LARGEST:
        raise ValueError(f"must be >= 0 and at most {LARGEST:,.0f} seconds, got {text}")
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

Exit codes: 0 drained after a signal; 1 could not start (a bad DSN, import or schema, or
a broker that did not answer within --wait-for-broker);
2 bad flags; 3 the broker's storage became unusable while serving (a damaged SQLite
file, a schema dropped), which retrying cannot heal: one ERROR line says what to do;
128+N forced out by a second signal N.
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
    add_flag(
        parser,
        "--wait-for-broker",
        type=seconds,
        default=0.0,
        help="seconds to wait at start for a broker that does not answer yet, with one warning "
        "(0: fail at once, exit 1)",
    )
    add_flag(
        parser, "--processes", type=positive_int, default=1, help="worker processes to run (a fixed pool)"
    )
    add_autoscale_flags(parser)
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


def add_autoscale_flags(parser: argparse.ArgumentParser) -> None:
    """``--autoscale MIN:MAX`` and its thresholds (:class:`pqueue.autoscale.Thresholds`)."""
    defaults = Thresholds()
    add_flag(
        parser,
        "--autoscale",
        default=None,
        metavar="MIN:MAX",
        help="run MIN to MAX worker processes, as many as the waiting jobs need (instead of --processes)",
    )
    for flag, type_, default, text in (
        (
            "--autoscale-backlog",
            positive_float,
            defaults.backlog,
            "grow when this many due jobs wait per slot",
        ),
        (
            "--autoscale-age",
            positive_float,
            defaults.age,
            "or when the oldest due job has waited this many seconds",
        ),
        ("--autoscale-up-after", seconds, defaults.up_after, "seconds the pressure must last before growing"),
        (
            "--autoscale-down-after",
            seconds,
            defaults.down_after,
            "seconds a process must be spare before retiring it",
        ),
        ("--autoscale-cooldown", seconds, defaults.cooldown, "seconds after a change before the next"),
        ("--autoscale-interval", positive_float, 1.0, "seconds between two reads of the queues"),
    ):
        add_flag(parser, flag, type=type_, default=default, help=text)


def autoscale_bounds(args: argparse.Namespace, *, processes_given: bool) -> tuple[int, int] | None:
    """``(MIN, MAX)`` of ``--autoscale``, None without it; :class:`UsageError` naming the rule broken."""
    if args.autoscale is None or not str(args.autoscale).strip():
        return None
    if processes_given:
        raise UsageError(
            "--autoscale and --processes cannot go together: --processes N is a fixed pool, "
            "--autoscale MIN:MAX one that grows and shrinks"
        )
    try:
        bounds = parse_range(args.autoscale)
    except ValueError as exc:
        raise UsageError(f"--autoscale {exc}") from None
    if args.dsn and args.dsn.startswith("memory:"):
        raise UsageError("--autoscale needs a shared broker: memory:// lives in one process")
    return bounds


def run(args: argparse.Namespace) -> int:
    processes_given = given(args, "processes")
    resolve(args)
    bounds = autoscale_bounds(args, processes_given=processes_given)
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
    if bounds is not None or args.processes > 1:
        if args.dsn.startswith("memory:"):
            log.warning(
                "memory:// lives in one process: %d worker processes will not share jobs", args.processes
            )

        load_router(args.router)  # fail here, once, rather than in every child
        return _run_pool(args, bounds)
    return serve(args)


def _run_pool(args: argparse.Namespace, bounds: tuple[int, int] | None) -> int:
    """A supervised pool: ``--processes N`` or ``--autoscale MIN:MAX``. With ``--metrics-port``
    the children write metrics to a shared directory and this process serves them on the
    one port (ADR 0085), with the pool's own size and scale events."""
    from pqueue.supervisor import Supervisor

    with contextlib.ExitStack() as stack:
        command, env = child_command(args), child_env(args)
        on_exit: Callable[[int], None] = lambda pid: None  # noqa: E731
        pool = None
        if args.metrics_port is not None:
            require_metrics_extra()
            from pqueue.metrics.exporter import PoolMetrics

            pool = PoolMetrics()
            stack.callback(pool.close)
            command, env, on_exit = (
                [*command, "--metrics-dir", pool.directory],
                {**env, **pool.child_env},
                pool.process_dead,
            )
        supervisor = Supervisor(command, bounds[0] if bounds else args.processes, env=env, on_exit=on_exit)
        events: Callable[[], dict[str, int]] | None = None
        if bounds is not None:
            autoscaler = _autoscaler(args, supervisor, bounds, stack)
            events = lambda: dict(autoscaler.events)  # noqa: E731
        if pool is not None:
            from pqueue.metrics.pool import PoolCollector

            collector = PoolCollector(lambda: supervisor.size, events)
            stack.enter_context(
                pool.exporter(
                    args.dsn,
                    host=args.metrics_host,
                    port=args.metrics_port,
                    live=supervisor.responsive,
                    extra=collector,
                )
            )
        if bounds is not None:
            autoscaler.start()
            stack.callback(autoscaler.stop)
        return supervisor.run()


def _autoscaler(
    args: argparse.Namespace, supervisor: Supervisor, bounds: tuple[int, int], stack: contextlib.ExitStack
) -> Autoscaler:
    """The thread that sizes ``supervisor`` from the broker's stats of the queues served."""
    from pqueue.autoscaler import Autoscaler
    from pqueue.priority import QueueSelection
    from pqueue.sync import Client

    client = Client(args.dsn)
    stack.callback(client.close)
    thresholds = Thresholds(
        backlog=args.autoscale_backlog,
        age=args.autoscale_age,
        up_after=args.autoscale_up_after,
        down_after=args.autoscale_down_after,
        cooldown=args.autoscale_cooldown,
    )
    log.info(
        "autoscale %d:%d worker processes of %d slots on %s (grow at %g due jobs per slot or %gs waited "
        "for %gs; retire one spare for %gs; cool-down %gs)",
        *bounds,
        args.concurrency,
        args.queues,
        thresholds.backlog,
        thresholds.age,
        thresholds.up_after,
        thresholds.down_after,
        thresholds.cooldown,
    )
    return Autoscaler(
        supervisor,
        client.stats,
        QueueSelection.parse(args.queues).names,
        minimum=bounds[0],
        maximum=bounds[1],
        concurrency=args.concurrency,
        thresholds=thresholds,
        interval=args.autoscale_interval,
    )


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
        "--wait-for-broker", str(args.wait_for_broker),
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
    and without ``PQUEUE_METRICS_PORT`` (only the parent serves the port) or ``PQUEUE_AUTOSCALE``
    (only the parent scales; each child is one process)."""
    parent_only = {"PQUEUE_METRICS_PORT", "PQUEUE_AUTOSCALE"}
    env = {key: value for key, value in os.environ.items() if key not in parent_only}
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
        wait_for_broker=args.wait_for_broker,
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
