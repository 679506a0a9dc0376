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

On a shared machine, ``--interleave`` takes turns instead: for each scenario, round after
round, every contestant runs once (``--repeat 1``), so a peer and pqueue meet the same
minutes; each record then holds the ``--repeat`` rounds and their median, as the
harness's own records do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HARNESS_DIR = Path(
    os.environ.get("BENCH_HARNESS_DIR")
    or next(
        (p for p in (ROOT.parent / "shared" / "bench-peers", ROOT.parents[1] / "shared" / "bench-peers")
         if p.is_dir()),
        ROOT.parent / "shared" / "bench-peers",
    )
)  # ../shared/bench-peers from a clone in /work, ../../shared/bench-peers from a worktree  # fmt: skip
PG_DSN = "postgresql://postgres@127.0.0.1:5432/bench_peers?schema=pqueue_bench"
REDIS_DSN = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/8")  # the peers' DB

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


def run_one(
    c: Contestant, scenario: str, extra: list[str], args: argparse.Namespace, repeat: int | None = None
) -> dict[str, object]:
    python = sys.executable if c.adapter == "pqueue" else args.peers_python
    n = args.latency_n if scenario == "latency" else args.n
    repeat = args.repeat if repeat is None else repeat
    command = [
        python, "harness.py", "--adapter", c.adapter, "--scenario", scenario, "--repeat", str(repeat),
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


def merged(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One record from single-run records of the same contestant and scenario, summarised
    as the harness summarises its runs (median, min, max; steady and tail medians)."""
    record = dict(rounds[0])
    runs = [run for r in rounds for run in r.get("runs", [])]
    record["runs"] = runs
    record["at"] = [r.get("at") for r in rounds]
    key = next((r["metric"] for r in rounds if r.get("metric")), None)
    values = [run[key] for run in runs if key and run.get(key) is not None and "error" not in run]
    for name in ("median", "min", "max", "steady_median", "p95_ms_median", "p99_ms_median"):
        record.pop(name, None)
    if values:
        record.update(median=statistics.median(values), min=min(values), max=max(values))
        for name, field in (("steady_median", "steady_jobs_per_s"), ("p95_ms_median", "p95_ms"),
                            ("p99_ms_median", "p99_ms")):  # fmt: skip
            found = [run[field] for run in runs if run.get(field) is not None]
            if found:
                record[name] = statistics.median(found)
    return record


def chosen(args: argparse.Namespace) -> list[Contestant]:
    return [
        c
        for c in CONTESTANTS
        if not args.only or c.adapter in args.only or f"{c.adapter}/{c.backend}" in args.only
    ]


def interleaved(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every scenario round by round, each contestant once per round (see the docstring)."""
    records: list[dict[str, Any]] = []
    for scenario, extra in SCENARIOS:
        takers = [c for c in chosen(args) if scenario in c.scenarios]
        rounds: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(takers))}
        for round_no in range(args.repeat):
            for i, c in enumerate(takers):
                record = run_one(c, scenario, extra, args, repeat=1)
                rounds[i].append(record)
                median = record.get("median")
                shown = f"{median:.2f}" if isinstance(median, (int, float)) else record.get("error", "-")
                print(f"  round {round_no + 1} {c.adapter}/{c.backend} {scenario} {' '.join(extra)}: {shown}",
                      flush=True)  # fmt: skip
        records += [merged(rounds[i]) for i in range(len(takers)) if rounds[i]]
    return records


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
    parser.add_argument("--scenarios", nargs="*", default=None, help="scenario names to run (default: all)")
    parser.add_argument("--interleave", action="store_true", help="take turns, one run each per round")
    args = parser.parse_args()
    if args.scenarios:
        SCENARIOS[:] = [(s, extra) for s, extra in SCENARIOS if s in args.scenarios]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.interleave:
        with args.out.open("a") as out:
            for record in interleaved(args):
                out.write(json.dumps(record) + "\n")
        return
    with args.out.open("a") as out:
        for c in chosen(args):
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
