"""A pqueue job as Django's ``TaskResult``: status, times, errors, attempts, return value.

| pqueue status | Django status |
|---|---|
| pending, scheduled, retry, waiting | READY (ready to run, or to run again) |
| active | RUNNING |
| completed | SUCCESSFUL |
| dead, cancelled | FAILED |

pqueue does not record which worker ran each attempt, so ``worker_ids`` holds one
``"pqueue"`` per attempt: ``attempts``, which Django defines as its length, is right
(ADR 0146).
"""

from __future__ import annotations

import builtins
import re
from typing import Any

import pqueue
from pqueue.django import _compat
from pqueue.job import ErrorInfo, Job, JobStatus

PAYLOAD_KEYS = frozenset({"args", "kwargs"})
"""A Django task's job payload is ``{"args": [...], "kwargs": {...}}``."""

_STATUS = {
    JobStatus.PENDING: "READY",
    JobStatus.SCHEDULED: "READY",
    JobStatus.RETRY: "READY",
    JobStatus.WAITING: "READY",
    JobStatus.ACTIVE: "RUNNING",
    JobStatus.COMPLETED: "SUCCESSFUL",
    JobStatus.DEAD: "FAILED",
    JobStatus.CANCELLED: "FAILED",
}
UNKNOWN_WORKER = "pqueue"


def payload_of(args: Any, kwargs: Any) -> dict[str, Any]:
    """The job payload of a call; Django's own JSON check raises ``TypeError``/``ValueError``."""
    return {"args": _compat.normalize_json(list(args)), "kwargs": _compat.normalize_json(dict(kwargs))}


def status_of(job: Job) -> Any:
    return _compat.TaskResultStatus[_STATUS[job.status]]


def exception_class_path(error: ErrorInfo) -> str:
    """``module.Class`` of a stored error: pqueue keeps the class's qualified name, and the
    traceback's last line for it carries the module. Builtins are named there without one,
    and pqueue's own errors (a timeout, an unknown type) are stored without a traceback
    line: both are found by name."""
    line = re.compile(rf"^((?:[\w]+\.)*){re.escape(error.kind)}(?::|$)")
    for text in reversed(error.traceback.splitlines()):
        found = line.match(text)
        if found and found.group(1):
            return found.group(1) + error.kind
    for module in (builtins, pqueue):  # pqueue's own errors (JobTimeout, UnknownJobType)
        found_class = getattr(module, error.kind, None)
        if isinstance(found_class, type) and issubclass(found_class, BaseException):
            return f"{module.__name__}.{error.kind}"
    return error.kind


def errors_of(job: Job) -> list[Any]:
    return [
        _compat.TaskError(
            exception_class_path=exception_class_path(error),
            traceback=error.traceback or f"{error}\n",
        )
        for error in job.errors
    ]


def task_result(job: Job, task: Any, backend: str) -> Any:
    """Django's ``TaskResult`` of ``job``, a job of ``task`` (its queue as stored)."""
    payload = job.payload if isinstance(job.payload, dict) else {}
    result = _compat.TaskResult(
        task=task.using(queue_name=job.queue) if job.queue != task.queue_name else task,
        id=job.id,
        status=status_of(job),
        enqueued_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at if job.status.is_final else None,
        last_attempted_at=job.started_at,
        args=list(payload.get("args", [])),
        kwargs=dict(payload.get("kwargs", {})),
        backend=backend,
        errors=errors_of(job),
        worker_ids=[UNKNOWN_WORKER] * job.attempt,
    )
    if job.status is JobStatus.COMPLETED:
        object.__setattr__(result, "_return_value", job.result)
    return result
