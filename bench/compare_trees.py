"""What a change costs jobs that do not use it: two source trees, the same benches, interleaved.

Runs ``bench/worker.py`` (drain: jobs/s and the workers' CPU per job) and
``bench/broker.py`` (enqueue_one, enqueue_many, claim_ack) from each tree in turn, one run
per tree per round, so both meet the same minutes of a shared machine, and prints the
medians per tree and the ratio HEAD / BASE. Each tree runs its own code (PYTHONPATH is its
``src``) against its own namespace on the same servers.

    git worktree add --detach /tmp/base <commit>
    python bench/compare_trees.py --base /tmp/base --rounds 3 \\
        --redis 'redis://127.0.0.1:6379/3' --postgres 'postgresql://postgres@127.0.0.1/test'

The issue-16 figures in docs/benchmarks.md ("Flow control: what jobs that use none of it
pay") come from this script, and so do issue 26's ("Per-job priority"): with ``--base .
--head-args '--priorities spread'`` it compares prioritized jobs with plain ones.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
DRAIN = re.compile(r"drain ([\d,]+) jobs/s.*worker CPU (\d+) us/job")
BROKER_SCENARIOS = ("enqueue_one", "enqueue_many", "claim_ack")


def _namespaced(dsn: str, name: str) -> str:
    key = "schema" if dsn.startswith("postgres") else "prefix"
    return f"{dsn}{'&' if '?' in dsn else '?'}{key}={name}"


def _run(tree: Path, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    done = subprocess.run(
        [sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, check=True, timeout=900
    )
    return done.stdout


def _drain(tree: Path, dsn: str, n: int, processes: int, extra: list[str]) -> dict[str, float]:
    out = _run(tree, ["bench/worker.py", "--dsn", dsn, "--n", str(n), "--repeat", "1",
                      "--processes", str(processes), *extra])  # fmt: skip
    found = DRAIN.search(out)
    if found is None:
        raise RuntimeError(f"bench/worker.py printed no figures: {out!r}")
    return {"drain jobs/s": float(found[1].replace(",", "")), "worker CPU us/job": float(found[2])}


def _broker(tree: Path, dsn: str, n: int, extra: list[str]) -> dict[str, float]:
    out = _run(tree, ["bench/broker.py", "--dsn", dsn, "--n", str(n), "--repeat", "1", "--json",
                      *extra, *BROKER_SCENARIOS])  # fmt: skip
    figures = {}
    for line in out.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            figures[f"{row['scenario']} {row['unit']}"] = float(row["median"])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--head", type=Path, default=HERE, help="the tree after it (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=1, help="worker processes in the drain")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument(
        "--head-args",
        default="",
        help="extra arguments for the head tree's benches, e.g. '--priorities spread' with "
        "--base . (the same tree: what an option costs its users)",
    )
    args = parser.parse_args()
    extra = {"base": [], "head": args.head_args.split()}
    trees = {"base": args.base.resolve(), "head": args.head.resolve()}
    results: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for round_no in range(1, args.rounds + 1):
        for label, tree in trees.items():
            for backend, server in (("redis", args.redis), ("postgres", args.postgres)):
                dsn = _namespaced(server, f"pqcmp{label}{uuid.uuid4().hex[:6]}")
                if backend == "postgres":
                    _run(tree, ["-m", "pqueue", "migrate", "--dsn", dsn])
                figures = {
                    **_drain(tree, dsn, args.n, args.processes, extra[label]),
                    **_broker(tree, dsn, args.n, extra[label]),
                }
                for name, value in figures.items():
                    results[(backend, name, label)].append(value)
                _cleanup(tree, dsn)
        print(f"round {round_no} done", file=sys.stderr)
    print(f"| backend | figure | base (median of {args.rounds}) | head | head / base |")
    print("|---|---|---|---|---|")
    for backend, name in dict.fromkeys((b, n) for b, n, _ in results):
        base = statistics.median(results[(backend, name, "base")])
        head = statistics.median(results[(backend, name, "head")])
        print(f"| {backend} | {name} | {base:,.1f} | {head:,.1f} | {head / base:.3f} |")


def _cleanup(tree: Path, dsn: str) -> None:
    """Remove the run's namespace (its key prefix or schema) from the shared server."""
    script = (
        "import sys, urllib.parse as u\n"
        "dsn = sys.argv[1]; q = dict(u.parse_qsl(u.urlsplit(dsn).query))\n"
        "if dsn.startswith('postgres'):\n"
        "    import psycopg\n"
        "    from psycopg import sql\n"
        "    with psycopg.connect(dsn.split('?')[0], autocommit=True) as c:\n"
        "        c.execute(sql.SQL('DROP SCHEMA IF EXISTS {} CASCADE').format(sql.Identifier(q['schema'])))\n"
        "else:\n"
        "    import redis\n"
        "    r = redis.Redis.from_url(dsn.split('?')[0])\n"
        "    for key in r.scan_iter(match=q['prefix'] + ':*', count=1000):\n"
        "        r.delete(key)\n"
    )
    _run(tree, ["-c", script, dsn])


if __name__ == "__main__":
    main()
