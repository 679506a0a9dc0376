"""The columns a job row is read from, shared by the SQL backends (Postgres and SQLite):
both tables name them alike and both codecs read a row in this order."""

from __future__ import annotations

JOB_COLUMNS = (
    "id",
    "type",
    "queue",
    "payload",
    "status",
    "attempt",
    "max_retries",
    "recoveries",
    "max_recoveries",
    "run_at",
    "created_at",
    "timeout",
    "unique_key",
    "idempotency_key",
    "started_at",
    "finished_at",
    "errors",
    "result",
    "meta",
    "depends_on",
    "parent_results",
)
"""The columns a :class:`~pqueue.job.Job` is read from, in the order the codecs expect them
(the backends' queries append ``limit_key`` and ``priority``)."""
