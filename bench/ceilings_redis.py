"""Redis ceilings next to pqueue's Redis broker, measured in the same sitting.

Runs ``redis-benchmark`` for the raw operations each broker scenario is built from, then
``bench/broker.py`` on the same server, and prints both side by side:

  enqueue_one   vs  one round trip per call: PING and a no-op EVALSHA from 1 client, in C
                    (redis-benchmark) and from Python (redis-py asyncio, awaited one by one)
  enqueue_many  vs  storing job hashes: HSET of 8 fields, 1 client, pipelined 1,000 deep
                    (an enqueue also pushes the id and checks the id is new)
  claim_ack     vs  the two halves' cheapest forms from 1 client, pipelined 100 deep: a
                    Lua LMOVE of one id (what a minimal reliable-queue claim does) and
                    HGETALL of an 8-field hash (reading the job a claim returns)

Everything the ceilings write lives under a key prefix of its own and is deleted
afterwards (SCAN + UNLINK); nothing is flushed. DBs 8 and 12 belong to the peer harness.

    python bench/ceilings_redis.py --url redis://127.0.0.1:6379/3 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.asyncio

HERE = Path(__file__).parent
FIELDS = (
    "type bench:noop payload {} status pending run_at 1800000000000 created_at 1800000000000 "
    "seq 1 max_retries 3 max_recoveries 5"
)
LMOVE = "return redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')"


def redis_benchmark(url: str, *args: str) -> float:
    """Requests per second reported by one redis-benchmark run."""
    parts = urlsplit(url)
    db = (parts.path or "/0").strip("/") or "0"
    cmd = ["redis-benchmark", "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 6379)]
    cmd += ["--dbnum", db, "-q", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.replace("\r", "\n")
    rates = re.findall(r"([\d.]+) requests per second", out)
    if not rates:
        raise RuntimeError(f"no rate in redis-benchmark output: {out!r}")
    return float(rates[-1])


def ceilings(url: str, prefix: str) -> dict[str, float]:
    client = redis.Redis.from_url(url)
    try:
        noop = client.script_load("return 1")
        lmove = client.script_load(LMOVE)
        src, dst = f"{prefix}:{{q}}:src", f"{prefix}:{{q}}:dst"
        out = {
            "ping_1client": redis_benchmark(url, "-n", "20000", "-c", "1", "PING"),
            "evalsha_noop_1client": redis_benchmark(url, "-n", "20000", "-c", "1", "EVALSHA", noop, "0"),
            "hset8_pipelined": redis_benchmark(
                url,
                "-n",
                "200000",
                "-c",
                "1",
                "-P",
                "1000",
                "-r",
                "100000",
                "HSET",
                f"{prefix}:{{q}}:job:__rand_int__",
                *FIELDS.split(),
            ),
        }
        client.rpush(src, *range(300_000))
        out["lmove_script_pipelined"] = redis_benchmark(
            url, "-n", "200000", "-c", "1", "-P", "100", "EVALSHA", lmove, "2", src, dst
        )
        client.hset(
            f"{prefix}:{{q}}:job:1", mapping=dict(zip(FIELDS.split()[::2], FIELDS.split()[1::2], strict=True))
        )
        out["hgetall8_pipelined"] = redis_benchmark(
            url, "-n", "200000", "-c", "1", "-P", "100", "HGETALL", f"{prefix}:{{q}}:job:1"
        )
        return out
    finally:
        client.close()
        _unlink_prefix(url, prefix)


async def _redis_py_calls(url: str, n: int = 5000) -> dict[str, float]:
    """Awaited calls per second from redis-py asyncio (hiredis): the Python client's floor."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        noop = await client.script_load("return 1")
        out = {}
        for name, call in (("ping", client.ping), ("evalsha", lambda: client.evalsha(noop, 0))):
            start = time.perf_counter()
            for _ in range(n):
                await call()
            out[f"redis_py_{name}_1client"] = n / (time.perf_counter() - start)
        return out
    finally:
        await client.aclose()


def _unlink_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=10_000))
        for i in range(0, len(keys), 10_000):
            client.unlink(*keys[i : i + 10_000])
    finally:
        client.close()


def broker_bench(url: str, args: argparse.Namespace) -> dict[str, float]:
    """Medians from bench/broker.py on the same server, under a prefix of its own (removed after)."""
    prefix = f"pqbench{uuid.uuid4().hex[:8]}"
    cmd = [sys.executable, str(HERE / "broker.py"), "--dsn", f"{url}?prefix={prefix}", "--json"]
    cmd += ["--repeat", str(args.repeat), "--n", str(args.n), "--n-one", str(args.n_one)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        _unlink_prefix(url, prefix)
    return {
        d["scenario"]: d["median"]
        for d in map(json.loads, filter(lambda s: s.startswith("{"), out.splitlines()))
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="redis://127.0.0.1:6379/3", help="server and database (not 8 or 12)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--n-one", type=int, default=5_000)
    args = parser.parse_args(argv)
    ours = broker_bench(args.url, args)  # first: the ceilings' cleanup frees memory in the background
    runs = []
    for _ in range(args.repeat):
        run = ceilings(args.url, f"pqceil{uuid.uuid4().hex[:8]}")
        run.update(asyncio.run(_redis_py_calls(args.url)))
        runs.append(run)
    ceiling = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    rows = [
        ("enqueue_one", ours["enqueue_one"], "PING, 1 client", ceiling["ping_1client"]),
        ("", None, "EVALSHA no-op, 1 client", ceiling["evalsha_noop_1client"]),
        ("", None, "redis-py PING, awaited", ceiling["redis_py_ping_1client"]),
        ("", None, "redis-py EVALSHA no-op, awaited", ceiling["redis_py_evalsha_1client"]),
        ("enqueue_many", ours["enqueue_many"], "HSET 8 fields, pipelined", ceiling["hset8_pipelined"]),
        ("claim_ack", ours["claim_ack"], "Lua LMOVE, pipelined", ceiling["lmove_script_pipelined"]),
        ("", None, "HGETALL 8 fields, pipelined", ceiling["hgetall8_pipelined"]),
    ]
    print(f"# {args.url}, medians of {args.repeat} runs; ceilings are redis-benchmark requests/s")
    print(f"{'scenario':<13} {'pqueue jobs/s':>14}   {'ceiling':<32} {'ops/s':>11} {'pqueue/ceiling':>15}")
    for name, value, what, limit in rows:
        mine = f"{value:,.0f}" if value is not None else ""
        ratio = f"{value / limit:.0%}" if value is not None else ""
        print(f"{name:<13} {mine:>14}   {what:<32} {limit:>11,.0f} {ratio:>15}")
    print(f"wake-up p50: {ours['wakeup']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
