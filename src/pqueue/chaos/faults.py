"""Which faults a chaos run can inject on a DSN, and injecting them on schedule.

- ``kill``: SIGKILL a worker process (a replacement starts at once);
- ``stop``: SIGSTOP a worker for longer than its lease, then SIGCONT: a zombie that wakes
  up holding jobs that were taken back meanwhile;
- ``drain``: SIGTERM a worker (a deploy), a replacement starting first;
- ``reset``, ``stall``, ``latency``: through the run's own TCP proxy, every connection of
  the workers and clients reset, held, or slowed;
- ``restart``: the broker server crashed or stopped and started again (only a server the
  run started itself, ``--private-broker``);
- ``failover``: ``CLUSTER FAILOVER`` to a replica of one master (a private Redis Cluster).

Each fault's begin and end go into the history (with the worker's pid where there is one),
which the checker needs: a frozen worker's runs stop counting for limits when it freezes.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from pqueue.chaos.history import HistoryWriter
from pqueue.chaos.plan import FAULT_KINDS, Fault
from pqueue.chaos.pool import Pool

PROCESS_FAULTS = ("kill", "stop")
NETWORK_FAULTS = ("reset", "stall", "latency")


def reasons(scheme: str, *, proxied: bool, private: bool, in_process: bool) -> dict[str, str | None]:
    """Each fault kind -> None where it applies to this run, else why not (one line)."""
    cluster = scheme.endswith("+cluster")
    out: dict[str, str | None] = dict.fromkeys(FAULT_KINDS)
    for kind in PROCESS_FAULTS:
        if in_process:
            out[kind] = (
                f"{scheme}:// lives in one process: its workers run in the driver's and cannot be {kind}ed"
            )
    for kind in NETWORK_FAULTS:
        if not proxied:
            out[kind] = (
                f"{scheme}:// cannot go through a TCP proxy (no network, a Redis Cluster's advertised "
                "node addresses, TLS host checks or a unix socket)"
            )
    if not private or scheme in ("memory", "sqlite"):
        out["restart"] = "restarts need a server the run started itself (--private-broker, Redis or Postgres)"
    elif cluster:
        out["restart"] = "a Redis Cluster fails over instead (use failover)"
    if not (private and cluster):
        out["failover"] = "failovers need a private Redis Cluster (--private-broker with redis+cluster://)"
    return out


class Injector:
    """Runs a fault schedule against the run's workers, proxy and private server."""

    def __init__(
        self, history: HistoryWriter, pool: Pool, *, proxy: Any = None, server: Any = None, seed: int = 0
    ) -> None:
        self.history = history
        self.pool = pool
        self.proxy = proxy
        self.server = server
        self.done: list[tuple[Fault, float, float]] = []
        """(fault, began, ended) of every fault injected, in order."""
        self._rng = random.Random(f"{seed}:failover")

    async def run(self, schedule: list[Fault], started: float) -> None:
        loop = asyncio.get_running_loop()
        for fault in schedule:
            await asyncio.sleep(max(0.0, started + fault.at - loop.time()))
            await self.inject(fault)

    async def inject(self, fault: Fault) -> None:
        target = self.pool.pid(fault.target) if fault.kind in ("kill", "stop", "drain") else 0
        began = self._mark(fault, "begin", target)
        try:
            await self._do(fault)
        finally:
            self.done.append((fault, began, self._mark(fault, "end", target)))

    def _mark(self, fault: Fault, phase: str, target: int) -> float:
        loop = asyncio.get_running_loop()
        self.history.write(
            "fault", fault=fault.kind, phase=phase, target=target, duration=fault.duration, crash=fault.crash
        )
        return loop.time()

    async def _do(self, fault: Fault) -> None:
        if fault.kind == "kill":
            await self.pool.kill(fault.target)
        elif fault.kind == "stop":
            await self.pool.freeze(fault.target, fault.duration)
        elif fault.kind == "drain":
            await self.pool.drain(fault.target)
        elif fault.kind == "reset":
            self.proxy.reset()
        elif fault.kind == "stall":
            self.proxy.stall()
            try:
                await asyncio.sleep(fault.duration)
            finally:
                self.proxy.unstall()
        elif fault.kind == "latency":
            self.proxy.set_latency(fault.value)
            try:
                await asyncio.sleep(fault.duration)
            finally:
                self.proxy.set_latency(0.0)
        elif fault.kind == "restart":
            await asyncio.to_thread(self.server.kill if fault.crash else self.server.stop)
            try:
                await asyncio.sleep(fault.duration)
            finally:
                await asyncio.to_thread(self.server.start)
        elif fault.kind == "failover":
            await asyncio.to_thread(self._failover)
        else:  # pragma: no cover - the CLI refuses unknown kinds
            raise ValueError(f"unknown fault {fault.kind!r}")

    def _failover(self) -> None:
        cluster = self.server
        master = cluster.master_of(f"pqueue-chaos-{self._rng.randrange(1 << 30)}")
        cluster.failover(cluster.replica_of(master))
        cluster.wait_ok()

    async def heal(self) -> None:
        """Open the proxy again, whatever a fault cut short left it doing (a frozen worker is
        thawed and a stopped server started by the fault's own ``finally``)."""
        if self.proxy is not None:
            self.proxy.unstall()
            self.proxy.set_latency(0.0)
