"""Run by tests/worker/test_cancel.py: a worker process whose running jobs another process cancels.

Usage: ``python -m tests.worker.apps.cancel_app DSN``. Serves "cancel:async" (sleeps until
cancelled) and "cancel:sync" (polls ``job.cancelled()``), printing ``started <id>`` and
``stopped <id> <how>`` lines, until SIGTERM.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time

from pqueue import Job, Router, Worker

router = Router()
_print_lock = threading.Lock()


def say(*words: str) -> None:
    with _print_lock:
        print(*words, flush=True)


@router.task("cancel:async")
async def sleeper(job: Job) -> str:
    say("started", job.id)
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        say("stopped", job.id, "cancelled-error")
        raise
    return "slept"


@router.task("cancel:sync")
def poller(job: Job) -> str:
    say("started", job.id)
    deadline = time.monotonic() + 60
    while not job.cancelled() and time.monotonic() < deadline:
        time.sleep(0.01)
    say("stopped", job.id, "cancelled-flag" if job.cancelled() else "deadline")
    return "polled"


def main(dsn: str) -> int:
    worker = Worker(dsn, router, queues=["default"], concurrency=2, shutdown_timeout=5, lease=30)
    return worker.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
