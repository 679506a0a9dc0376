"""A private six-node Redis Cluster per test, for failovers, kills and server settings that
must not touch the session's shared cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import missing
from tests.private_cluster import PrivateRedisCluster


@pytest.fixture
def private_cluster() -> Iterator[PrivateRedisCluster]:
    problem = PrivateRedisCluster.missing()
    if problem is not None:
        missing("redis_cluster", f"{problem}: private cluster tests cannot run")
    cluster = PrivateRedisCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
