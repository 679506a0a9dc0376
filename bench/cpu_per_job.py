"""CPU per job of a peer-harness drain, by process group: workers, Postgres, Redis.

On a shared 2-core machine throughput swings with whatever else runs; CPU time per job
does much less, and it says where a drain's time goes. This runs the shared harness's
drain scenario once (its adapter, its recorder, its worker command), reads the CPU time
of the worker processes and of every ``postgres`` and ``redis-server`` process from
``/proc`` before and after, and prints jobs/s and microseconds of CPU per job for each.
Linux only. Run it with a Python that has pqueue and redis installed:

    BENCH_ADAPTER_DIRS=$PWD/bench/peers \\
    BENCH_PQUEUE_DSN='postgresql://postgres@127.0.0.1:5432/bench_peers?schema=pqueue_bench' \\
    python bench/cpu_per_job.py --adapter pqueue --n 20000 --procs 2
    /work/venv-peers/bin/python bench/cpu_per_job.py --adapter pgqueuer --n 20000 --procs 2

``--harness`` points at the harness folder (default ``../shared/bench-peers``). Counters
go where the harness sends them (``BENCH_COUNTER_URL``, Redis DB 12 by default).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def by_name(prefix: str) -> dict[int, float]:
    """CPU seconds of every process whose name starts with ``prefix``."""
    found = {}
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith(prefix):
                pid = int(comm.parent.name)
                found[pid] = cpu_seconds(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two readings by processes alive at the second one."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


async def drain(harness: Any, adapter: Any, args: argparse.Namespace) -> str:
    options = SimpleNamespace(n=args.n, procs=args.procs, concurrency=args.concurrency, timeout=120)
    await harness.aw(adapter.setup())
    harness.reset_counters()
    await harness.aw(adapter.open_producer())
    await harness.enqueue_n(adapter, args.n, adapter.batch_api is not None)
    await harness.aw(adapter.close_producer())
    postgres, redis = by_name("postgres"), by_name("redis-server")
    spawned = time.time()
    workers = harness.spawn_workers(adapter, options.procs, options.concurrency)
    try:
        first, done, count = harness.wait_done(args.n, options.timeout, ps=workers)
        worker_cpu = sum(cpu_seconds(p.pid) for p in workers)
        postgres_cpu = spent(postgres, by_name("postgres"))
        redis_cpu = spent(redis, by_name("redis-server"))
    finally:
        harness.stop_workers(workers)
        await harness.aw(adapter.cleanup())
    if done is None:
        return f"{args.adapter}: timed out with {count} of {args.n} jobs done"
    per_job = 1e6 / args.n
    return (
        f"{args.adapter}: {args.n / (done - spawned):,.0f} jobs/s (start-up {first - spawned:.2f} s); "
        f"CPU per job: workers {worker_cpu * per_job:.0f} us, Postgres {postgres_cpu * per_job:.0f} us, "
        f"Redis {redis_cpu * per_job:.0f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=1)
    default_harness = Path(__file__).resolve().parents[2] / "shared" / "bench-peers"
    parser.add_argument("--harness", type=Path, default=default_harness)
    args = parser.parse_args()
    sys.path.insert(0, str(args.harness))
    import harness  # the shared harness: its adapters, recorder and worker spawning

    adapter = harness.load_adapter(args.adapter)
    for _ in range(args.repeat):
        print(asyncio.run(drain(harness, adapter, args)), flush=True)


if __name__ == "__main__":
    main()
