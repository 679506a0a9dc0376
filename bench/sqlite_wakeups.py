"""SQLite wake-ups, measured two ways (ADR 0148): adaptive polling of ``PRAGMA data_version``
(what the broker does) against a notification through Unix datagram sockets beside the file
(a prototype written only for this measurement).

For each mechanism one waiter process sleeps until woken, then claims and acks; the producer
(this process) enqueues ``--n`` jobs at random gaps of 20-80 ms, each carrying its enqueue
time. Reports enqueue -> claim p50/p99 in ms, and the waiter's CPU while idle for ``--idle``
seconds (from /proc, as a share of one core). ``--worker`` also measures a real idle
``pqueue worker`` (heartbeats, recovery and pruning passes included).

    python bench/sqlite_wakeups.py --n 200 --idle 60 --worker
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pqueue
from pqueue.brokers.sqlite import migrate

TICKS = os.sysconf("SC_CLK_TCK")

WAITER = r"""
import asyncio, json, os, socket, sys, time
import pqueue
dsn, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
wake_dir = dsn.removeprefix("sqlite:///") + ".wake"

async def main():
    broker = pqueue.connect(dsn)
    await broker.open()
    sock = None
    if mode == "socket":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(os.path.join(wake_dir, f"{os.getpid()}.sock"))
        sock.setblocking(False)
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    if sock is not None:
        def readable():
            while True:
                try:
                    sock.recv(16)
                except BlockingIOError:
                    break
            woken.set()
        loop.add_reader(sock.fileno(), readable)
    with open(out, "a") as f:
        print("ready", file=f, flush=True)
        while True:
            leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
            now = time.time()
            for lease in leases:
                print(now - float(lease.job.payload), file=f, flush=True)
            if leases:
                await broker.ack(leases)
                continue
            if mode == "poll":
                await broker.wait_for_jobs(["default"], 5.0)
            else:
                woken.clear()
                try:
                    await asyncio.wait_for(woken.wait(), 5.0)
                except TimeoutError:
                    pass

asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def notify(wake_dir: Path) -> None:
    """The prototype's producer side: one datagram to every waiter's socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        for path in wake_dir.glob("*.sock"):
            with contextlib.suppress(OSError):  # a waiter that is gone
                sock.sendto(b"1", str(path))


def idle_cpu(pid: int, seconds: float) -> float:
    start = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - start) / seconds


def run(mode: str, folder: Path, n: int, idle: float) -> dict[str, object]:
    dsn = f"sqlite:///{folder}/{mode}.db"
    migrate(dsn)
    wake_dir = folder / f"{mode}.db.wake"
    wake_dir.mkdir()
    out = folder / f"{mode}.out"
    waiter = subprocess.Popen([sys.executable, "-c", WAITER, dsn, mode, str(out)])
    try:
        while not out.exists() or "ready" not in out.read_text():
            time.sleep(0.05)
        time.sleep(1.0)
        cpu = idle_cpu(waiter.pid, idle)
        with pqueue.Client(dsn) as client:
            for _ in range(n):
                time.sleep(random.uniform(0.02, 0.08))
                client.enqueue("bench:wake", time.time())
                if mode == "socket":
                    notify(wake_dir)
            deadline = time.monotonic() + 30
            while len(out.read_text().splitlines()) < n + 1 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        waiter.kill()
        waiter.wait()
    ms = sorted(float(line) * 1000 for line in out.read_text().splitlines()[1:])
    return {
        "mode": mode,
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[int(len(ms) * 0.99) - 1], 2),
        "idle_cpu_pct": round(cpu * 100, 3),
    }


def worker_idle(folder: Path, idle: float) -> dict[str, object]:
    dsn = f"sqlite:///{folder}/worker.db"
    migrate(dsn)
    app = "tests.worker.apps.crash_app:router"
    cmd = [sys.executable, "-m", "pqueue", "worker", app, "--dsn", dsn, "--log-level", "WARNING"]
    root = Path(__file__).resolve().parents[1]
    worker = subprocess.Popen(cmd, cwd=root)
    try:
        time.sleep(5.0)
        cpu = idle_cpu(worker.pid, idle)
    finally:
        worker.terminate()
        worker.wait(30)
    return {"mode": "pqueue worker (idle)", "idle_cpu_pct": round(cpu * 100, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for mode in ("poll", "socket"):
            print(json.dumps(run(mode, folder, args.n, args.idle)), flush=True)
        if args.worker:
            print(json.dumps(worker_idle(folder, args.idle)), flush=True)


if __name__ == "__main__":
    main()
