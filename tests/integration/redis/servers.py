"""A private redis-server per test, for faults that must not touch the shared server:
SCRIPT FLUSH, killed connections, restarts and crashes. The server itself is
:class:`tests.private_servers.PrivateRedis` (shared with bench/restarts.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import services
from tests.private_servers import PrivateRedis

__all__ = ["PrivateRedis", "private_redis"]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A fresh redis-server owned by this test, stopped afterwards."""
    missing = PrivateRedis.missing()
    if missing is not None:
        reason = f"{missing}: private-server fault tests cannot run"
        if "redis" in services.required():
            pytest.fail(f"PQUEUE_TEST_REQUIRE names redis, but {reason}", pytrace=False)
        pytest.skip(reason)
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
