"""``pqueue rsmq worker MODULE:FUNC --dsn ... --queue NAME``: run :class:`pqueue.rsmq.Consumer`.

The handler is a function (sync or async) taking one :class:`pqueue.rsmq.RsmqMessage`;
``--metrics-port`` serves pqueue's metric names (:mod:`pqueue.rsmq.metrics`) and the
``/healthz``, ``/readyz`` probes, as ``pqueue worker`` does.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pqueue.cli._options import add_flag, resolve
from pqueue.cli.worker import log_level, port_number, positive_int, require_metrics_extra
from pqueue.errors import ConfigError
from pqueue.logs import configure_logging

DESCRIPTION = """\
Consume an RSMQ queue with MODULE:FUNC until SIGTERM/SIGINT, then drain and exit 0.
Each message is hidden while FUNC runs (heartbeats), deleted when it returns, made visible
again later when it raises (backing off by receive count), and after --max-receives
receives moved to the dead queue QUEUE-dead, an RSMQ queue any client can read.
"""


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "worker",
        help="consume a queue: pqueue rsmq worker app.handlers:on_message --queue jobs",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("handler", help="the handler function, MODULE:FUNC")
    add_flag(parser, "--dsn", help="Redis URL: redis://host:6379/0")
    parser.add_argument("--ns", default=None, help="RSMQ namespace (default: the DSN's ?prefix=, else rsmq)")
    parser.add_argument("--queue", required=True, help="the RSMQ queue to consume")
    parser.add_argument(
        "--concurrency", type=positive_int, default=1, help="messages run at once (default: 1)"
    )
    parser.add_argument(
        "--max-receives", type=positive_int, default=5, help="receives before the dead queue (default: 5)"
    )
    parser.add_argument(
        "--vt", type=positive_int, default=None, help="visibility timeout (default: the queue's)"
    )
    parser.add_argument(
        "--realtime", action="store_true", help="wake at each send of a realtime client (no polling delay)"
    )
    parser.add_argument("--poll-interval", type=float, default=1.0, help="seconds between idle receives")
    parser.add_argument("--shutdown-timeout", type=float, default=30.0, help="seconds a drain waits")
    add_flag(parser, "--log-level", type=log_level, default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    add_flag(parser, "--log-format", default="text", choices=["text", "json"], help="log line format")
    parser.add_argument(
        "--metrics-port", type=port_number, default=None, help="serve Prometheus /metrics here"
    )
    parser.add_argument("--metrics-host", default="0.0.0.0", help="address the metrics port listens on")
    parser.set_defaults(func=run)


def load_handler(target: str) -> Callable[..., Any]:
    """Import ``package.module:function`` (the current directory first on ``sys.path``)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"handler {target!r}: expected MODULE:FUNC, e.g. myapp.handlers:on_message")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except ImportError as exc:
        raise ConfigError(f"handler {target!r}: cannot import {module_name!r} ({exc})") from exc
    except AttributeError:
        raise ConfigError(f"handler {target!r}: {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise ConfigError(f"handler {target!r} is a {type(obj).__name__}, not a function")
    return obj  # type: ignore[no-any-return]


def run(args: argparse.Namespace) -> int:
    resolve(args)
    if not args.dsn:
        raise ConfigError("no Redis URL: pass --dsn or set PQUEUE_DSN")
    configure_logging(args.log_level, args.log_format)
    from pqueue.rsmq.consumer import Consumer

    consumer = Consumer(
        args.dsn,
        args.queue,
        load_handler(args.handler),
        ns=args.ns,
        concurrency=args.concurrency,
        max_receives=args.max_receives,
        vt=args.vt,
        realtime=args.realtime,
        poll_interval=args.poll_interval,
        shutdown_timeout=args.shutdown_timeout,
    )
    with _metrics(args, consumer):
        consumer.run()
    return 0


@contextlib.contextmanager
def _metrics(args: argparse.Namespace, consumer: Any) -> Iterator[None]:
    """With ``--metrics-port``: the consumer's metrics, queue gauges and probes on a thread."""
    if args.metrics_port is None:
        yield
        return
    require_metrics_extra()
    from prometheus_client import CollectorRegistry

    from pqueue.errors import PQueueError
    from pqueue.metrics.server import MetricsServer
    from pqueue.rsmq.client import Rsmq
    from pqueue.rsmq.metrics import ConsumerMetrics, QueueGauges

    registry = CollectorRegistry()
    consumer.events = ConsumerMetrics(registry)
    with Rsmq(args.dsn, ns=args.ns) as rsmq:
        registry.register(QueueGauges(rsmq, [consumer.queue, consumer.dead_queue]))

        def ready() -> bool:
            try:
                rsmq.get_queue_attributes(consumer.queue)
            except PQueueError:
                return False
            return True

        server = MetricsServer(
            registry, host=args.metrics_host, port=args.metrics_port, live=lambda: True, ready=ready,
            token=os.environ.get("PQUEUE_METRICS_TOKEN") or None,
        )  # fmt: skip
        server.start()
        try:
            yield
        finally:
            server.stop()
