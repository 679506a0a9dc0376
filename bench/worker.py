"""Worker-level drain throughput: N no-op jobs through real ``pqueue worker`` processes.

Enqueues ``--n`` no-op jobs, then starts ``pqueue worker bench.worker_app:router`` with
``--processes P`` and ``--concurrency C`` and times it until every job is completed:
``drain`` is N / (spawn -> last completion), including interpreter start and connecting;
``steady`` is the rate from the first completion to the last. ``memory://`` cannot be
reached from other processes, so there the worker runs in this process (P must be 1).
Each run uses a fresh queue in the DSN's namespace; pass a DSN naming a namespace of its
own (a key prefix or schema), as for bench/broker.py.

    python bench/worker.py --dsn memory://bench --n 50000
    python bench/worker.py --dsn 'redis://127.0.0.1:6379/3?prefix=pqbench' --n 20000 --processes 2
    python bench/worker.py --dsn 'postgresql://postgres@127.0.0.1/test?schema=pqbench' --processes 2

Also printed: the worker processes' CPU time per job (user + system, from
``getrusage(RUSAGE_CHILDREN)``), which other load on the machine disturbs less than rates.

``--metrics-port PORT`` runs the worker with its metrics exporter and scrapes
``/metrics`` every ``--scrape-every`` seconds (default 1; Prometheus usually scrapes
every 15 s) while it drains, to measure what metrics cost (docs/benchmarks.md, "Metrics").
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from pqueue import AsyncClient, JobStatus, Task, Worker

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "bench"


def _spread(i: int) -> int:
    """``--priorities spread``: job i's priority, each of -100..100 in turn (ADR 0145)."""
    return (i * 37) % 201 - 100


async def enqueue(client: AsyncClient, n: int, job_type: str, spread: bool = False) -> None:
    for start in range(0, n, 5000):
        await client.enqueue_many(
            [
                Task(job_type, i, queue=QUEUE, priority=_spread(i) if spread else None)
                for i in range(start, min(n, start + 5000))
            ]
        )


async def completed(client: AsyncClient) -> int:
    return (await client.stats()).total(JobStatus.COMPLETED, QUEUE)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def run_once(args: argparse.Namespace) -> tuple[float, float, float]:
    job_type = "bench:noop-sync" if args.sync else "bench:noop"
    async with AsyncClient(args.dsn) as client:
        base = await completed(client)
        await enqueue(client, args.n, job_type, args.priorities == "spread")
        started, cpu = time.perf_counter(), _children_cpu()
        if args.dsn.startswith("memory:"):
            sys.path.insert(0, str(ROOT))
            from bench.worker_app import router

            worker = Worker(args.dsn, router, queues=[QUEUE], concurrency=args.concurrency, log_jobs=False)
            serving = asyncio.create_task(worker.serve())
            stop = worker.stop
        else:
            command = [
                sys.executable, "-m", "pqueue", "worker", "bench.worker_app:router", "--dsn", args.dsn,
                "--queues", QUEUE, "--concurrency", str(args.concurrency),
                "--processes", str(args.processes), "--log-level", "WARNING",
            ]  # fmt: skip
            if args.metrics_port:
                command += ["--metrics-port", str(args.metrics_port), "--metrics-host", "127.0.0.1"]
            proc = subprocess.Popen(command, cwd=ROOT)  # noqa: ASYNC220 - started once, then awaited
            serving = asyncio.create_task(asyncio.to_thread(proc.wait))
            stop = lambda: proc.send_signal(signal.SIGTERM)  # noqa: E731
        first = scraped = 0.0
        while (done := await completed(client) - base) < args.n:
            if done and not first:
                first = time.perf_counter()
            if args.metrics_port and args.scrape_every and time.perf_counter() - scraped >= args.scrape_every:
                scraped = time.perf_counter()
                await asyncio.to_thread(_scrape, args.metrics_port)
            await asyncio.sleep(0.01)
        finished = time.perf_counter()
        stop()
        await serving
    drain = args.n / (finished - started)
    steady = args.n / (finished - first) if first else drain
    return drain, steady, (_children_cpu() - cpu) / args.n * 1e6


def _scrape(port: int) -> None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            reply.read()
    except OSError:
        pass  # not listening yet


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--sync", action="store_true", help="sync no-op handlers (run on threads)")
    parser.add_argument(
        "--priorities", choices=("none", "spread"), default="none", help="job priorities (default: none set)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--metrics-port", type=int, default=0, help="run the worker with metrics on this port"
    )
    parser.add_argument("--scrape-every", type=float, default=1.0, help="seconds between scrapes (0: none)")
    args = parser.parse_args()
    if args.dsn.startswith("memory:") and (args.processes != 1 or args.metrics_port):
        parser.error("memory:// is one process: use --processes 1, without --metrics-port")
    runs = [asyncio.run(run_once(args)) for _ in range(args.repeat)]
    drain = statistics.median(r[0] for r in runs)
    steady = statistics.median(r[1] for r in runs)
    cpu = statistics.median(r[2] for r in runs)
    kind = "sync" if args.sync else "async"
    extra = ", metrics" if args.metrics_port else ""
    extra += ", priorities spread" if args.priorities != "none" else ""
    print(
        f"{args.dsn.split(':')[0]}: {args.n} {kind} no-op jobs, {args.processes} process(es) x "
        f"concurrency {args.concurrency}{extra}: drain {drain:,.0f} jobs/s, steady {steady:,.0f} jobs/s, "
        f"worker CPU {cpu:.0f} us/job "
        f"(median of {args.repeat}; runs {[round(r[0]) for r in runs]})"
    )


if __name__ == "__main__":
    main()
