"""Server time of the Redis claim and ack scripts, as Redis itself counts it.

Enqueues ``--n`` no-op jobs, resets ``INFO commandstats``, then claims and acks them in
batches of 100 and prints the claim+ack rate and the server's microseconds per EVALSHA.
A busy machine moves the client's rate a lot and the server's own count much less, so
this tells a slower script from a slower moment (it resets the server's command
statistics, so run it on a bench server). Run it from each tree to compare
(``PYTHONPATH=<tree>/src``); it deletes its key prefix afterwards.

    PYTHONPATH=src python bench/redis_script_time.py --dsn redis://127.0.0.1:6379/3
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from urllib.parse import urlsplit

import redis

from pqueue.brokers.redis import RedisBroker
from pqueue.spec import build_spec


async def run(dsn: str, n: int) -> None:
    prefix = f"pqst{uuid.uuid4().hex[:8]}"
    server = redis.Redis.from_url(dsn)
    broker = RedisBroker.from_url(f"{dsn}?prefix={prefix}")
    await broker.open()
    try:
        for start in range(0, n, 5000):
            await broker.enqueue([build_spec("bench:noop", i) for i in range(start, min(n, start + 5000))])
        server.config_resetstat()
        started, done = time.perf_counter(), 0
        while leases := await broker.claim(["default"], worker_id="bench", limit=100, lease_for=30):
            await broker.ack(leases)
            done += len(leases)
        elapsed = time.perf_counter() - started
        stats = server.info("commandstats").get("cmdstat_evalsha", {})
        print(
            f"{done} jobs: {done / elapsed:,.0f} jobs/s; server {stats.get('usec_per_call')} us "
            f"per script call over {stats.get('calls')} calls"
        )
    finally:
        await broker.close()
        for key in server.scan_iter(match=f"{prefix}:*", count=1000):
            server.delete(key)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default="redis://127.0.0.1:6379/3", help="a Redis URL without options")
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    if urlsplit(args.dsn).query:
        parser.error("give the DSN without options: the script picks its own key prefix")
    asyncio.run(run(args.dsn, args.n))


if __name__ == "__main__":
    main()
