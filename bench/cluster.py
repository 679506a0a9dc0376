"""Redis Cluster against one Redis server, in the same sitting (docs/benchmarks.md, ADR 0142/0143).

Starts six private cluster nodes (three masters, three replicas: pqueue.chaos.servers)
and one private standalone ``redis-server`` with the same settings (AOF every second, no
RDB), then measures through the Broker protocol, from one process:

  enqueue_one    single enqueues, the queue cycling over q00..q11 (one call each)
  enqueue_many   batches of 500 jobs spread over q00..q11
  drain_12       claim (100 at a time per queue) and ack 12 queues' jobs
  enqueue_one / enqueue_many with ``wait_replicas=1`` (cluster only: the standalone
                 server has no replica)
  publish        PUBLISH vs SPUBLISH: ``redis-benchmark`` against one master, with the
                 CPU seconds all six nodes spent per 100,000 messages (ADR 0142)
  loss           single enqueues to q00 (from 1 and from ``--producers`` coroutines) while
                 its master is SIGKILLed: how many enqueues that returned are gone once
                 the replica took over, without and with ``wait_replicas=1`` (a fresh
                 cluster each; ADR 0143)

Each scenario runs ``--repeat`` times; medians are printed, with the cluster/standalone
ratio. The machine's load matters: report the figures with it.

    python bench/cluster.py --n 6000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pqueue
from pqueue.broker import FullBroker
from pqueue.chaos.servers import PrivateRedisCluster, loopback_port
from pqueue.spec import build_spec

QUEUES = [f"q{i:02d}" for i in range(12)]
LEASE = 60.0


def start_standalone(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = loopback_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--appendonly", "yes", "--save", "",
         "--dir", str(workdir), "--logfile", str(workdir / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(500):
        ping = ["redis-cli", "-p", str(port), "PING"]
        if subprocess.run(ping, capture_output=True, text=True, check=False).stdout.strip():
            break
        time.sleep(0.02)
    return proc, f"redis://127.0.0.1:{port}/0"


def spec(i: int) -> pqueue.JobSpec:
    return build_spec("bench:noop", {"i": i}, queue=QUEUES[i % len(QUEUES)])


async def drain(broker: FullBroker) -> int:
    done = 0
    while True:
        leases = await broker.claim(QUEUES, worker_id="bench", limit=100, lease_for=LEASE)
        if not leases:
            return done
        await broker.ack(leases)
        done += len(leases)


async def enqueue_one(broker: FullBroker, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        await broker.enqueue([spec(i)])
    rate = n / (time.perf_counter() - start)
    await drain(broker)
    return rate


async def enqueue_many(broker: FullBroker, n: int) -> float:
    n *= 5
    start = time.perf_counter()
    for first in range(0, n, 500):
        await broker.enqueue([spec(i) for i in range(first, min(n, first + 500))])
    rate = n / (time.perf_counter() - start)
    await drain(broker)
    return rate


async def drain_12(broker: FullBroker, n: int) -> float:
    n *= 2
    for first in range(0, n, 500):
        await broker.enqueue([spec(i) for i in range(first, min(n, first + 500))])
    start = time.perf_counter()
    done = await drain(broker)
    assert done == n, (done, n)
    return n / (time.perf_counter() - start)


Scenario = Callable[[FullBroker, int], Awaitable[float]]
SCENARIOS: dict[str, Scenario] = {
    "enqueue_one": enqueue_one,
    "enqueue_many": enqueue_many,
    "drain_12": drain_12,
}


async def run_once(dsn: str, scenario: Scenario, n: int, r: int) -> float:
    async with pqueue.connect(f"{dsn}{'&' if '?' in dsn else '?'}prefix=pqbench{r}") as broker:
        return await scenario(broker, n)


async def paired(
    first: str, second: str, scenario: Scenario, n: int, repeat: int
) -> tuple[float, float, float]:
    """Medians of ``first`` and ``second`` run alternately, and the median of the per-pair
    ratios second/first: on a loaded machine the pairs share the load of their moment."""
    a, b = [], []
    for r in range(repeat):
        a.append(await run_once(first, scenario, n, r))
        b.append(await run_once(second, scenario, n, r))
    return (
        statistics.median(a),
        statistics.median(b),
        statistics.median(y / x for x, y in zip(a, b, strict=True)),
    )


def node_cpu(ports: list[int]) -> float:
    total = 0.0
    for port in ports:
        command = ["redis-cli", "-p", str(port), "INFO", "cpu"]
        info = subprocess.run(command, capture_output=True, text=True, check=False).stdout
        for line in info.splitlines():
            if line.startswith(("used_cpu_sys:", "used_cpu_user:")):
                total += float(line.split(":")[1])
    return total


def publish_cost(cluster: PrivateRedisCluster, messages: int) -> dict[str, tuple[float, float]]:
    """Command -> (messages/s on one master, CPU s of all nodes per 100k messages)."""
    master = cluster.master_of("{q00}")
    out = {}
    for command in ("PUBLISH", "SPUBLISH"):
        before = node_cpu(cluster.ports)
        ran = subprocess.run(
            ["redis-benchmark", "-p", str(master), "-n", str(messages), "-P", "16", "-q", "--csv",
             command, "{q00}:wake", "q00"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        cpu = node_cpu(cluster.ports) - before
        rate = float(ran.stdout.strip().splitlines()[-1].split(",")[1].strip('"'))
        out[command] = (rate, cpu * 100_000 / messages)
    return out


async def enqueue_through_a_kill(options: str, producers: int, seconds: float = 3.0) -> tuple[int, int, int]:
    """(enqueues that returned, of those gone after the failover, enqueues that raised):
    ``producers`` coroutines send single enqueues to q00 while its master is killed."""
    cluster = PrivateRedisCluster()
    cluster.start()
    try:
        dsn = f"{cluster.url}/?prefix=pqloss&retries=1{options}"
        acked: list[str] = []
        raised = 0
        loop = asyncio.get_running_loop()
        start = loop.time()

        async def produce(broker: FullBroker) -> None:
            nonlocal raised
            while loop.time() - start < seconds:
                job = build_spec("bench:noop", None, queue="q00")
                try:
                    await broker.enqueue([job])
                    acked.append(job.id)
                except pqueue.BrokerUnavailable:
                    raised += 1
                    await asyncio.sleep(0.05)

        async with pqueue.connect(dsn) as broker:
            tasks = [asyncio.create_task(produce(broker)) for _ in range(producers)]
            await asyncio.sleep(seconds / 3)
            killed = cluster.master_of("{q00}")
            await loop.run_in_executor(None, cluster.kill, killed)
            await asyncio.gather(*tasks)
        await loop.run_in_executor(None, cluster.wait_taken_over, killed, "{q00}")
        async with pqueue.connect(dsn) as broker:
            found = 0
            for job_id in acked:
                try:
                    await broker.get_job(job_id)
                    found += 1
                except pqueue.JobNotFound:
                    pass
        return len(acked), len(acked) - found, raised
    finally:
        cluster.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4000, help="single enqueues a run (batches: 5x, drain: 2x)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loss", action="store_true", help="only the SIGKILL loss scenario")
    parser.add_argument("--producers", type=int, default=32, help="concurrent producers in --loss")
    args = parser.parse_args()
    if args.loss:
        for producers in (1, args.producers):
            for options in ("", "&wait_replicas=1"):
                acked, gone, raised = await enqueue_through_a_kill(options, producers)
                print(f"SIGKILL of q00's master, {producers} producer(s){options}: {acked} enqueues "
                      f"returned, {gone} of them gone; {raised} raised BrokerUnavailable")  # fmt: skip
        return
    workdir = Path(tempfile.mkdtemp(prefix="pqueue-bench-cluster-"))
    cluster = PrivateRedisCluster()
    cluster.start()
    standalone, standalone_dsn = start_standalone(workdir)
    try:
        print(f"{'scenario':<30}{'standalone/s':>14}{'cluster/s':>12}{'ratio':>8}  (median of pair ratios)")
        for name, scenario in SCENARIOS.items():
            one, many, ratio = await paired(standalone_dsn, cluster.url + "/", scenario, args.n, args.repeat)
            print(f"{name:<30}{one:>14,.0f}{many:>12,.0f}{ratio:>8.2f}")
        for name in ("enqueue_one", "enqueue_many"):
            plain, waited, ratio = await paired(
                cluster.url + "/", cluster.url + "/?wait_replicas=1", SCENARIOS[name], args.n, args.repeat
            )
            print(f"{name + ' wait_replicas=1':<30}{plain:>14,.0f}{waited:>12,.0f}{ratio:>8.2f}"
                  "  (columns: cluster without / with)")  # fmt: skip
        if shutil.which("redis-benchmark"):
            for command, (rate, cpu) in publish_cost(cluster, 200_000).items():
                print(
                    f"{command:<24}{rate:>14,.0f} msg/s on one master; {cpu:.2f} CPU s, all nodes, per 100k"
                )
    finally:
        standalone.terminate()
        standalone.wait()
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
