"""One chaos worker process: ``python -m pqueue.chaos.worker`` (started by ``pqueue chaos``).

It is pqueue's own :class:`~pqueue.worker.Worker`, run as ``pqueue worker`` runs it
(``Worker.run``: signal handling, drain, exit code), on the chaos router, with the
:class:`~pqueue.chaos.app.Recorder` middleware added and a short lease so that faults
resolve within seconds. The DSN comes from ``PQUEUE_DSN`` (never the command line,
which every user of the host can read).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from pqueue.chaos.app import SETUP_QUEUE, WORKER_QUEUES, Recorder, history, router

LEASE = 2.0
"""Seconds of a chaos worker's lease: a stopped or cut-off worker's jobs are taken back
within a few seconds (the heartbeat extends it every ``LEASE / 3``)."""


def worker_settings(concurrency: int, lease: float) -> dict[str, Any]:
    """The Worker keywords of a chaos worker, in a process or in the driver's (memory)."""
    return {
        "concurrency": concurrency,
        "queues": f"{SETUP_QUEUE}:1,{WORKER_QUEUES}",
        "lease": lease,
        "shutdown_timeout": 3.0,
        "middleware": [Recorder()],
        "log_jobs": False,
        "poll_interval": 0.5,
        "promote_interval": 0.2,
        "recover_interval": lease / 4,
        "wait_for_broker": 60.0,  # a replacement started during a server restart waits for it
    }


def main(argv: Sequence[str] | None = None) -> int:
    from pqueue.logs import configure_logging
    from pqueue.worker import Worker

    parser = argparse.ArgumentParser(prog="python -m pqueue.chaos.worker")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--lease", type=float, default=LEASE)
    args = parser.parse_args(argv)
    configure_logging(os.environ.get("PQUEUE_LOG_LEVEL", "WARNING"))
    history().write("worker_up")
    worker = Worker(os.environ["PQUEUE_DSN"], router, **worker_settings(args.concurrency, args.lease))
    code = worker.run()
    history().write("worker_down", code=code)
    return code


if __name__ == "__main__":
    sys.exit(main())
