"""One benchmark sitting: pqueue and the fastest peers, same machine, same hour.

Runs the shared peer harness (``../shared/bench-peers``) for the reference peers and for
pqueue on Redis and Postgres, every scenario ``--repeat`` times with N no-op jobs, and
appends one JSON line per (adapter, backend, scenario) to ``--out``. ``bench/report.py``
turns that file into the tables and chart of docs/benchmarks.md. The service ceilings
(redis-benchmark, pgbench) and the project's own benches are run by ``bench/sitting.sh``
around this script.

    python bench/sitting.py --peers-python /work/venv-peers/bin/python --out bench/results/sitting.jsonl

The peers run in their own virtualenv (``--peers-python``); pqueue runs with this Python.
Nothing else should run on the machine meanwhile: compare ratios within one sitting.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS_DIR = ROOT.parent / "shared" / "bench-peers"
PG_DSN = "postgresql://postgres@127.0.0.1:5432/bench_peers?schema=pqueue_bench"
REDIS_DSN = "redis://127.0.0.1:6379/8"

SCENARIOS: list[tuple[str, list[str]]] = [
    ("enqueue_single", []),
    ("enqueue_batch", []),
    ("drain", ["--procs", "1"]),
    ("drain", ["--procs", "2"]),
    ("latency", ["--procs", "1"]),
]


@dataclass(frozen=True)
class Contestant:
    adapter: str
    backend: str
    dsn: str | None = None  # pqueue only
    scenarios: tuple[str, ...] = ("enqueue_single", "enqueue_batch", "drain", "latency")


CONTESTANTS = [
    Contestant("huey", "redis", scenarios=("enqueue_single", "drain", "latency")),
    Contestant("dramatiq", "redis", scenarios=("enqueue_single", "drain", "latency")),
    Contestant("taskiq", "redis", scenarios=("enqueue_single", "latency")),
    Contestant("rq", "redis", scenarios=("enqueue_batch",)),
    Contestant("pqueue", "redis", dsn=REDIS_DSN),
    Contestant("pgqueuer", "postgres"),
    Contestant("pqueue", "postgres", dsn=PG_DSN),
]


def run_one(c: Contestant, scenario: str, extra: list[str], args: argparse.Namespace) -> dict[str, object]:
    python = sys.executable if c.adapter == "pqueue" else args.peers_python
    n = args.latency_n if scenario == "latency" else args.n
    command = [
        python, "harness.py", "--adapter", c.adapter, "--scenario", scenario, "--repeat", str(args.repeat),
        "--concurrency", "10", "--n", str(n), *extra,
    ]  # fmt: skip
    env = dict(os.environ)
    if c.adapter == "pqueue":
        env["BENCH_ADAPTER_DIRS"] = str(ROOT / "bench" / "peers")
        env["BENCH_PQUEUE_DSN"] = c.dsn or REDIS_DSN
    done = subprocess.run(command, cwd=HARNESS_DIR, env=env, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    try:
        record: dict[str, object] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        record = {"adapter": c.adapter, "scenario": scenario, "error": done.stderr[-500:]}
    record["backend"] = c.backend
    record["cmd"] = " ".join(command[1:])
    record["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return record


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--peers-python", required=True, help="Python of the virtualenv holding the peers")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--latency-n", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None, help="adapter[/backend] names to run")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        for c in CONTESTANTS:
            if args.only and c.adapter not in args.only and f"{c.adapter}/{c.backend}" not in args.only:
                continue
            for scenario, extra in SCENARIOS:
                if scenario not in c.scenarios:
                    continue
                record = run_one(c, scenario, extra, args)
                out.write(json.dumps(record) + "\n")
                out.flush()
                summary = {
                    k: record.get(k) for k in ("adapter", "backend", "scenario", "procs", "median", "error")
                }
                print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
