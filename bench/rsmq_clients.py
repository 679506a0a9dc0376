"""RSMQ clients in one sitting: pqueue.rsmq against the reference Node client (npm ``rsmq``)
and pyrsmq, for send and for receive + delete, with one client and with 8 concurrent; and
the consumer runtime's drain against npm ``rsmq-worker`` (issue 25).

    python bench/rsmq_clients.py [--dsn redis://127.0.0.1:6379/0] [--n 3000] [--runs 3]

Node and npm must be installed; ``rsmq`` and ``rsmq-worker`` are npm-installed into
``~/.cache/pqueue-bench/npm`` on first use. Each figure is the median of ``--runs`` runs on a
fresh queue of a namespace of its own (removed afterwards). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from redis import Redis

from pqueue import loops
from pqueue.rsmq import AsyncRsmq, Consumer, Rsmq, RsmqMessage

BODY = "x" * 100
NODE_SCRIPT = Path(__file__).with_name("rsmq_clients.js")
NPM_DIR = Path.home() / ".cache" / "pqueue-bench" / "npm"
PACKAGES = ("rsmq@0.12.4", "rsmq-worker@0.5.2")


def npm_modules() -> Path:
    if not (NPM_DIR / "node_modules" / "rsmq-worker").exists():
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR), *PACKAGES],
                       check=True, capture_output=True)  # fmt: skip
    return NPM_DIR / "node_modules"


class Sitting:
    def __init__(self, dsn: str, n: int) -> None:
        self.dsn, self.n = dsn, n
        self.ns = f"benchrsmq{uuid.uuid4().hex[:8]}"
        self.admin = Rsmq(dsn, ns=self.ns)
        self.count = 0

    def fresh_queue(self, fill: int = 0) -> str:
        self.count += 1
        qname = f"q{self.count}"
        self.admin.create_queue(qname)
        if fill:
            asyncio.run(_fill(self.dsn, self.ns, qname, fill))
        return qname

    def close(self) -> None:
        raw = Redis.from_url(self.dsn)
        keys = list(raw.scan_iter(match=f"{self.ns}:*", count=1000))
        if keys:
            raw.unlink(*keys)
        raw.close()
        self.admin.close()

    # -- one scenario, one client library ---------------------------------------------------
    def node(self, scenario: str, concurrency: int) -> float:
        qname = self.fresh_queue(0 if scenario == "send" else self.n)
        parts = urlsplit(self.dsn)
        db = (parts.path or "/0").strip("/") or "0"
        out = subprocess.run(
            ["node", str(NODE_SCRIPT), parts.hostname or "127.0.0.1", str(parts.port or 6379), db, self.ns,
             scenario, qname, str(self.n), str(concurrency)],
            check=True, capture_output=True, text=True,
            env={"NODE_PATH": str(npm_modules()), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        return float(json.loads(out.stdout)["seconds"])

    def pqueue(self, scenario: str, concurrency: int) -> float:
        qname = self.fresh_queue(0 if scenario == "send" else self.n)
        if concurrency == 1:
            with Rsmq(self.dsn, ns=self.ns) as client:
                client.list_queues()
                start = time.perf_counter()
                for _ in range(self.n):
                    if scenario == "send":
                        client.send_message(qname, BODY)
                    else:
                        got = client.receive_message(qname)
                        if got is not None:
                            client.delete_message(qname, got.id)
                return time.perf_counter() - start
        return loops.run(_pqueue_async(self.dsn, self.ns, qname, scenario, self.n, concurrency))

    def pyrsmq(self, scenario: str, concurrency: int) -> float:
        from rsmq import RedisSMQ

        qname = self.fresh_queue(0 if scenario == "send" else self.n)
        parts = urlsplit(self.dsn)
        db = int((parts.path or "/0").strip("/") or 0)
        clients = [
            RedisSMQ(host=parts.hostname, port=parts.port or 6379, ns=self.ns, options={"db": db})
            for _ in range(concurrency)
        ]
        for client in clients:
            client.getQueueAttributes(qname=qname).execute()
        left = [self.n]
        lock = threading.Lock()

        def loop(client: RedisSMQ) -> None:
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                if scenario == "send":
                    client.sendMessage(qname=qname, message=BODY).execute()
                else:
                    got = client.receiveMessage(qname=qname, quiet=True).execute()
                    if got:
                        client.deleteMessage(qname=qname, id=got["id"]).execute()

        threads = [threading.Thread(target=loop, args=(c,)) for c in clients]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - start

    def consumer(self, concurrency: int) -> float:
        qname = self.fresh_queue(self.n)

        async def noop(message: RsmqMessage) -> None:
            return None

        consumer = Consumer(self.dsn, qname, noop, ns=self.ns, concurrency=concurrency, poll_interval=0.05)

        async def drain() -> float:
            task = asyncio.create_task(consumer.serve())
            start = time.perf_counter()
            async with AsyncRsmq(self.dsn, ns=self.ns) as watcher:
                while (await watcher.get_queue_attributes(qname)).msgs:
                    await asyncio.sleep(0.005)
            elapsed = time.perf_counter() - start
            consumer.stop()
            await task
            return elapsed

        return loops.run(drain())

    def worker(self) -> float:
        return self.node("worker", 1)


async def _fill(dsn: str, ns: str, qname: str, n: int) -> None:
    async with AsyncRsmq(dsn, ns=ns) as client:
        for start in range(0, n, 200):
            await asyncio.gather(*(client.send_message(qname, BODY) for _ in range(min(200, n - start))))


async def _pqueue_async(  # noqa: PLR0917 - a bench helper
    dsn: str, ns: str, qname: str, scenario: str, n: int, concurrency: int
) -> float:
    async with AsyncRsmq(dsn, ns=ns) as client:
        await client.list_queues()
        left = [n]

        async def loop() -> None:
            while left[0] > 0:
                left[0] -= 1
                if scenario == "send":
                    await client.send_message(qname, BODY)
                else:
                    got = await client.receive_message(qname)
                    if got is not None:
                        await client.delete_message(qname, got.id)

        start = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        return time.perf_counter() - start


def median_rate(n: int, runs: int, measure: Callable[[], float]) -> tuple[float, float, float]:
    rates = sorted(n / measure() for _ in range(runs))
    return statistics.median(rates), rates[0], rates[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    npm_modules()
    sitting = Sitting(args.dsn, args.n)
    rows: list[tuple[str, str, float, float, float]] = []
    try:
        for scenario, label in (("send", "send"), ("recvdel", "receive + delete")):
            for concurrency in (1, 8):
                figures = {
                    name: median_rate(args.n, args.runs, lambda f=fn, s=scenario, c=concurrency: f(s, c))
                    for name, fn in (
                        ("pqueue", sitting.pqueue),
                        ("node", sitting.node),
                        ("pyrsmq", sitting.pyrsmq),
                    )
                }
                for name, (med, low, high) in figures.items():
                    rows.append(
                        (
                            f"{label}, {concurrency} client{'s' if concurrency > 1 else ''}",
                            name,
                            med,
                            low,
                            high,
                        )
                    )
        for name, measure in (
            ("pqueue Consumer, concurrency 1", lambda: sitting.consumer(1)),
            ("pqueue Consumer, concurrency 8", lambda: sitting.consumer(8)),
            ("rsmq-worker (one message at a time)", sitting.worker),
        ):
            med, low, high = median_rate(args.n, args.runs, measure)
            rows.append(("drain", name, med, low, high))
    finally:
        sitting.close()
    print(
        f"N = {args.n} messages of {len(BODY)} characters, {args.runs} runs, medians (min-max), messages/s\n"
    )
    print("| scenario | client | msg/s |")
    print("|---|---|---|")
    for scenario, name, med, low, high in rows:
        print(f"| {scenario} | {name} | {med:,.0f} ({low:,.0f}-{high:,.0f}) |")


if __name__ == "__main__":
    main()
