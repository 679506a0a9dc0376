"""The most no-op jobs/s any asyncio worker can show in the shared harness's drain.

Every adapter's handler calls the harness's recorder (``common.arecord`` for async
handlers: one redis-py asyncio pipeline of INCR + RPUSH per job). This runs that
recorder alone, with no queue at all: ``--procs`` processes of ``--concurrency`` asyncio
tasks each call it until ``--n`` calls are done, timed as the harness times a drain
(spawn to last call, and first call to last call). A queue's drain through the
harness cannot be faster than this on the same machine, so it bounds the ratio a drain
can reach against a peer measured in the same minutes. Run with a Python that has
redis installed, from anywhere:

    python bench/recorder_ceiling.py --n 20000 --procs 2 --repeat 3 [--loop uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _child(harness: Path, calls: int, concurrency: int, loop: str) -> None:
    sys.path.insert(0, str(harness))
    import common  # the harness's recorder

    async def main() -> None:
        left = calls

        async def slot() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await common.arecord(time.time())

        await asyncio.gather(*(slot() for _ in range(concurrency)))

    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def _one_run(args: argparse.Namespace) -> tuple[float, float]:
    sys.path.insert(0, str(args.harness))
    import common
    import redis

    counter = redis.Redis.from_url(common.COUNTER_URL)
    counter.delete(common.DONE_KEY, common.LAT_KEY)
    share = args.n // args.procs
    command = [sys.executable, __file__, "--child", str(share), "--concurrency", str(args.concurrency),
               "--loop", args.loop, "--harness", str(args.harness)]  # fmt: skip
    spawned = time.time()
    procs = [subprocess.Popen(command) for _ in range(args.procs)]
    first = None
    target = share * args.procs
    while True:
        done = int(counter.get(common.DONE_KEY) or 0)
        now = time.time()
        if done and first is None:
            first = now
        if done >= target:
            break
        time.sleep(0.005)
    for proc in procs:
        proc.wait()
    counter.delete(common.DONE_KEY, common.LAT_KEY)
    assert first is not None
    return target / (now - spawned), target / max(1e-9, now - first)


def main() -> None:
    default_harness = Path(__file__).resolve().parents[2] / "shared" / "bench-peers"
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--harness", type=Path, default=default_harness)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.harness, args.child, args.concurrency, args.loop)
        return
    runs = [_one_run(args) for _ in range(args.repeat)]
    whole = statistics.median(r[0] for r in runs)
    steady = statistics.median(r[1] for r in runs)
    print(f"recorder alone, {args.procs} procs x {args.concurrency} {args.loop} tasks, n={args.n}: "
          f"{whole:,.0f} calls/s from spawn (runs {', '.join(f'{r[0]:,.0f}' for r in runs)}), "
          f"{steady:,.0f}/s from the first call")  # fmt: skip


if __name__ == "__main__":
    main()
