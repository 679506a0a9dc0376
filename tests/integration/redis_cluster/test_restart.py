"""Restarts of the master that serves the queue's slot, under real worker processes: the
exported :class:`pqueue.testing.faults.restarts.RestartContract` on a private Redis
Cluster (issue 29 §3).

This is not the failover of test_failover.py: here the master is stopped (SIGTERM) or
crashed (SIGKILL) and started again on its own AOF about a second later, and its replica
is told not to take over (``cluster-replica-no-failover``), so the slot has no master
meanwhile. Workers must ride out that gap as they ride out a one-server restart: the
cluster client's calls to that node fail, the rest of the cluster still names it, and
the node comes back with every acknowledged write (a killed process leaves its AOF
writes to the kernel). Nothing lost, no worker exit, nothing run twice after a graceful
restart, one WARNING and one INFO per outage.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pqueue.testing.faults.restarts import QUEUE, Mode, Plan, RestartContract, Server
from tests.conftest import missing
from tests.private_cluster import PrivateRedisCluster, RestartOf

pytestmark = [pytest.mark.slow, pytest.mark.redis_cluster]


@pytest.fixture
def pqueue_restart_server() -> Iterator[tuple[Server, str]]:
    """Six private nodes of this test's own; the server is the master of ``{restarts}``."""
    problem = PrivateRedisCluster.missing()
    if problem is not None:
        missing("redis_cluster", f"{problem}: cluster restart tests cannot run")
    cluster = PrivateRedisCluster()
    try:
        cluster.start()
        yield RestartOf(cluster, "{" + QUEUE + "}"), cluster.url + "/?prefix=pqrestart"
    finally:
        cluster.stop()


class TestRedisClusterRestarts(RestartContract):
    def restart_plan(self, mode: Mode) -> Plan:
        """A 10 s lease: a master started again refuses its slots' commands for 2 s
        (Redis's rejoin delay) after the 1 s it was down, an outage as long as the
        default 3 s lease; the lease must outlast it for no ack to be lost."""
        return Plan(mode=mode, lease=10.0, timeout=60.0)
