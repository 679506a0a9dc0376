"""The Python driver's floor for one enqueue: pqueue's own call, with no pqueue code in the loop.

The sync ``Client`` sends one script call (Redis) or one prepared statement (Postgres)
per single enqueue. This bench builds exactly those calls beforehand, one per job with a
fresh id, through pqueue's own builders, then times only the driver sending them one at
a time: redis-py's ``execute_command`` (hiredis) or psycopg's ``execute`` (prepared, on
one autocommit connection with the broker's adapters). No validation, no id making, no
middleware, no combiner. Then it times ``Client.enqueue`` of the same jobs on the same
server, alternating with the floor, so the two meet the same minutes.

So it shows how much of a single enqueue is the driver and the server, which pqueue's
Python cannot lower (on Redis a cheaper script could), and how much is pqueue's Python.
The C clients' ceilings of the same call are ``ceiling_enqueue_redis.py``
(redis-benchmark) and ``ceiling_enqueue_one.py`` (pgbench). Keys go under a throw-away
prefix, tables under a throw-away schema, both removed afterwards.

    python bench/driver_floor.py --backend redis --n 10000 --runs 3
    python bench/driver_floor.py --backend postgres --n 5000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from pqueue import Client
from pqueue.job import JobSpec
from pqueue.spec import build_spec

if TYPE_CHECKING:
    from redis import Redis

TYPE, QUEUE = "bench:noop", "bench"
REDIS = "redis://127.0.0.1:6379/3"
POSTGRES = "postgresql://postgres@127.0.0.1:5432/pqueue_bench"


def _specs(n: int) -> list[JobSpec]:
    """n no-op jobs as the sync Client makes them (new ids, the harness's payload)."""
    return [build_spec(TYPE, time.time(), queue=QUEUE, max_retries=0) for _ in range(n)]


def _timed(calls: int, run: Callable[[], None]) -> tuple[float, float]:
    """(calls per second, µs of this thread's CPU per call) of ``run``."""
    wall, cpu = time.perf_counter(), time.thread_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    return calls / wall, cpu / calls * 1e6


def redis_script_calls(redis: Redis, prefix: str, n: int) -> list[tuple[object, ...]]:
    """n single-job enqueue script calls under ``prefix``, built as the sync Client builds
    them (the script loaded first), ready for ``execute_command``."""
    from pqueue.brokers.redis import calls
    from pqueue.brokers.redis.keys import queue_keys
    from pqueue.brokers.redis.scripts import SOURCES

    redis.script_load(SOURCES["enqueue"])
    keys = queue_keys(prefix, QUEUE)
    return [
        calls.enqueue(keys, [spec], "", f"{prefix}:wake", f"{prefix}:handoff:").command()
        for spec in _specs(n)
    ]


def unlink_prefixes(redis: Redis, prefix: str) -> None:
    """Remove the keys of a round: the bare calls' ``prefix`` and the Client's ``prefix + "c"``."""
    for pattern in (f"{prefix}:*", f"{prefix}c:*"):
        found = list(redis.scan_iter(match=pattern, count=1000))
        for start in range(0, len(found), 1000):
            redis.unlink(*found[start : start + 1000])


def redis_round(dsn: str, n: int) -> dict[str, tuple[float, float]]:
    """One round on a fresh prefix: the bare redis-py call, then ``Client.enqueue``."""
    from redis import Redis

    prefix = f"pqfloor{uuid.uuid4().hex[:8]}"
    redis = Redis.from_url(dsn)
    try:
        commands = redis_script_calls(redis, prefix, n)
        execute = redis.execute_command

        def bare() -> None:
            for command in commands:
                execute(*command)

        figures = {"redis-py execute_command, pqueue's script call": _timed(n, bare)}
        with Client(f"{dsn}?prefix={prefix}c") as client:
            client.enqueue(TYPE, 0.0, queue=QUEUE, max_retries=0)  # warm, not timed
            figures["pqueue sync Client.enqueue"] = _timed(n, lambda: _enqueue_n(client, n))
        return figures
    finally:
        unlink_prefixes(redis, prefix)
        redis.close()


def postgres_round(dsn: str, n: int) -> dict[str, tuple[float, float]]:
    """One round on a fresh schema: the bare psycopg statement, then ``Client.enqueue``."""
    import psycopg

    from pqueue.brokers.postgres import migrate
    from pqueue.brokers.postgres.codec import one_params
    from pqueue.brokers.postgres.config import PostgresConfig
    from pqueue.brokers.postgres.connection import connection_kwargs
    from pqueue.brokers.postgres.handoff import fits_handoff
    from pqueue.brokers.postgres.sql import queries_for

    schema = f"pqfloor{uuid.uuid4().hex[:8]}"
    url = f"{dsn}?schema={schema}"
    migrate(url)
    try:
        query = queries_for(schema)["enqueue_one"]
        params = [{**one_params(spec), "handoff": fits_handoff(spec), "now": None} for spec in _specs(n)]
        config = PostgresConfig.from_url(url)
        with psycopg.connect(config.conninfo, **connection_kwargs(config)) as conn:
            cur = conn.cursor()
            cur.execute(query, params[0], prepare=True)  # warm: prepared before timing
            cur.fetchall()

            def bare() -> None:
                for p in params[1:]:
                    cur.execute(query, p, prepare=True)
                    cur.fetchall()

            figures = {"psycopg execute, pqueue's enqueue_one": _timed(n - 1, bare)}
        with Client(url) as client:
            client.enqueue(TYPE, 0.0, queue=QUEUE, max_retries=0)
            figures["pqueue sync Client.enqueue"] = _timed(n, lambda: _enqueue_n(client, n))
        return figures
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _enqueue_n(client: Client, n: int) -> None:
    for _ in range(n):
        client.enqueue(TYPE, time.time(), queue=QUEUE, max_retries=0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["redis", "postgres"], default="redis")
    parser.add_argument("--dsn", default=None, help="the server (default: the local test one)")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    dsn = args.dsn or (REDIS if args.backend == "redis" else POSTGRES)
    one_round = redis_round if args.backend == "redis" else postgres_round
    rounds = [one_round(dsn, args.n) for _ in range(args.runs)]
    for name in rounds[0]:
        rates = [r[name][0] for r in rounds]
        cpus = [r[name][1] for r in rounds]
        print(
            f"{args.backend} {name}: {', '.join(f'{x:,.0f}' for x in rates)} jobs/s, median "
            f"{statistics.median(rates):,.0f}; client CPU {statistics.median(cpus):.0f} µs/job"
        )


if __name__ == "__main__":
    main()
