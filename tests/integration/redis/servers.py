"""A private redis-server per test, for faults that must not touch the shared server:
SCRIPT FLUSH, killed connections, restarts and crashes, a replica, a server setting. The
server itself is :class:`tests.private_servers.PrivateRedis` (:mod:`pqueue.chaos.servers`'s,
on the suite's ports)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from tests.conftest import missing
from tests.private_servers import PrivateRedis

__all__ = ["PrivateRedis", "Replicated", "private_redis", "replicated_redis"]


def _private(workdir: Path) -> PrivateRedis:
    problem = PrivateRedis.missing()
    if problem is not None:
        missing("redis", f"{problem}: private-server fault tests cannot run")
    workdir.mkdir(exist_ok=True)
    return PrivateRedis(workdir)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A fresh redis-server owned by this test, stopped afterwards."""
    server = _private(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def command(server: PrivateRedis, *args: str) -> Any:
    """One command on ``server`` (a private one: its settings are this test's to change)."""
    with Redis(port=server.port, decode_responses=True) as client:
        return client.execute_command(*args)  # type: ignore[no-untyped-call]


def connected_replicas(server: PrivateRedis) -> int:
    with Redis(port=server.port, decode_responses=True) as client:
        return int(client.info("replication")["connected_slaves"])


class Replicated:
    """A private primary and a private replica of it; the replica stops and starts again."""

    def __init__(self, workdir: Path) -> None:
        self.primary = _private(workdir / "primary")
        self.replica = _private(workdir / "replica")

    def start(self) -> None:
        self.primary.start()
        command(self.primary, "CONFIG", "SET", "repl-diskless-sync-delay", "0")  # sync at once, not in 5 s
        self.start_replica()

    def start_replica(self) -> None:
        """Start the replica, and return once the primary counts it connected and in sync."""
        self.replica.start()
        # Without an AOF of its own: a replica writing its first AOF after the sync ignores SIGTERM.
        command(self.replica, "CONFIG", "SET", "appendonly", "no")
        command(self.replica, "REPLICAOF", "127.0.0.1", str(self.primary.port))
        self._wait_for(1, lambda: command(self.replica, "ROLE")[3] == "connected")

    def stop_replica(self) -> None:
        """Stop the replica, and return once the primary counts it gone."""
        self.replica.stop()
        self._wait_for(0)

    def _wait_for(self, replicas: int, also: Callable[[], bool] = lambda: True) -> None:
        deadline = time.monotonic() + 30
        while not (connected_replicas(self.primary) == replicas and also()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the primary did not count {replicas} connected replica(s)")
            time.sleep(0.05)

    def stop(self) -> None:
        self.replica.stop()
        self.primary.stop()


@pytest.fixture
def replicated_redis(tmp_path: Path) -> Iterator[Replicated]:
    """A private primary with one private replica, both stopped afterwards."""
    servers = Replicated(tmp_path)
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()
