"""``pqueue worker --wait-for-broker``: a worker started before its broker answers waits for
it with one WARNING (a container started before its database, a replacement started during
a server restart: found by ``pqueue chaos``), instead of exiting 1 at once, which stays the
default. A stop while waiting exits 0; a broker that never comes fails as before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pqueue import Client, JobStatus
from tests.private_servers import PrivateRedis, free_port
from tests.worker.test_crash import ROOT

APP = "pqueue.testing.faults.restart_app:router"


def worker(dsn: str, *flags: str, record: Path | None = None) -> subprocess.Popen[str]:
    """``pqueue worker`` on the restart app, whose jobs append to ``record``."""
    return subprocess.Popen(
        [sys.executable, "-m", "pqueue", "worker", APP, "--dsn", dsn, "--queues", "restarts", *flags],
        cwd=ROOT,
        env={**os.environ, "PQUEUE_TEST_RECORD": str(record or os.devnull)},
        stderr=subprocess.PIPE,
        text=True,
    )


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if " WARNING " in line]


@pytest.mark.redis
def test_a_worker_waits_for_a_broker_that_starts_later_and_then_works(tmp_path: Path) -> None:
    if PrivateRedis.missing():
        pytest.skip(PrivateRedis.missing())
    server = PrivateRedis(tmp_path)
    proc = worker(server.url, "--wait-for-broker", "60", record=tmp_path / "runs.log")
    try:
        time.sleep(4)  # the worker tries meanwhile (a try takes about 2 s of the driver's own retries)
        assert proc.poll() is None
        server.start()
        with Client(server.url) as client:
            job = client.enqueue("restart:work", 0.01, queue="restarts")
            deadline = time.monotonic() + 60
            while client.get_job(job.id).status is not JobStatus.COMPLETED:
                assert time.monotonic() < deadline, "the job never ran"
                time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        server.stop()
    assert proc.returncode == 0, err
    [line] = warnings(err)
    assert "is unreachable" in line and "waiting up to 60s for it" in line
    assert "the broker answers: starting" in err


def test_a_broker_that_never_answers_fails_once_the_wait_is_over() -> None:
    port = free_port()
    started = time.monotonic()
    proc = worker(f"redis://127.0.0.1:{port}/0", "--wait-for-broker", "5")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert time.monotonic() - started >= 5
    assert len(warnings(err)) == 1
    assert (
        err.splitlines()[-1] == f"pqueue: error: Redis at 127.0.0.1:{port} is unreachable: connection refused"
    )


def test_a_stop_while_waiting_exits_0() -> None:
    proc = worker(f"redis://127.0.0.1:{free_port()}/0", "--wait-for-broker", "600")
    time.sleep(1.5)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
