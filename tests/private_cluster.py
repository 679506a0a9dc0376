"""A private Redis Cluster we own: six loopback ``redis-server`` nodes, three masters and
three replicas, joined by ``redis-cli --cluster create`` (docs/redis.md, "Redis Cluster").

The cluster is :class:`pqueue.chaos.servers.PrivateRedisCluster` (``pqueue chaos
--private-broker`` starts it too), bound here to the test suite's ports (tests/ports.py,
ADR 0133); the restart scenario's servers made of it (:class:`FailoverOf`,
:class:`RestartOf`) are here. Plain classes, no pytest: the session fixture
(tests/conftest.py) and the failover tests share them.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

from pqueue.chaos import servers
from pqueue.chaos.servers import NODE_TIMEOUT_MS, READY_TIMEOUT
from tests.ports import free_port

__all__ = ["NODE_TIMEOUT_MS", "READY_TIMEOUT", "FailoverOf", "PrivateRedisCluster", "RestartOf"]


class PrivateRedisCluster(servers.PrivateRedisCluster):
    """:class:`pqueue.chaos.servers.PrivateRedisCluster` on ports of this test process's block."""

    def __init__(self, size: int = 6, *, port: Callable[[], int] = free_port) -> None:
        super().__init__(size, port=port)


class FailoverOf:
    """The restart scenario's server (pqueue.testing.faults.restarts) as a cluster failover of the
    master that serves ``key``: ``stop`` fails it over gracefully to its replica (``CLUSTER
    FAILOVER``), ``kill`` SIGKILLs it; ``start`` waits for the cluster to be ok again and
    starts a killed node again (it rejoins as a replica)."""

    def __init__(self, cluster: servers.PrivateRedisCluster, key: str) -> None:
        self.cluster = cluster
        self.key = key
        self.killed: int | None = None

    def stop(self) -> None:
        self.cluster.failover(self.cluster.replica_of(self.cluster.master_of(self.key)))

    def kill(self) -> None:
        self.killed = self.cluster.master_of(self.key)
        self.cluster.kill(self.killed)

    def start(self) -> None:
        if self.killed is not None:
            self.cluster.wait_taken_over(self.killed, self.key)
            self.cluster.start_node(self.killed)
            self.killed = None
            self.cluster.wait_ok()


class RestartOf:
    """The restart scenario's server as a restart of the master that serves ``key``, in
    place: its replica is told not to take over, ``stop`` shuts the master down (SIGTERM),
    ``kill`` SIGKILLs it, and ``start`` starts it again on its own data and waits until
    every node reports the cluster ok. The slot has no master while it is down."""

    def __init__(self, cluster: servers.PrivateRedisCluster, key: str) -> None:
        self.cluster = cluster
        self.port = cluster.master_of(key)
        cluster.no_failover(cluster.replica_of(self.port))

    def stop(self) -> None:
        self.cluster.shutdown(self.port)

    def kill(self) -> None:
        self.cluster.kill(self.port)

    def start(self) -> None:
        self.cluster.start_node(self.port)
        self.cluster.wait_ok()


def _stop_on(signum: int, frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":  # a cluster for a session by hand: python -m tests.private_cluster
    for stop_signal in (signal.SIGTERM, signal.SIGINT):  # SIGINT: ignored in a background job
        signal.signal(stop_signal, _stop_on)
    cluster = PrivateRedisCluster()
    cluster.start()
    print(cluster.url, flush=True)
    try:
        signal.pause()
    finally:
        cluster.stop()
