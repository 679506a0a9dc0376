"""Single enqueues per second through the blocking ``pqueue.Client``: one call, one job.

Each run opens a Client on a fresh Redis key prefix, warms it with one enqueue, then
times ``--calls`` ``client.enqueue(...)`` calls one after another and deletes the
prefix's keys. Besides the rate it reports the client process's CPU time per call (both
threads), which a busy machine disturbs less than the wall-clock rate. ``--router``
gives the client a router that knows the job type, as an app would (every enqueue then
passes the producer's type check).

    python bench/sync_enqueue.py --dsn redis://127.0.0.1:6379/3 --calls 5000 --runs 3 [--router]
"""

from __future__ import annotations

import argparse
import time
import uuid

from redis import Redis

from pqueue import Client, Job, Router

TYPE = "bench:noop"


def make_router() -> Router:
    router = Router()

    @router.task(TYPE)
    def noop(job: Job) -> None: ...

    return router


def one_run(dsn: str, calls: int, router: Router | None) -> tuple[float, float]:
    """Enqueues per second and CPU microseconds per enqueue of one run on its own prefix."""
    prefix = f"pqbench{uuid.uuid4().hex[:8]}"
    separator = "&" if "?" in dsn else "?"
    try:
        with Client(f"{dsn}{separator}prefix={prefix}", router=router) as client:
            client.enqueue(TYPE, {"i": -1})
            started, cpu = time.perf_counter(), time.process_time()
            for i in range(calls):
                client.enqueue(TYPE, {"i": i})
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            return calls / wall, cpu / calls * 1e6
    finally:
        admin = Redis.from_url(dsn)
        keys = list(admin.scan_iter(match=f"{prefix}:*", count=1000))
        for start in range(0, len(keys), 1000):
            admin.unlink(*keys[start : start + 1000])
        admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default="redis://127.0.0.1:6379/3", help="a redis:// DSN without prefix")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--router", action="store_true", help="give the client a router knowing the type")
    args = parser.parse_args()
    router = make_router() if args.router else None
    runs = [one_run(args.dsn, args.calls, router) for _ in range(args.runs)]
    label = "with router" if args.router else "no router"
    print(
        f"sync Client, {label}: {', '.join(f'{rate:,.0f}' for rate, _ in runs)} enqueues/s; "
        f"{', '.join(f'{cpu:.0f}' for _, cpu in runs)} µs CPU per enqueue"
    )


if __name__ == "__main__":
    main()
