"""Run ``pqueue worker`` with ``--metrics-port`` as a real process, on a free loopback port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.metrics.app:router"


@contextmanager
def metrics_worker(
    dsn: str, port: int, *extra: str, record: Path | None = None
) -> Iterator[subprocess.Popen[str]]:
    """A worker serving metrics on 127.0.0.1:``port``; SIGTERM and a clean exit (0) when the block ends."""
    env = {**os.environ, "PQUEUE_TEST_RECORD": str(record or "")}
    command = [
        sys.executable, "-m", "pqueue", "worker", APP, "--dsn", dsn, "--queues", "metrics",
        "--metrics-port", str(port), "--metrics-host", "127.0.0.1", "--lease", "5", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        yield proc
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
