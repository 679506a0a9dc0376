"""Concurrent producers: N no-op single enqueues from K threads or coroutines, per system.

pqueue: ``sync`` (K threads sharing one ``pqueue.Client``) and ``async`` (K coroutines
sharing one ``AsyncClient``), on Redis or Postgres. Peers, through the shared harness's
adapters (run with the peers' venv, ``--peers /work/shared/bench-peers``): ``huey`` (K
threads calling the task, as its adapter's single enqueue) and ``pgqueuer`` (K asyncpg
connections, one coroutine each). Each run starts from an empty namespace and prints
jobs/s; three runs and their median per line. Interleave systems in one sitting.

    python bench/producers.py --system sync --backend redis --threads 16 --n 20000
    /path/to/peers-venv/bin/python bench/producers.py --system huey --threads 16 --n 20000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable

DSNS = {
    "redis": "redis://127.0.0.1:6379/3",
    "postgres": "postgresql://postgres@127.0.0.1:5432/pqueue_bench",
}


def in_threads(k: int, n: int, call: Callable[[int], object]) -> float:
    """Seconds for k threads to make n calls in all (released together)."""
    barrier = threading.Barrier(k + 1)

    def work(start: int) -> None:
        barrier.wait()
        for i in range(start, n, k):
            call(i)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(k)]
    for thread in threads:
        thread.start()
    barrier.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began


async def in_tasks(k: int, n: int, call: Callable[[int, int], object]) -> float:
    async def work(t: int) -> None:
        for i in range(t, n, k):
            await call(t, i)  # type: ignore[misc]

    began = time.perf_counter()
    await asyncio.gather(*(work(t) for t in range(k)))
    return time.perf_counter() - began


def pqueue_run(system: str, backend: str, k: int, n: int) -> float:
    import pqueue

    name = f"pqbench{uuid.uuid4().hex[:8]}"
    base = DSNS[backend]
    dsn = f"{base}?prefix={name}" if backend == "redis" else f"{base}?schema={name}"
    if backend == "postgres":
        from pqueue.brokers.postgres import migrate

        migrate(dsn)
    try:
        if system == "sync":
            with pqueue.Client(dsn) as client:
                client.enqueue("bench:noop", -1.0)
                return n / in_threads(k, n, lambda i: client.enqueue("bench:noop", time.time()))

        async def run() -> float:
            async with pqueue.AsyncClient(dsn) as client:
                await client.enqueue("bench:noop", -1.0)
                return n / await in_tasks(k, n, lambda t, i: client.enqueue("bench:noop", time.time()))

        return asyncio.run(run())
    finally:
        cleanup(backend, name)


def cleanup(backend: str, name: str) -> None:
    if backend == "redis":
        from redis import Redis

        admin = Redis.from_url(DSNS["redis"])
        keys = list(admin.scan_iter(match=f"{name}:*", count=1000))
        for start in range(0, len(keys), 1000):
            admin.unlink(*keys[start : start + 1000])
        admin.close()
    else:
        import psycopg

        with psycopg.connect(DSNS["postgres"], autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def huey_run(k: int, n: int) -> float:
    from adapters.huey_adapter import Adapter  # type: ignore[import-not-found]

    adapter = Adapter()
    adapter.setup()
    try:
        adapter.enqueue(time.time())
        return n / in_threads(k, n, lambda i: adapter.enqueue(time.time()))
    finally:
        adapter.cleanup()


def pgqueuer_run(k: int, n: int) -> float:
    from adapters.pgqueuer_adapter import Adapter  # type: ignore[import-not-found]

    async def run() -> float:
        adapters = [Adapter() for _ in range(k)]
        await adapters[0].setup()
        for adapter in adapters:
            await adapter.open_producer()  # one asyncpg connection each
        try:
            await adapters[0].enqueue(time.time())
            return n / await in_tasks(k, n, lambda t, i: adapters[t].enqueue(time.time()))
        finally:
            for adapter in adapters:
                await adapter.close_producer()
            await adapters[0].cleanup()

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--system", choices=["sync", "async", "huey", "pgqueuer"], required=True)
    parser.add_argument("--backend", choices=["redis", "postgres"], default="redis")
    parser.add_argument("--threads", type=int, default=16, help="threads or coroutines (K)")
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peers", default=os.environ.get("BENCH_PEERS", "/work/shared/bench-peers"))
    args = parser.parse_args()
    if args.system in ("huey", "pgqueuer"):
        sys.path.insert(0, args.peers)
        run: Callable[[], float] = (
            (lambda: huey_run(args.threads, args.n))
            if args.system == "huey"
            else (lambda: pgqueuer_run(args.threads, args.n))
        )
        backend = "redis" if args.system == "huey" else "postgres"
    else:
        backend = args.backend
        run = lambda: pqueue_run(args.system, backend, args.threads, args.n)  # noqa: E731
    rates = [run() for _ in range(args.runs)]
    print(
        f"{time.strftime('%H:%M:%S')} {args.system} {backend} K={args.threads} N={args.n}: "
        f"{', '.join(f'{r:,.0f}' for r in rates)} jobs/s; median {statistics.median(rates):,.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
