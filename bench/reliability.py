"""The reliability figure: jobs lost and repeated per SIGKILL of a worker mid-run.

Enqueues ``--jobs`` jobs that each work for ``--job-seconds``, runs them on a
``pqueue worker`` subprocess with a short lease, and SIGKILLs that worker ``--kills``
times at random moments, starting a fresh one each time. When every job is settled it
reads the run log the handlers wrote and reports:

  lost      jobs that never completed (must be 0)
  dead      jobs dead-lettered (0 unless one was killed more than max_recoveries times)
  repeats   extra starts beyond one per job (only jobs in flight at a kill may repeat)
  per kill  repeats / kills, next to the worker's concurrency (the most it can hold)

    python bench/reliability.py --dsn 'redis://127.0.0.1:6379/3?prefix=pqrel'
    python bench/reliability.py --dsn 'postgresql://postgres@127.0.0.1/test?schema=pqrel'
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pqueue import AsyncClient, JobStatus, Task

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "reliability"


def start_worker(args: argparse.Namespace, runlog: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "pqueue", "worker", "bench.worker_app:router", "--dsn", args.dsn,
        "--queues", QUEUE, "--concurrency", str(args.concurrency), "--lease", str(args.lease),
        "--log-level", "ERROR",
    ]  # fmt: skip
    env = {**os.environ, "PQUEUE_BENCH_RUNLOG": str(runlog)}
    return subprocess.Popen(command, cwd=ROOT, env=env)


async def settled(client: AsyncClient) -> tuple[int, int]:
    stats = await client.stats()
    return stats.total(JobStatus.COMPLETED, QUEUE), stats.total(JobStatus.DEAD, QUEUE)


async def run(args: argparse.Namespace, runlog: Path) -> dict[str, float]:
    rng = random.Random(args.seed)
    async with AsyncClient(args.dsn) as client:
        tasks = [
            Task("bench:work", {"seconds": args.job_seconds}, queue=QUEUE, max_retries=0)
            for _ in range(args.jobs)
        ]
        ids = [r.id for r in await client.enqueue_many(tasks)]
        worker = start_worker(args, runlog)
        started = time.monotonic()
        for _ in range(args.kills):
            await asyncio.sleep(rng.uniform(args.min_gap, args.max_gap))
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            worker = start_worker(args, runlog)
        while sum(await settled(client)) < args.jobs:
            await asyncio.sleep(0.2)
            if time.monotonic() - started > args.timeout:
                break
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        statuses = Counter([(await client.get_job(i)).status for i in ids])
        await client.purge_dead(queue=QUEUE)
    starts = Counter(line.split()[1] for line in runlog.read_text().splitlines() if line.startswith("start"))
    repeats = sum(starts.values()) - len(starts)
    return {
        "jobs": args.jobs,
        "kills": args.kills,
        "completed": statuses[JobStatus.COMPLETED],
        "dead": statuses[JobStatus.DEAD],
        "lost": args.jobs - statuses[JobStatus.COMPLETED] - statuses[JobStatus.DEAD],
        "repeats": repeats,
        "repeats_per_kill": repeats / max(args.kills, 1),
        "never_started": args.jobs - len(starts),
        "seconds": time.monotonic() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True, help="a Redis or Postgres DSN (workers are other processes)")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--job-seconds", type=float, default=0.05)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--min-gap", type=float, default=0.5, help="seconds between kills, at least")
    parser.add_argument("--max-gap", type=float, default=1.5)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.dsn.startswith("memory:"):
        parser.error("memory:// is one process: SIGKILL would take the jobs with it")
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(run(args, Path(tmp) / "runs.log"))
    print(
        f"{args.dsn.split(':')[0]}: {result['jobs']} jobs, {result['kills']} SIGKILLs, concurrency "
        f"{args.concurrency}, lease {args.lease} s -> lost {result['lost']}, dead {result['dead']}, "
        f"repeats {result['repeats']} ({result['repeats_per_kill']:.1f} per kill), "
        f"completed {result['completed']} in {result['seconds']:.1f} s"
    )


if __name__ == "__main__":
    main()
