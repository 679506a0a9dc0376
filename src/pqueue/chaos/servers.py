"""Private Redis, Redis Cluster and Postgres servers we own, for faults that must not touch
anybody else's: restarts, crashes, failovers, killed connections, SCRIPT FLUSH. ``pqueue
chaos --private-broker`` starts them, and so do the test suite and bench/ (each a
:class:`pqueue.testing.faults.restarts.Server`: started, stopped, crashed, started again).

Each runs on loopback ports from ``port``, a function handing out a free one (default: one
the kernel picks; the test suite passes ``tests.ports.free_port``, ADR 0133), with its
data in a directory of its own, and can be stopped gracefully (:meth:`stop`), crashed
(:meth:`kill`) and started again on the same port and data.

- Redis: ``redis-server`` with AOF (``appendfsync always``), so a restart -- even after
  SIGKILL -- keeps every acknowledged write.
- Postgres: a throwaway cluster made by ``initdb`` from the newest
  ``/usr/lib/postgresql/*/bin`` (or ``PQUEUE_TEST_PG_BIN``), run by ``pg_ctl`` as the
  ``postgres`` OS user when we are root (Postgres refuses to run as root), its socket in
  its own directory. A crash is ``pg_ctl stop -m immediate`` (no shutdown checkpoint:
  the restart replays the WAL, as after a power cut of the server process).
- Redis Cluster: six ``redis-server`` nodes, three masters and three replicas, joined by
  ``redis-cli --cluster create`` (docs/redis.md, "Redis Cluster"); nodes can be failed over
  gracefully (``CLUSTER FAILOVER`` on a replica) or crashed (SIGKILL) and started again.
"""

from __future__ import annotations

import contextlib
import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "PrivatePostgres",
    "PrivateRedis",
    "PrivateRedisCluster",
    "loopback_port",
    "postgres_bin",
    "NODE_TIMEOUT_MS",
    "READY_TIMEOUT",
    "START_TIMEOUT",
]

START_TIMEOUT = 30.0
"""Seconds a Postgres server may take to accept connections."""
NODE_TIMEOUT_MS = 2000
"""``cluster-node-timeout``: a killed master's replica takes over a little after this."""
READY_TIMEOUT = 30.0
"""Seconds a cluster may take to report ``cluster_state:ok`` (or a failover to finish)."""


def loopback_port() -> int:
    """A loopback port nothing listens on now, picked by the kernel (``bind`` to port 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


STEADY_PORTS = range(12000, 20000)
"""Where :func:`steady_port` looks: below Linux's ephemeral range (32768 up, by default) and
the test suite's blocks (20000 up, tests/ports.py)."""


def steady_port() -> int:
    """A free loopback port below the kernel's ephemeral range, which ``connect()`` never
    hands out as a local port: a server restarted on it finds it free again (a port from
    :func:`loopback_port` may be taken by any outgoing connection while the server is down)."""
    for port in random.sample(STEADY_PORTS, 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return loopback_port()


def _wait_for_port(port: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"{what} did not start on port {port}")


def _alive(proc: subprocess.Popen[bytes] | None) -> bool:
    return proc is not None and proc.poll() is None


class PrivateRedis:
    """One redis-server process we own: start, stop, kill and restart it on the same port and data."""

    def __init__(self, workdir: Path, *, port: Callable[[], int] = loopback_port) -> None:
        self.dir = workdir
        self.port = port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def missing() -> str | None:
        """Why this machine cannot run one, or None."""
        return None if shutil.which("redis-server") else "redis-server is not installed"

    @property
    def running(self) -> bool:
        """Whether the server process we started is alive (it may not accept yet)."""
        return _alive(self._proc)

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
        _wait_for_port(self.port, 10, f"redis-server (see {self.dir / 'redis.log'})")

    def stop(self) -> None:
        """Shut down cleanly (the AOF is already fsynced on every write)."""
        self._end(signal.SIGTERM)  # redis shuts down, flushing the AOF

    def kill(self) -> None:
        """Crash: SIGKILL, no shutdown at all."""
        self._end(signal.SIGKILL)

    def _end(self, sig: signal.Signals) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


def postgres_bin() -> Path | None:
    """The newest Postgres server binaries on this machine (or ``PQUEUE_TEST_PG_BIN``)."""
    configured = os.environ.get("PQUEUE_TEST_PG_BIN")
    if configured:
        return Path(configured)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(found[-1]) if found else None


class PrivatePostgres:
    """A throwaway Postgres cluster we own: created in a temp directory, removed by :meth:`remove`."""

    def __init__(self, *, port: Callable[[], int] = loopback_port) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError(self.missing() or "no Postgres binaries")
        self.bin = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="pqueue-pg-"))
        self.data = self.dir / "data"
        self.port = port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:  # Postgres will not run as root: the cluster belongs to `postgres`
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    @staticmethod
    def missing() -> str | None:
        """Why this machine cannot run one, or None."""
        bindir = postgres_bin()
        if bindir is None or not (bindir / "pg_ctl").exists():
            return "no Postgres server binaries in /usr/lib/postgresql/*/bin (set PQUEUE_TEST_PG_BIN)"
        if os.geteuid() == 0 and shutil.which("runuser") is None:
            return "running as root without runuser: cannot start Postgres as the postgres user"
        return None

    @property
    def running(self) -> bool:
        """Whether the postmaster of ``postmaster.pid`` is alive (it may not accept yet)."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
        except (OSError, ValueError, IndexError):  # no file, a stale one, or no such process
            return False
        return True

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({result.returncode}): {result.stderr.strip() or result.stdout}"
            )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=100"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "postgres.log"), "-o", options, "-w",
                  "-t", str(int(START_TIMEOUT)), "start")  # fmt: skip
        _wait_for_port(self.port, START_TIMEOUT, f"postgres (see {self.dir / 'postgres.log'})")

    def migrate(self) -> None:
        """Create pqueue's schema (the CLI, as an operator would)."""
        subprocess.run(
            [sys.executable, "-m", "pqueue", "migrate", "--dsn", self.url], check=True, capture_output=True
        )

    def stop(self) -> None:
        """Shut down cleanly (``-m fast``: sessions are ended, a checkpoint is written)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """Crash: ``-m immediate`` (every server process quits at once; recovery at the next start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        """Stop the server if it runs and delete the cluster."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def _cli(port: int, *args: str, timeout: float = 10.0) -> str:
    result = subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    return result.stdout


class PrivateRedisCluster:
    """Six nodes (three masters with a replica each) on loopback ports, data under one temp dir."""

    def __init__(self, size: int = 6, *, port: Callable[[], int] = loopback_port) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pqueue-cluster-"))
        self.ports = [port() for _ in range(size)]
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

    @property
    def running(self) -> bool:
        """Whether every node's process is alive (a killed or shut-down node is not)."""
        return all(self.node_running(port) for port in self.ports)

    def node_running(self, port: int) -> bool:
        """Whether the process of the node on ``port`` is alive."""
        return _alive(self._procs.get(port))

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
