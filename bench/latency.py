"""Pick-up latency with idle workers: enqueue -> handler start, in milliseconds.

Starts one ``pqueue worker`` (concurrency 10), lets it go idle, then enqueues ``--n``
jobs ``--spacing-ms`` apart from one producer, each carrying the host time of its
enqueue call; the handler notes how long after that it started. Reports p50/p95/p99 —
the same measurement as the peer harness's latency scenario, without its Redis recorder.
``memory://`` runs the worker in this process.

    python bench/latency.py --dsn 'redis://127.0.0.1:6379/3?prefix=pqlat'
    python bench/latency.py --dsn 'postgresql://postgres@127.0.0.1/test?schema=pqlat'   # migrated first
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pqueue import AsyncClient, Worker

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "latency"


def logged(runlog: Path) -> list[str]:
    return runlog.read_text().splitlines() if runlog.exists() else []


async def wait_for_lines(runlog: Path, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(logged(runlog)) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(args: argparse.Namespace, runlog: Path) -> list[float]:
    os.environ["PQUEUE_BENCH_RUNLOG"] = str(runlog)
    sys.path.insert(0, str(ROOT))
    from bench.worker_app import router

    async with AsyncClient(args.dsn, router=router) as client:
        if args.dsn.startswith("memory:"):
            worker = Worker(args.dsn, router, queues=[QUEUE], concurrency=10, log_jobs=False)
            serving = asyncio.create_task(worker.serve())
            stop = worker.stop
        else:
            command = [
                sys.executable, "-m", "pqueue", "worker", "bench.worker_app:router", "--dsn", args.dsn,
                "--queues", QUEUE, "--concurrency", "10", "--log-level", "WARNING",
            ]  # fmt: skip
            proc = subprocess.Popen(command, cwd=ROOT)  # noqa: ASYNC220 - started once, then awaited
            serving = asyncio.create_task(asyncio.to_thread(proc.wait))
            stop = lambda: proc.send_signal(signal.SIGTERM)  # noqa: E731
        for _ in range(20):  # warm-up: the worker is up and has run jobs
            await client.enqueue("bench:pickup", time.time())
        await wait_for_lines(runlog, 20)
        await asyncio.sleep(1.0)  # idle
        runlog.write_text("")
        for _ in range(args.n):
            await client.enqueue("bench:pickup", time.time())
            await asyncio.sleep(args.spacing_ms / 1000)
        await wait_for_lines(runlog, args.n)
        stop()
        await serving
    return [float(line.split()[1]) * 1000 for line in logged(runlog)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--spacing-ms", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            ms = asyncio.run(run(args, Path(tmp) / "runs.log"))
        rows.append((percentile(ms, 0.5), percentile(ms, 0.95), percentile(ms, 0.99), len(ms)))
    p50, p95, p99 = (statistics.median(r[i] for r in rows) for i in range(3))
    print(
        f"{args.dsn.split(':')[0]}: pick-up latency over {args.n} jobs {args.spacing_ms} ms apart: "
        f"p50 {p50:.2f} / p95 {p95:.2f} / p99 {p99:.2f} ms (median of {args.repeat}; "
        f"jobs seen per run {[r[3] for r in rows]})"
    )


if __name__ == "__main__":
    main()
