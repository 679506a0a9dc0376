"""The metrics flags and the supervisor's hooks for the pool's metrics."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading

import pytest
from prometheus_client import CollectorRegistry

from pqueue import supervisor
from pqueue.cli import worker as cli_worker
from pqueue.errors import ConfigError
from pqueue.metrics import MetricsServer


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_worker.add_parser(parser.add_subparsers())
    return cli_worker.resolve(parser.parse_args(["worker", "app:router", *argv]))


def test_metrics_flags_default_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (parse().metrics_port, parse().metrics_host) == (None, "0.0.0.0")
    monkeypatch.setenv("PQUEUE_METRICS_PORT", "9100")
    monkeypatch.setenv("PQUEUE_METRICS_HOST", "127.0.0.1")
    assert (parse().metrics_port, parse().metrics_host) == (9100, "127.0.0.1")
    assert parse("--metrics-port", "9200").metrics_port == 9200
    monkeypatch.setenv("PQUEUE_METRICS_PORT", "70000")
    with pytest.raises(ConfigError, match="PQUEUE_METRICS_PORT"):
        parse()


def test_pool_children_never_get_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQUEUE_METRICS_PORT", "9100")
    args = parse("--dsn", "redis://x/0")
    assert "PQUEUE_METRICS_PORT" not in cli_worker.child_env(args)
    assert "--metrics-port" not in cli_worker.child_command(args)


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            MetricsServer(CollectorRegistry(), host="127.0.0.1", port=port, live=bool, ready=bool)


def test_supervisor_reports_exited_children_and_answers_while_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(supervisor, "POLL", 0.01)
    exited: list[int] = []
    pool = supervisor.Supervisor(
        [sys.executable, "-c", "import time; time.sleep(30)"], processes=2, on_exit=exited.append
    )
    seen: list[bool] = []

    def probe_then_stop() -> None:
        seen.append(pool.responsive())
        os.kill(os.getpid(), signal.SIGTERM)

    assert not pool.responsive()
    timer = threading.Timer(0.5, probe_then_stop)
    timer.start()
    assert pool.run() == 0
    timer.join()
    assert seen == [True] and len(set(exited)) == 2 and not pool.responsive()
