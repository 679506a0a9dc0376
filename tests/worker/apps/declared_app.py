"""The router of the README's issue (issue 34 §4): tasks that declare their options.

``charge:card`` declares ``max_retries=1`` and always fails, appending ``run <job id>
<max_retries>`` to the file named by ``PQUEUE_TEST_RECORD`` (the value its handler saw);
``email:welcome`` declares ``queue="critical"``.
"""

from __future__ import annotations

import os

from pqueue import ConstantBackoff, Job, Router

router = Router()


@router.task("charge:card", max_retries=1, retry=ConstantBackoff(0.1))
def charge(job: Job) -> None:
    fd = os.open(os.environ["PQUEUE_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"run {job.id} {job.max_retries}\n".encode())
    finally:
        os.close(fd)
    raise RuntimeError("card declined")


@router.task("email:welcome", queue="critical")
def welcome(job: Job) -> None:
    pass
