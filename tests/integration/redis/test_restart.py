"""Redis restarts under real worker processes: nothing lost, no worker dies, and after a
graceful restart nothing runs twice. A private redis-server with AOF (appendfsync
always) is stopped (SIGTERM) or crashed (SIGKILL) twice for about a second while two
``pqueue worker`` processes (lease 3 s) drain 600 jobs; see tests/restart_scenario.py.
Resume times are measured by bench/restarts.py, not asserted here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import restart_scenario
from tests.integration.redis.servers import PrivateRedis
from tests.restart_checks import check

pytestmark = [pytest.mark.slow, pytest.mark.redis]


@pytest.mark.parametrize("mode", ["graceful", "crash"])
async def test_workers_ride_out_redis_restarts(
    private_redis: PrivateRedis, tmp_path: Path, mode: restart_scenario.Mode
) -> None:
    plan = restart_scenario.Plan(mode=mode)
    outcome = await restart_scenario.run(
        plan, private_redis, private_redis.url + "?prefix=pqrestart", tmp_path
    )
    check(outcome, plan)
