"""Load figures for the HTTP API: ``POST /jobs`` requests/s with p50/p99, and
``POST /jobs/batch`` jobs/s, against one ``pqueue serve`` process (one uvicorn worker).

It starts ``pqueue serve`` on a free loopback port over a namespace of its own (a Redis key
prefix or a migrated Postgres schema), then:

- single: ``wrk`` (Debian's package) POSTs one small job per request over ``--connections``
  keep-alive connections for ``--duration`` seconds; without wrk, a Python generator does.
- batch: ``--batch-clients`` clients POST batches of ``--batch-size`` jobs for
  ``--duration`` seconds; jobs/s counts only jobs the API answered as created.

The namespace is removed afterwards (keys unlinked / schema dropped), nothing else.

    python bench/http_load.py --backend redis --duration 10
    python bench/http_load.py --backend postgres --duration 10 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

TOKEN = "bench-" + uuid.uuid4().hex
URLS = {
    "redis": os.environ.get("PQUEUE_TEST_REDIS_URL", "redis://127.0.0.1:6379/3"),
    "postgres": os.environ.get("PQUEUE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
}
JOB = {"type": "bench.noop", "payload": {"user": 42, "action": "welcome"}, "queue": "bench"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc), to tell the server's own
    cost per request apart from the machine's contention."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def namespace_dsn(backend: str, namespace: str) -> str:
    base = URLS[backend]
    sep = "&" if "?" in base else "?"
    if backend == "redis":
        return f"{base}{sep}prefix={namespace}"
    from pqueue.brokers.postgres import migrate

    dsn = f"{base}{sep}schema={namespace}"
    migrate(dsn)
    return dsn


def cleanup(backend: str, namespace: str) -> None:
    if backend == "redis":
        import redis

        client = redis.Redis.from_url(URLS[backend])
        batch = list(client.scan_iter(match=f"{namespace}:*", count=1000))
        for i in range(0, len(batch), 1000):
            client.unlink(*batch[i : i + 1000])
        client.close()
        return
    import psycopg
    from psycopg import sql

    with psycopg.connect(URLS[backend], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(namespace)))


def serve(dsn: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PQUEUE_API_TOKEN": TOKEN, "PQUEUE_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "pqueue", "serve", "--dsn", dsn, "--port", str(port)]
    process = subprocess.Popen(command, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise SystemExit(f"pqueue serve exited with {process.returncode}")
        time.sleep(0.1)
    process.terminate()
    raise SystemExit("pqueue serve did not become ready in 30 s")


WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
"""


def single_wrk(port: int, duration: int, connections: int) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(body=json.dumps(JOB), token=TOKEN))
    try:
        out = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", script.name,
             f"http://127.0.0.1:{port}/jobs"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    finally:
        Path(script.name).unlink()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return {
        "tool": "wrk",
        "requests_per_s": rate,
        "p50_ms": _ms(re.search(r"50%\s+([\d.]+\w+)", out)[1]),  # type: ignore[index]
        "p99_ms": _ms(re.search(r"99%\s+([\d.]+\w+)", out)[1]),  # type: ignore[index]
        "errors": int(non2xx[1]) if non2xx else 0,
    }


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


async def single_python(port: int, duration: int, connections: int) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=connections)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, limits=limits) as http:
        end = time.perf_counter() + duration

        async def one_connection() -> None:
            nonlocal errors
            while time.perf_counter() < end:
                started = time.perf_counter()
                response = await http.post("/jobs", json=JOB)
                latencies.append(time.perf_counter() - started)
                errors += response.status_code != 201

        started = time.perf_counter()
        await asyncio.gather(*(one_connection() for _ in range(connections)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "tool": "python",
        "requests_per_s": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "errors": errors,
    }


async def batch(port: int, duration: int, clients: int, size: int) -> dict[str, Any]:
    body = json.dumps({"jobs": [{**JOB, "payload": {"user": i, "action": "welcome"}} for i in range(size)]})
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    created = 0
    seconds: list[float] = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as http:
        end = time.perf_counter() + duration

        async def one_client() -> None:
            nonlocal created
            while time.perf_counter() < end:
                started = time.perf_counter()
                response = await http.post("/jobs/batch", content=body)
                response.raise_for_status()
                seconds.append(time.perf_counter() - started)
                created += sum(1 for job in response.json()["jobs"] if job["created"])

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "jobs_per_s": created / elapsed,
        "batch_size": size,
        "requests": len(seconds),
        "p50_ms": statistics.median(seconds) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=sorted(URLS), default="redis")
    parser.add_argument("--duration", type=int, default=10, help="seconds per scenario")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections, single")
    parser.add_argument("--batch-clients", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--only", choices=["single", "batch"])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    namespace = f"pqhttp{uuid.uuid4().hex[:10]}"
    dsn = namespace_dsn(args.backend, namespace)
    port = free_port()
    process = serve(dsn, port)
    result: dict[str, Any] = {
        "backend": args.backend,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        if args.only in (None, "single"):
            cpu = cpu_seconds(process.pid)
            if shutil.which("wrk"):
                result["single"] = single_wrk(port, args.duration, args.connections)
            else:
                result["single"] = asyncio.run(single_python(port, args.duration, args.connections))
            single = result["single"]
            requests = single["requests_per_s"] * args.duration
            single["server_cpu_ms"] = (cpu_seconds(process.pid) - cpu) * 1000 / max(requests, 1)
        if args.only in (None, "batch"):
            cpu = cpu_seconds(process.pid)
            result["batch"] = asyncio.run(batch(port, args.duration, args.batch_clients, args.batch_size))
            jobs = result["batch"]["jobs_per_s"] * args.duration
            result["batch"]["server_cpu_us_per_job"] = (cpu_seconds(process.pid) - cpu) * 1e6 / max(jobs, 1)
    finally:
        process.terminate()
        process.wait(30)
        cleanup(args.backend, namespace)
    if args.json:
        print(json.dumps(result))
        return
    if "single" in result:
        s = result["single"]
        print(f"{args.backend} POST /jobs ({s['tool']}, {args.connections} connections): "
              f"{s['requests_per_s']:,.0f} req/s, p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms, "
              f"{s['errors']} errors; server CPU {s['server_cpu_ms']:.3f} ms/request "
              f"(one free core: {1000 / s['server_cpu_ms']:,.0f} req/s)")  # fmt: skip
    if "batch" in result:
        b = result["batch"]
        print(f"{args.backend} POST /jobs/batch ({args.batch_clients} clients x {b['batch_size']} jobs): "
              f"{b['jobs_per_s']:,.0f} jobs/s, p50 {b['p50_ms']:.0f} ms per batch; server CPU "
              f"{b['server_cpu_us_per_job']:.1f} us/job (one free core: "
              f"{1e6 / b['server_cpu_us_per_job']:,.0f} jobs/s)")  # fmt: skip


if __name__ == "__main__":
    main()
