"""Run by tests/worker/test_periodic_race.py: a router with one every-minute schedule.

``pqueue worker tests.worker.apps.periodic_app:router --queues periodic`` in several
processes at once must enqueue each minute's tick exactly once.
"""

from __future__ import annotations

from pqueue import Job, Router

router = Router()


@router.periodic("* * * * *", name="race:minutely")
@router.task("race:tick", queue="periodic")
def tick(job: Job) -> str:
    return job.meta["pqueue.tick"]
