"""The broker-restart figures: resume time after the server is back, repeats per restart.

Starts a private server per run (Redis: redis-server with AOF; Postgres: a throwaway
cluster via initdb/pg_ctl as the postgres OS user), enqueues ``--jobs`` jobs, drains them
through ``--workers`` ``pqueue worker`` processes (lease ``--lease`` s) and stops the
server ``--restarts`` times for ``--down`` seconds each: gracefully (SIGTERM /
``pg_ctl stop -m fast``) or by a crash (SIGKILL / ``pg_ctl stop -m immediate``). The
scenario is pqueue.testing.faults.restarts, the one the restart tests assert on. Reports:

  lost / exits       jobs never completed, workers that died (both must be 0)
  repeats/restart    extra runs per restart (0 after graceful ones; a crash may forget
                     claims Postgres committed asynchronously, ADR 0052)
  claim resume       server accepting again -> first job started (median and worst),
                     and -> every worker had started one
  settle resume      server accepting again -> first job completed, seen by a client
  WARNING lines      every worker's, by kind (``--restarts 0 --trickle``: a run without
                     disruption, idle workers taking jobs as they come)

    python bench/restarts.py                      # both backends, both modes
    python bench/restarts.py --backend postgres --mode crash --restarts 5
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from pqueue.chaos.servers import PrivatePostgres, PrivateRedis
from pqueue.testing.faults import restarts as restart_scenario


def _figures(values: list[float | None]) -> str:
    seen = [v for v in values if v is not None]
    if not seen:
        return "none seen"
    missing = len(values) - len(seen)
    text = f"{statistics.median(seen):.2f} s median, {max(seen):.2f} s worst"
    return text + (f" ({missing} not seen in 10 s)" if missing else "")


def _warning_kinds(logs: list[str]) -> Counter[str]:
    """WARNING lines by kind: the message with ids, numbers and ports blanked."""
    kinds: Counter[str] = Counter()
    for log in logs:
        for line in log.splitlines():
            if " WARNING " in line:
                text = line.split(" WARNING ", 1)[1].strip()
                text = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", text)
                kinds[re.sub(r"\d+(\.\d+)?", "N", text)[:120]] += 1
    return kinds


async def one(backend: str, plan: restart_scenario.Plan) -> restart_scenario.Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if backend == "redis":
            redis = PrivateRedis(workdir)
            redis.start()
            try:
                return await restart_scenario.run(plan, redis, redis.url + "?prefix=pqbench", workdir)
            finally:
                redis.kill()
        postgres = PrivatePostgres()
        try:
            postgres.start()
            postgres.migrate()
            return await restart_scenario.run(plan, postgres, postgres.url, workdir)
        finally:
            postgres.remove()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["redis", "postgres", "both"], default="both")
    parser.add_argument("--mode", choices=["graceful", "crash", "both"], default="both")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--job-seconds", type=float, default=0.15)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--down", type=float, default=1.0, help="seconds the server stays down")
    parser.add_argument("--gap", type=float, default=1.5, help="seconds of work between restarts")
    parser.add_argument(
        "--trickle", action="store_true", help="enqueue 100 jobs every 0.2 s to running workers instead"
    )
    args = parser.parse_args()
    for missing in (PrivateRedis.missing(), PrivatePostgres.missing()):
        if missing and args.backend in ("both", "redis" if "redis" in missing else "postgres"):
            parser.error(missing)
    backends = ["redis", "postgres"] if args.backend == "both" else [args.backend]
    modes = ["graceful", "crash"] if args.mode == "both" else [args.mode]
    for backend in backends:
        for mode in modes:
            plan = restart_scenario.Plan(
                mode=mode,  # type: ignore[arg-type]
                jobs=args.jobs,
                job_seconds=args.job_seconds,
                workers=args.workers,
                concurrency=args.concurrency,
                lease=args.lease,
                restarts=args.restarts,
                down=args.down,
                gap=args.gap,
                trickle=args.trickle,
                timeout=120,
            )
            out = asyncio.run(one(backend, plan))
            downs = [r.down for r in out.restarts]
            warnings = sum(log.count(" WARNING ") for log in out.logs)
            per_restart = out.repeats / max(1, len(out.restarts))
            print(
                f"{backend} {mode}: {plan.jobs} jobs, {plan.workers} workers, lease {plan.lease:g} s, "
                f"{len(out.restarts)} restarts ({statistics.mean(downs):.1f} s down) -> lost {out.lost}, "
                f"exits {len(out.exited)}, repeats {out.repeats} ({per_restart:.1f} per restart), "
                f"claim resume {_figures([r.claim for r in out.restarts])} "
                f"(every worker: {_figures([r.claim_all for r in out.restarts])}), "
                f"settle resume {_figures([r.settle for r in out.restarts])}, "
                f"{warnings} WARNING lines in {len(out.logs)} worker logs"
            )
            for kind, count in _warning_kinds(out.logs).most_common():
                print(f"    {count:4d} x {kind}")


if __name__ == "__main__":
    main()
