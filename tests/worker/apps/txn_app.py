"""A router for the transactional-completion crash test (tests/worker/test_transaction_crash.py).

``txn:effect`` inserts one row keyed by its job into the table named by
``PQUEUE_TEST_EFFECTS``, records ``inserted <job id> <pid>`` to ``PQUEUE_TEST_RECORD``,
waits ``payload["hold"]`` seconds with the insert uncommitted (the window a SIGKILL should
hit), then completes the job in the same transaction. With ``payload["hang"]`` its first
run (no recovery yet) waits there for ever: the test kills that process in the window.
"""

from __future__ import annotations

import asyncio
import os

from psycopg import sql

from pqueue import Job, Router
from tests.worker.apps.crash_app import record

router = Router()


@router.task("txn:effect")
async def effect(job: Job) -> None:
    schema, table = os.environ["PQUEUE_TEST_EFFECTS"].split(".")
    insert = sql.SQL("INSERT INTO {} (job_id, pid) VALUES (%s, %s)").format(sql.Identifier(schema, table))
    async with job.transaction() as conn:
        await conn.execute(insert, [job.id, os.getpid()])
        record("inserted", job)
        if job.payload.get("hang") and job.recoveries == 0:
            await asyncio.Event().wait()  # until the test's SIGKILL
        await asyncio.sleep(float(job.payload["hold"]))
