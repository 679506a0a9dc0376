"""Redis restarts under real worker processes: nothing lost, no worker dies, and after a
graceful restart nothing runs twice. A private redis-server with AOF (appendfsync
always) is stopped (SIGTERM) or crashed (SIGKILL) twice for about a second while two
``pqueue worker`` processes (lease 3 s) drain 600 jobs: the exported
:class:`pqueue.testing.faults.restarts.RestartContract`. Resume times are measured by
bench/restarts.py, not asserted here."""

from __future__ import annotations

import pytest

from pqueue.testing.faults.restarts import RestartContract, Server
from tests.integration.redis.servers import PrivateRedis

pytestmark = [pytest.mark.slow, pytest.mark.redis]


@pytest.fixture
def pqueue_restart_server(private_redis: PrivateRedis) -> tuple[Server, str]:
    return private_redis, private_redis.url + "?prefix=pqrestart"


class TestRedisRestarts(RestartContract):
    pass
