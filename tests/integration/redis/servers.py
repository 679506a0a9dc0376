"""A private redis-server per test, for faults that must not touch the shared server:
SCRIPT FLUSH, killed connections, restarts and crashes. The server itself is
:class:`tests.private_servers.PrivateRedis` (:mod:`pqueue.chaos.servers`'s, on the suite's ports)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import missing
from tests.private_servers import PrivateRedis

__all__ = ["PrivateRedis", "private_redis"]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A fresh redis-server owned by this test, stopped afterwards."""
    problem = PrivateRedis.missing()
    if problem is not None:
        missing("redis", f"{problem}: private-server fault tests cannot run")
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
