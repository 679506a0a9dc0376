"""pqueue's own CPU per sync enqueue on Redis, against redis-py alone, in one process.

``driver_floor.py`` times the floor and ``Client.enqueue`` one after the other, so on a
busy machine their ratio swings with whatever else runs. This bench takes turns instead:
``--reps`` times, 2,000 script calls sent by redis-py alone (built beforehand, as in
``driver_floor.py``), then 2,000 ``Client.enqueue`` calls. It reports the calling
thread's CPU per call (median and minimum of the turns). What ``Client.enqueue`` adds
on top of the floor is pqueue's share: validation, the broker's steps, the combiner and
the client's layers. Keys go under a throw-away prefix, removed afterwards.

    python bench/sync_call_cost.py --reps 9
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable, Iterator

from driver_floor import QUEUE, TYPE, redis_script_calls, unlink_prefixes  # bench/, beside this file
from redis import Redis

from pqueue import Client

CALLS = 2000


def _cpu_per_call(run: Callable[[], object]) -> float:
    """µs of this thread's CPU per call of ``run``, over :data:`CALLS` calls."""
    began = time.thread_time()
    for _ in range(CALLS):
        run()
    return (time.thread_time() - began) / CALLS * 1e6


def _sender(redis: Redis, commands: Iterator[tuple[object, ...]]) -> Callable[[], object]:
    """Sends the next pre-built call with redis-py alone."""
    return lambda: redis.execute_command(*next(commands))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    prefix = f"pqcost{uuid.uuid4().hex[:8]}"
    redis = Redis.from_url(args.dsn)
    floor: list[float] = []
    client_cpu: list[float] = []
    try:
        with Client(f"{args.dsn}?prefix={prefix}c") as client:
            client.enqueue(TYPE, 0.0, queue=QUEUE, max_retries=0)  # warm, not timed
            for _ in range(args.reps):
                commands = iter(redis_script_calls(redis, prefix, CALLS))
                floor.append(_cpu_per_call(_sender(redis, commands)))
                client_cpu.append(
                    _cpu_per_call(lambda: client.enqueue(TYPE, time.time(), queue=QUEUE, max_retries=0))
                )
    finally:
        unlink_prefixes(redis, prefix)
        redis.close()
    for name, cpus in (("redis-py alone", floor), ("Client.enqueue", client_cpu)):
        print(f"{name}: client CPU median {statistics.median(cpus):.1f} µs/call, min {min(cpus):.1f}")
    print(f"pqueue's share: {statistics.median(client_cpu) - statistics.median(floor):.1f} µs/call")


if __name__ == "__main__":
    main()
