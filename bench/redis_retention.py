"""A long run leaves no garbage: 100k jobs through the Redis broker, then the retention
window passes, and DBSIZE / INFO memory go back to where they started.

Runs on a private redis-server (started here on a free port, no persistence) so that
DBSIZE and used_memory count this run alone. Jobs: 10 % with a unique key, 5 % failing
once before succeeding, 1 % cancelled, 0.5 % dead and then purged. Retention is short
(``--retention``, default 5 s) and the broker uses the server's clock, as in production.

    python bench/redis_retention.py --jobs 100000
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redis.asyncio import Redis

import pqueue
from pqueue.broker import FullBroker
from pqueue.job import ErrorInfo
from pqueue.spec import build_spec


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            "--logfile",
            str(workdir / "redis.log"),
        ],
    )
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("redis-server did not start")


async def snapshot(admin: Redis, label: str) -> dict[str, object]:
    memory = await admin.info("memory")
    row = {"when": label, "dbsize": await admin.dbsize(), "used_memory": memory["used_memory"]}
    print(f"{label:<44} DBSIZE {row['dbsize']:>8,}   used_memory {row['used_memory'] / 2**20:8.2f} MiB")
    return row


async def workload(broker: FullBroker, n: int) -> None:
    for start in range(0, n, 1000):
        specs = []
        for i in range(start, min(start + 1000, n)):
            unique = i % 10 == 0
            key, ttl = (f"u{i}", 5.0) if unique else (None, None)
            specs.append(build_spec("bench:noop", {"i": i}, unique_key=key, unique_for=ttl))
        await broker.enqueue(specs)
    done = 0
    page = await broker.list_jobs(pqueue.JobStatus.PENDING, limit=n // 100)
    for job in page.jobs:  # 1 % cancelled
        await broker.cancel(job.id)
    while leases := await broker.claim(["default"], worker_id="w", limit=500, lease_for=60):
        ok = []
        for lease in leases:
            p = lease.job.payload["i"]
            if p % 200 == 1:  # 0.5 % dead
                await broker.fail(lease, ErrorInfo("E", "poison"), retry_in=None)
            elif p % 20 == 2 and lease.job.attempt == 1:  # 5 % fail once
                await broker.fail(lease, ErrorInfo("E", "flaky"), retry_in=0)
            else:
                ok.append(lease)
        await broker.ack(ok)
        done += len(ok)
        await broker.promote()
    await broker.purge_dead()


async def run(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="pq-retention-"))
    proc, port = start_server(workdir)
    url = f"redis://127.0.0.1:{port}/0"
    admin = Redis.from_url(url, decode_responses=True)
    try:
        await snapshot(admin, "empty server")
        broker = pqueue.connect(f"{url}?prefix=pqgc&retention={args.retention}")
        await broker.open()
        try:
            await snapshot(admin, "broker opened")
            started = time.monotonic()
            await workload(broker, args.jobs)
            took = time.monotonic() - started
            await snapshot(admin, f"{args.jobs:,} jobs done ({took:.1f} s), in retention")
            counts = (await broker.counts())["default"]
            print("   counts:", {str(k): v for k, v in counts.items() if v})
            await asyncio.sleep(args.retention + 1)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # Redis expires keys in its background cycle
                pruned = await broker.prune(limit=100_000)
                if pruned == 0 and await admin.dbsize() < 10:
                    break
                await asyncio.sleep(0.5)
            await snapshot(admin, "retention passed, prune run")
            print("   keys left:", sorted(await admin.keys("*")))
        finally:
            await broker.close()
    finally:
        await admin.aclose()
        proc.terminate()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--retention", type=float, default=5.0)
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
