"""Broker-level throughput and wake-up latency for any backend, by DSN.

Measures, from one process, through the Broker protocol only:
  enqueue_one   N jobs, one awaited ``enqueue`` call each
  enqueue_many  N jobs in batches of ``--batch`` (one call per batch)
  claim_ack     N pre-enqueued jobs claimed ``--claim-batch`` at a time, each batch acked in one call
  wakeup        an idle ``wait_for_jobs`` woken by an enqueue from a second broker (p50/p99 ms)

Each scenario runs ``--repeat`` times; the median is reported. Jobs are no-ops: this is
the cost of the queue itself. Enqueue timings include building the specs (validation and
JSON encoding), as a producer pays them. Results print as a table and, with ``--json``, as JSON lines.

    python bench/broker.py --dsn redis://127.0.0.1:6379/3?prefix=pqbench --n 20000
    python bench/broker.py --dsn postgresql://postgres@127.0.0.1/test?schema=pqbench \
        --background-completed 1000000

The DSN should name a namespace of its own (a key prefix or schema): the bench drains
and prunes what it enqueued, and nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field

import pqueue
from pqueue.broker import FullBroker
from pqueue.spec import build_spec

QUEUE = "bench"
LEASE = 60.0


@dataclass
class Result:
    scenario: str
    unit: str
    runs: list[float] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


PRIORITIES = {"none": lambda i: 0, "spread": lambda i: (i * 37) % 201 - 100}
"""``--priorities``: every job at the default, or each job one of -100..100 in turn (ADR 0145)."""


def specs(n: int, priorities: str = "none") -> list[pqueue.JobSpec]:
    priority_of = PRIORITIES[priorities]
    return [build_spec("bench:noop", {"i": i}, queue=QUEUE, priority=priority_of(i)) for i in range(n)]


async def drain(broker: FullBroker, batch: int = 500) -> int:
    """Claim and ack everything in the bench queue; returns how many."""
    done = 0
    while leases := await broker.claim([QUEUE], worker_id="bench", limit=batch, lease_for=LEASE):
        await broker.ack(leases)
        done += len(leases)
    return done


async def enqueue_one(broker: FullBroker, n: int, args: argparse.Namespace) -> float:
    start = time.perf_counter()
    for i in range(n):
        await broker.enqueue(
            [build_spec("bench:noop", {"i": i}, queue=QUEUE, priority=PRIORITIES[args.priorities](i))]
        )
    elapsed = time.perf_counter() - start
    await drain(broker)
    return n / elapsed


async def enqueue_many(broker: FullBroker, n: int, args: argparse.Namespace) -> float:
    start = time.perf_counter()
    for i in range(0, n, args.batch):
        await broker.enqueue(specs(min(args.batch, n - i), args.priorities))
    elapsed = time.perf_counter() - start
    await drain(broker)
    return n / elapsed


async def claim_ack(broker: FullBroker, n: int, args: argparse.Namespace) -> float:
    jobs = specs(n, args.priorities)
    for i in range(0, n, 1000):
        await broker.enqueue(jobs[i : i + 1000])
    start = time.perf_counter()
    done = drained = 0
    while done < n:
        leases = await broker.claim([QUEUE], worker_id="bench", limit=args.claim_batch, lease_for=LEASE)
        if not leases:
            drained += 1
            if drained > 100:
                raise RuntimeError(f"claim_ack: only {done} of {n} jobs came back")
            continue
        await broker.ack(leases)
        done += len(leases)
    return n / (time.perf_counter() - start)


async def wakeup(broker: FullBroker, n: int, args: argparse.Namespace) -> tuple[float, dict[str, float]]:
    """Latency from an enqueue on a second broker to the idle waiter waking, in ms."""
    producer = pqueue.connect(args.dsn)
    await producer.open()
    samples: list[float] = []
    try:
        for _ in range(args.wakeups):
            waiter = asyncio.create_task(broker.wait_for_jobs([QUEUE], timeout=5.0))
            await asyncio.sleep(0.01)  # let the waiter park
            start = time.perf_counter()
            await producer.enqueue(specs(1))
            woken = await waiter
            samples.append((time.perf_counter() - start) * 1000)
            if not woken:
                samples[-1] = float("inf")
            await drain(broker)
    finally:
        await producer.close()
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered), {"p99_ms": p99, "max_ms": ordered[-1]}


SCENARIOS: dict[str, Callable[[FullBroker, int, argparse.Namespace], Awaitable[object]]] = {
    "enqueue_one": enqueue_one,
    "enqueue_many": enqueue_many,
    "claim_ack": claim_ack,
    "wakeup": wakeup,
}


async def fill_completed(broker: FullBroker, n: int) -> None:
    """Leave ``n`` completed jobs behind so claims run against a big table."""
    for i in range(0, n, 5000):
        await broker.enqueue(specs(min(5000, n - i)))
        await drain(broker, batch=1000)


async def prune_all(dsn: str) -> None:
    """Remove what the bench left: completed jobs, through a zero-retention broker."""
    cleaner = pqueue.connect(dsn, retention=0)
    await cleaner.open()
    try:
        await drain(cleaner)
        while await cleaner.prune(limit=10_000):
            pass
    finally:
        await cleaner.close()


async def run(args: argparse.Namespace) -> list[Result]:
    broker = pqueue.connect(args.dsn)
    await broker.open()
    results: list[Result] = []
    try:
        await drain(broker)
        if args.background_completed:
            await fill_completed(broker, args.background_completed)
        for name in args.scenarios:
            result = Result(name, "p50 ms" if name == "wakeup" else "jobs/s")
            n = args.n_one if name == "enqueue_one" else args.n
            for _ in range(args.repeat):
                value = await SCENARIOS[name](broker, n, args)
                if isinstance(value, tuple):
                    result.runs.append(value[0])
                    for key, extra in value[1].items():
                        result.extra.setdefault(key, 0.0)
                        result.extra[key] = max(result.extra[key], extra)
                else:
                    result.runs.append(float(value))  # type: ignore[arg-type]
            results.append(result)
    finally:
        await broker.close()
    if not args.keep:
        await prune_all(args.dsn)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--n", type=int, default=20_000, help="jobs per run (enqueue_many, claim_ack)")
    parser.add_argument("--n-one", type=int, default=5_000, help="jobs per enqueue_one run")
    parser.add_argument("--batch", type=int, default=1000, help="enqueue_many batch size")
    parser.add_argument("--claim-batch", type=int, default=100, help="jobs per claim call")
    parser.add_argument("--wakeups", type=int, default=200, help="wake-up samples per run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--background-completed", type=int, default=0, metavar="N")
    parser.add_argument("--keep", action="store_true", help="do not prune completed jobs afterwards")
    parser.add_argument("--json", action="store_true", help="also print one JSON line per scenario")
    parser.add_argument(
        "--priorities", choices=sorted(PRIORITIES), default="none", help="job priorities (default: none set)"
    )
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(SCENARIOS)} (default: all)"
    )
    args = parser.parse_args(argv)
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s) {sorted(unknown)}; choose from {list(SCENARIOS)}")
    args.scenarios = args.scenarios or list(SCENARIOS)
    results = asyncio.run(run(args))
    where = pqueue.brokers.redact(args.dsn)
    print(f"# pqueue {pqueue.__version__}, Python {platform.python_version()}, {where}")
    print(f"{'scenario':<14} {'median':>12} {'unit':<8} runs")
    for r in results:
        runs = ", ".join(f"{v:,.1f}" for v in r.runs)
        extra = " ".join(f"{k}={v:,.2f}" for k, v in r.extra.items())
        print(f"{r.scenario:<14} {r.median:>12,.1f} {r.unit:<8} [{runs}] {extra}")
        if args.json:
            print(json.dumps({**asdict(r), "median": r.median, "dsn": pqueue.brokers.redact(args.dsn)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
