"""``maxmemory-policy`` other than ``noeviction`` lets Redis delete jobs (issue 34, ADR 0159):
a real ``pqueue worker`` warns once, in one line, and ``pqueue health`` fails naming the
setting; with ``noeviction`` both say nothing of it. On a private server: the shared
one's settings are never changed."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.integration.redis.servers import PrivateRedis, command

pytestmark = pytest.mark.redis

APP = "pqueue.testing.faults.restart_app:router"


def _worker_log(dsn: str) -> list[str]:
    """The stderr lines of a worker that started (its first beat done) and then drained."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pqueue", "worker", APP, "--dsn", dsn, "--queues", "restarts"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    stream = proc.stderr
    reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any(" started on " in line for line in list(lines)):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    return lines


def _health(dsn: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pqueue", "health", "--dsn", dsn],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_evicting_policy_is_one_worker_warning_and_fails_health(private_redis: PrivateRedis) -> None:
    command(private_redis, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    dsn = private_redis.url + "?prefix=pqevict"
    server = f"Redis at 127.0.0.1:{private_redis.port}"
    advice = (
        f"{server} has maxmemory-policy allkeys-lru: Redis may delete jobs to free memory; set "
        "maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf "
        "or your provider's settings)"
    )
    warnings = [line for line in _worker_log(dsn) if " WARNING " in line or " ERROR " in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].rstrip("\n").endswith(f"pqueue.redis: {advice}")
    health = _health(dsn)
    assert (health.returncode, health.stdout) == (1, "")
    assert health.stderr.splitlines() == [f"pqueue: error: {advice}"]


def test_noeviction_is_quiet_and_healthy(private_redis: PrivateRedis) -> None:
    command(private_redis, "CONFIG", "SET", "maxmemory-policy", "noeviction")
    dsn = private_redis.url + "?prefix=pqevict"
    assert [line for line in _worker_log(dsn) if " WARNING " in line or " ERROR " in line] == []
    health = _health(dsn)
    assert (health.returncode, health.stderr) == (0, "")
    assert health.stdout.startswith("ok: redis prefix 'pqevict'")
