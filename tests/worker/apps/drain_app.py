"""Run by tests/worker/test_drain.py: a worker process that is sent SIGTERM mid-work.

Usage: ``python -m tests.worker.apps.drain_app DSN``. Enqueues two "quick" jobs (they
finish as soon as the drain begins), one "long" job (never finishes in time) and three
more than the worker's concurrency takes, runs ``Worker.run()`` until SIGTERM, then
prints each group's (status, attempt) as JSON and exits with run()'s code.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from pqueue import Client, Job, Router, Worker

router = Router()
worker: Worker | None = None
_print_lock = threading.Lock()


def started(job: Job) -> None:
    with _print_lock:
        print("started", job.id, flush=True)


@router.task("drain:quick")
def quick(job: Job) -> str:
    started(job)
    while worker is not None and worker.is_running:  # busy until the drain begins
        time.sleep(0.01)
    return "done"


@router.task("drain:long")
def long(job: Job) -> str:
    started(job)
    time.sleep(60)
    return "done"


def main(dsn: str) -> int:
    global worker  # noqa: PLW0603 - the handlers watch it
    with Client(dsn) as client:
        groups = {
            "quick": [client.enqueue("drain:quick", max_retries=0).id for _ in range(2)],
            "long": [client.enqueue("drain:long", max_retries=0).id],
        }
        groups["queued"] = [client.enqueue("drain:quick").id for _ in range(3)]
        worker = Worker(dsn, router, queues=["default"], concurrency=3, shutdown_timeout=2, lease=10)
        code = worker.run()
        states = {
            name: [[str(job.status), job.attempt] for job in map(client.get_job, ids)]
            for name, ids in groups.items()
        }
    print(json.dumps(states), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
