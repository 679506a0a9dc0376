"""A private redis-server per test, for faults that must not touch the shared server:
SCRIPT FLUSH, killed connections, restarts. Started on a free loopback port in a temp
directory, with AOF persistence (appendfsync always) so a restart keeps every write."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import services


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateRedis:
    """One redis-server process we own: start, stop and restart it on the same port and data."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError(f"redis-server did not start on port {self.port}; see {self.dir / 'redis.log'}")

    def stop(self) -> None:
        """Shut down cleanly (the AOF is already fsynced on every write)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()  # SIGTERM: redis shuts down, flushing the AOF
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A fresh redis-server owned by this test, stopped afterwards."""
    if shutil.which("redis-server") is None:
        reason = "redis-server is not installed: private-server fault tests cannot run"
        if "redis" in services.required():
            pytest.fail(f"PQUEUE_TEST_REQUIRE names redis, but {reason}", pytrace=False)
        pytest.skip(reason)
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
