"""The SQLite router of the transactional-completion crash test (tests/worker/test_transaction_crash.py).

As :mod:`tests.worker.apps.txn_app`, on SQLite: ``txn:effect`` inserts one row keyed by its
job into the table ``effects`` of the queue's own file (``PQUEUE_TEST_EFFECTS`` names the
table) on the connection ``job.transaction()`` yields, records ``inserted <job id> <pid>``,
waits ``payload["hold"]`` seconds with the insert uncommitted (holding the file's writer
lock: the window a SIGKILL should hit), then completes the job in the same transaction.
With ``payload["hang"]`` its first run waits there for ever, until the test's SIGKILL.
"""

from __future__ import annotations

import asyncio
import os

from pqueue import Job, Router
from tests.worker.apps.crash_app import record

router = Router()


@router.task("txn:effect")
async def effect(job: Job) -> None:
    table = os.environ["PQUEUE_TEST_EFFECTS"]
    async with job.transaction() as conn:
        conn.execute(f'INSERT INTO "{table}" (job_id, pid) VALUES (?, ?)', [job.id, os.getpid()])
        record("inserted", job)
        if job.payload.get("hang") and job.recoveries == 0:
            await asyncio.Event().wait()  # until the test's SIGKILL
        await asyncio.sleep(float(job.payload["hold"]))
