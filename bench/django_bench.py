"""pqueue.django against django-tasks-db (the ORM backend), same sitting, same Postgres.

For each backend, in a process of its own configured for it (``bench/django_app``):

1. **enqueue from a view**: N POSTs through Django's test client to a view that enqueues
   a no-op task in the request's transaction (ATOMIC_REQUESTS; pqueue joins it on
   Django's own connection). Requests per second, view and middleware included.
2. **drain with one worker process**: a worker started on the N jobs; rate = N over the
   span from the first start to the last finish, as stored with the jobs (so the
   worker's start-up is not counted).
3. **pick-up**: with the worker idle, M enqueues ``--gap`` apart (100 ms: slower than
   either worker drains, so it measures pick-up, not a backlog); the delay from each
   job's enqueue to its start, as stored (p50, p95).

Each variant runs once per round in its own process, the order rotated each round, and
the table gives the medians: enqueue is bound by the commit's WAL flush, which drifts
with the machine's load, so only interleaved runs compare.

Workers: ``manage.py pqueue_worker`` (default flags: concurrency 10) and
``manage.py db_worker`` (default ``--interval 1``, and ``--interval 0.1``).

    python bench/django_bench.py [--jobs 1000] [--pickups 100] [--rounds 3]

Needs the ``bench`` extra (django-tasks-db) and the django extra (the backport, Python
3.11) and the ``pqueue_bench`` database.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "django_app"
VARIANTS = {
    "pqueue": ("pqueue", ["pqueue_worker", "--log-level", "WARNING"]),
    "django-tasks-db": ("db", ["db_worker", "--no-startup-delay", "--verbosity", "0"]),
    "django-tasks-db --interval 0.1": (
        "db",
        ["db_worker", "--no-startup-delay", "--verbosity", "0", "--interval", "0.1"],
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--pickups", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between pick-up enqueues")
    parser.add_argument("--rounds", type=int, default=3, help="each variant once per round, order rotated")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.jobs, args.pickups, args.gap)))
        return
    names = list(VARIANTS)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            command = [sys.executable, __file__, "--variant", name, "--jobs", str(args.jobs)]
            command += ["--pickups", str(args.pickups), "--gap", str(args.gap)]
            out = subprocess.run(
                command, env=_env(VARIANTS[name][0]), check=True, capture_output=True, text=True
            ).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
            print(json.dumps({"round": round_, "variant": name, **runs[name][-1]}), flush=True)
    gap_ms = args.gap * 1000
    print(f"\nmedians of {args.rounds} rounds, N = {args.jobs}, {args.pickups} pick-ups, {gap_ms:.0f} ms gap")
    print("| backend | enqueue from a view (req/s) | drain, 1 worker (jobs/s) | pick-up p50 / p95 (ms) |")
    print("|---|---|---|---|")
    for name in names:

        def med(key: str, name: str = name) -> float:
            return statistics.median(run[key] for run in runs[name])

        print(
            f"| {name} | {med('enqueue'):,.0f} | {med('drain'):,.0f} | "
            f"{med('pickup_p50') * 1000:.1f} / {med('pickup_p95') * 1000:.1f} |"
        )


def _env(backend: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {
        **os.environ,
        "BENCH_BACKEND": backend,
        "DJANGO_SETTINGS_MODULE": "benchsite.settings",
        "PYTHONPATH": path,
    }


def run_variant(name: str, jobs: int, pickups: int, gap: float) -> dict[str, Any]:
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.test import Client

    backend, worker_args = VARIANTS[name]
    store = _Store(backend)
    store.reset()
    http = Client()
    started = time.perf_counter()
    for n in range(jobs):
        http.post(f"/enqueue?n={n}")
    enqueue = jobs / (time.perf_counter() - started)
    worker = _start(worker_args)
    try:
        store.wait_done(jobs)
        drain = jobs / store.span()
        store.reset()
        for n in range(pickups):
            http.post(f"/enqueue?n={n}")
            time.sleep(gap)
        store.wait_done(pickups)
        delays = sorted(store.pickups())
    finally:
        _stop(worker)
    return {
        "enqueue": enqueue,
        "drain": drain,
        "pickup_p50": statistics.median(delays),
        "pickup_p95": delays[int(len(delays) * 0.95) - 1],
    }


def _start(worker_args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "django", *worker_args], cwd=ROOT, env=os.environ)


def _stop(worker: subprocess.Popen[bytes]) -> None:
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        worker.kill()


class _Store:
    """Each backend's table of jobs: emptied, counted and read the same way for both."""

    def __init__(self, backend: str) -> None:
        self.pqueue = backend == "pqueue"
        self.table = "django_bench.jobs" if self.pqueue else "django_tasks_database_dbtaskresult"
        self.enqueued = "created_at" if self.pqueue else "enqueued_at"
        self.done = "status = 'completed'" if self.pqueue else "status = 'SUCCESSFUL'"

    def _sql(self, query: str) -> list[tuple[Any, ...]]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(query)
            return list(cursor.fetchall()) if cursor.description else []

    def reset(self) -> None:
        if self.pqueue:
            from django.conf import settings

            from pqueue.brokers.postgres import migrate

            self._sql("DROP SCHEMA IF EXISTS django_bench CASCADE")
            migrate(settings.TASKS["default"]["OPTIONS"]["DSN"])
        else:
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            self._sql(f"TRUNCATE {self.table}")

    def wait_done(self, count: int, timeout: float = 600.0) -> None:
        deadline = time.monotonic() + timeout
        while self._sql(f"SELECT count(*) FROM {self.table} WHERE {self.done}")[0][0] < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} jobs not done after {timeout} s")
            time.sleep(0.05)

    def span(self) -> float:
        first, last = self._sql(f"SELECT min(started_at), max(finished_at) FROM {self.table}")[0]
        return float((last - first).total_seconds())

    def pickups(self) -> list[float]:
        rows = self._sql(f"SELECT extract(epoch FROM started_at - {self.enqueued}) FROM {self.table}")
        return [float(row[0]) for row in rows]


if __name__ == "__main__":
    main()
