"""A private Redis Cluster we own: six loopback ``redis-server`` nodes, three masters and
three replicas, joined by ``redis-cli --cluster create`` (docs/redis.md, "Redis Cluster").

Plain class, no pytest: the session fixture (tests/conftest.py), the failover tests and
bench/cluster.py share it. Each node runs on a free port (tests/ports.py) with its data
in a directory of its own under one temp dir; the nodes can be failed over gracefully
(``CLUSTER FAILOVER`` on a replica) or crashed (SIGKILL) and started again.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.ports import free_port

NODE_TIMEOUT_MS = 2000
"""``cluster-node-timeout``: a killed master's replica takes over a little after this."""
READY_TIMEOUT = 30.0


def _cli(port: int, *args: str, timeout: float = 10.0) -> str:
    result = subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    return result.stdout


class PrivateRedisCluster:
    """Six nodes (three masters with a replica each) on loopback ports of this process's block."""

    def __init__(self, size: int = 6) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pqueue-cluster-"))
        self.ports = [free_port() for _ in range(size)]
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """A ``redis+cluster://`` DSN naming every node as a startup node."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    @staticmethod
    def missing() -> str | None:
        """Why this machine cannot run one, or None."""
        for tool in ("redis-server", "redis-cli"):
            if shutil.which(tool) is None:
                return f"{tool} is not installed"
        return None

    def start_node(self, port: int) -> None:
        """Start (or start again, on its data) the node on ``port``."""
        node_dir = self.dir / str(port)
        node_dir.mkdir(exist_ok=True)
        self._procs[port] = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
             "--cluster-config-file", f"nodes-{port}.conf", "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
             "--appendonly", "yes", "--save", "", "--dir", str(node_dir),
             "--logfile", str(node_dir / "redis.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while _cli(port, "PING").strip() != "PONG":
            if time.monotonic() > deadline:
                log = node_dir / "redis.log"
                raise RuntimeError(f"redis-server did not start on port {port} (see {log})")
            time.sleep(0.02)

    def start(self) -> None:
        """Start every node, join them (one replica per master) and wait for ``cluster_state:ok``."""
        for port in self.ports:
            self.start_node(port)
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        result = subprocess.run(
            ["redis-cli", "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {result.stdout[-500:]}{result.stderr}")
        self.wait_ok()
        self.wait_synced()

    def wait_synced(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until every replica's link to its master is up (its first sync done): only
        then can it take over from a killed master."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            infos = [_cli(p, "INFO", "replication") for p in self._procs]
            replicas = [i for i in infos if "role:slave" in i]
            if replicas and all("master_link_status:up" in i for i in replicas):
                return
            time.sleep(0.1)
        raise RuntimeError("the replicas did not finish their first sync")

    def wait_ok(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until every running node reports ``cluster_state:ok`` and knows every slot's master."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            infos = [_cli(p, "CLUSTER", "INFO") for p in self._procs]
            if all("cluster_state:ok" in i and "cluster_slots_ok:16384" in i for i in infos):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster did not reach cluster_state:ok")

    def master_of(self, key: str) -> int:
        """The port of the master serving ``key``'s slot (as a running node sees it)."""
        asked = next(iter(self._procs))
        slot = _cli(asked, "CLUSTER", "KEYSLOT", key).strip()
        for line in _cli(asked, "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "master" in fields[2] and "fail" not in fields[2]:
                for span in fields[8:]:
                    low, _, high = span.partition("-")
                    if low.isdigit() and int(low) <= int(slot) <= int(high or low):
                        return int(fields[1].split(":")[1].split("@")[0])
        raise RuntimeError(f"no master serves slot {slot}")

    def replica_of(self, master_port: int) -> int:
        """The port of a replica following the master on ``master_port``."""
        nodes = [line.split() for line in _cli(next(iter(self._procs)), "CLUSTER", "NODES").splitlines()]
        master_id = next(f[0] for f in nodes if f[1].split("@")[0].endswith(f":{master_port}"))
        for fields in nodes:
            if "slave" in fields[2] and fields[3] == master_id and "fail" not in fields[2]:
                return int(fields[1].split(":")[1].split("@")[0])
        raise RuntimeError(f"the master on port {master_port} has no replica")

    def failover(self, replica_port: int, timeout: float = READY_TIMEOUT) -> None:
        """``CLUSTER FAILOVER`` on a replica (graceful: no acknowledged write is lost); waits
        until it reports itself master."""
        _cli(replica_port, "CLUSTER", "FAILOVER")
        deadline = time.monotonic() + timeout
        while "role:master" not in _cli(replica_port, "INFO", "replication"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {replica_port} did not become master")
            time.sleep(0.05)

    def kill(self, port: int) -> None:
        """Crash one node: SIGKILL, no shutdown."""
        proc = self._procs.pop(port)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def shutdown(self, port: int) -> None:
        """Stop one node cleanly: SIGTERM (a master first lets its replicas catch up)."""
        proc = self._procs.pop(port)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    def no_failover(self, replica_port: int) -> None:
        """Tell a replica never to take over from its master (``cluster-replica-no-failover``)."""
        _cli(replica_port, "CONFIG", "SET", "cluster-replica-no-failover", "yes")

    def wait_taken_over(self, killed: int, key: str, timeout: float = READY_TIMEOUT) -> None:
        """Wait until a replica serves ``key``'s slot in place of the killed master on port
        ``killed`` (about the node timeout and an election), and the cluster is ok again."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.master_of(key) != killed:
                    break
            except RuntimeError:  # no master for the slot yet
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no replica took over from the master on port {killed}")
            time.sleep(0.1)
        self.wait_ok(max(0.0, deadline - time.monotonic()))

    def stop(self) -> None:
        """Stop every node and remove the data."""
        for proc in self._procs.values():
            proc.send_signal(signal.SIGKILL)
        for proc in self._procs.values():
            proc.wait()
        self._procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


class FailoverOf:
    """The restart scenario's server (pqueue.testing.faults.restarts) as a cluster failover of the
    master that serves ``key``: ``stop`` fails it over gracefully to its replica (``CLUSTER
    FAILOVER``), ``kill`` SIGKILLs it; ``start`` waits for the cluster to be ok again and
    starts a killed node again (it rejoins as a replica)."""

    def __init__(self, cluster: PrivateRedisCluster, key: str) -> None:
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

    def __init__(self, cluster: PrivateRedisCluster, key: str) -> None:
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
