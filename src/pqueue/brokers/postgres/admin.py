"""Inspection and admin (the :class:`~pqueue.broker.Inspector` half) for Postgres."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict

from pqueue.broker import (
    DONE_WINDOW,
    JobPage,
    JobScan,
    QueueActivity,
    QueueCounts,
    WorkerInfo,
    admin_filter,
    page_request,
)
from pqueue.brokers.job_columns import JOB_COLUMNS
from pqueue.brokers.postgres.codec import row_to_job, row_to_worker
from pqueue.brokers.postgres.core import BrokerCore, Rows, Statement
from pqueue.brokers.postgres.sql import latest_version
from pqueue.errors import CorruptJob, JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import Job, JobStatus, unreadable_job
from pqueue.limits import LimitState
from pqueue.steps import Steps


def _listed(row: Sequence[object], status: JobStatus) -> Job:
    """A listed row as a Job, or a stand-in naming the problem if the row is malformed."""
    try:
        return row_to_job(row)
    except CorruptJob as exc:
        queue = row[2] if len(row) > 2 and isinstance(row[2], str) else "?"
        return unreadable_job(str(row[0]) if row else "?", queue, status, exc)


FOLD_AT = 10_000
"""Unfolded counter deltas (migration 0008) past which ``counts`` folds them: a worker's
prune folds every minute, so this bounds their reading where no worker prunes."""

_STATUS = JOB_COLUMNS.index("status")
_STATUSES = {status.value: status for status in JobStatus}


def _id_filter(job_ids: Sequence[str] | None) -> list[str] | None:
    """Job ids as a uuid[] parameter; ids that are not UUIDs cannot exist and are dropped."""
    return None if job_ids is None else [i for i in job_ids if is_job_id(i)]


class PostgresAdmin(BrokerCore):
    """Reads and admin actions; they run rarely, so their plans are never cached."""

    async def get_job(self, job_id: str) -> Job:
        return await self.steps(self.get_job_steps(job_id))

    def get_job_steps(self, job_id: str) -> Steps[Statement, Rows, Job]:
        """``get_job`` as steps (pqueue.steps): the asyncio broker and the sync client drive it."""
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r}")
        rows = yield (self._q["get_job"], {"id": job_id}, False)
        if not rows:
            raise JobNotFound(f"no job with id {job_id!r}")
        return row_to_job(rows[0])

    async def counts(self) -> QueueCounts:
        """Jobs per queue and status without reading the history (ADR 0139): live ones through
        their indexes, finished ones from counters; folds the counters' deltas when many wait."""
        counts: dict[str, dict[JobStatus, int]] = {}
        rows = await self.db.rows(self._q["counts"], {}, prepare=False)
        for queue, status, n, _ in rows:
            per = counts.setdefault(queue, dict.fromkeys(JobStatus, 0))
            if status is not None:
                per[JobStatus(status)] = int(n)
        if rows and rows[0][3] >= FOLD_AT:  # the deltas read (the same on every row)
            await self.fold_counts()
        return dict(sorted(counts.items()))

    async def fold_counts(self) -> int:
        """Fold the finished-job counters' deltas into their totals (migration 0008); returns
        how many were folded (0 when another fold holds the lock)."""
        lock = {"lock": f"pqueue.fold:{self.schema}"}
        return int(await self.db.value(self._q["fold_counts"], lock, prepare=False))

    async def list_queues(self) -> list[str]:
        return await self.steps(self.list_queues_steps())

    def list_queues_steps(self) -> Steps[Statement, Rows, list[str]]:
        """Every queue that has held a job, as steps."""
        return [name for (name,) in (yield (self._q["list_queues"], {}, False))]

    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        return await self.steps(
            self.list_jobs_steps(status, queue=queue, type=type, limit=limit, offset=offset)
        )

    def list_jobs_steps(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Steps[Statement, Rows, JobPage]:
        """``list_jobs`` as steps (pqueue.steps): the asyncio broker and the sync client drive it."""
        status = page_request(status, limit, offset, queue=queue, type=type)
        params = {"status": status.value, "queue": queue, "type": type, "limit": limit, "offset": offset}
        # Final statuses hold the history: listed in finish order, through its index (ADR 0156).
        query = self._q["list_finished_jobs"] if status.is_final else self._q["list_jobs"]
        rows = yield (query, params, False)
        jobs = tuple(_listed(row, status) for row in rows[:limit])
        return JobPage(jobs, offset + limit if len(rows) > limit else None)

    async def cancel(self, job_id: str) -> bool:
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r}")
        rows = await self.db.rows(self._q["cancel"], self._params(id=job_id), prepare=False)
        if not rows:
            raise JobNotFound(f"no job with id {job_id!r}")
        return bool(rows[0][1])

    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        admin_filter(queue)
        params = self._params(queue=queue, ids=_id_filter(job_ids))
        return int(await self.db.value(self._q["requeue_dead"], params, prepare=False))

    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | None = None,
    ) -> int:
        admin_filter(queue, older_than=older_than)
        params = self._params(queue=queue, ids=_id_filter(job_ids), older_than=older_than)
        return int(await self.db.value(self._q["purge_dead"], params, prepare=False))

    async def prune(self, *, limit: int = 1000) -> int:
        params = self._params(limit=limit, retention=self.config.retention)
        removed = int(await self.db.value(self._q["prune"], params))
        await self.fold_counts()
        return removed

    async def register_worker(self, info: WorkerInfo, *, ttl: float) -> None:
        fields = asdict(info)
        fields.update(queues=list(info.queues), meta=json.dumps(dict(info.meta)), ttl=ttl)
        del fields["last_seen"]
        await self.db.rows(self._q["register_worker"], self._params(**fields))

    async def unregister_worker(self, worker_id: str) -> None:
        await self.db.rows(self._q["unregister_worker"], {"id": worker_id})

    async def list_workers(self) -> list[WorkerInfo]:
        rows = await self.db.fetch(self._q["list_workers"], self._params(), prepare=False)
        return [info for info in map(row_to_worker, rows) if info is not None]

    async def check_health(self) -> str:
        await self._check_schema(self.db)
        return f"postgres schema {self.schema!r} at version {latest_version()}"

    async def activity(self, *, window: float = DONE_WINDOW) -> QueueActivity:
        rows = await self.db.rows(self._q["activity"], self._params(window=window), prepare=False)
        ages = {queue: max(0.0, float(age)) for queue, age, _ in rows if age is not None}
        return QueueActivity(ages, {queue: int(done) for queue, _, done in rows}, window)

    async def limit_groups(self) -> list[LimitState]:
        rows = await self.db.rows(self._q["limit_groups"], self._params(), prepare=False)
        return [
            LimitState(queue, key, int(active), int(waiting), concurrency, rate, tokens)
            for queue, key, active, waiting, concurrency, rate, tokens in rows
        ]

    async def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        params = {
            "statuses": [status.value for status in scan.statuses],
            "queue": scan.queue,
            "since": scan.since,
            "parts": scan.parts,
            "part": scan.part,
        }
        async for rows in self.db.stream(self._q["scan_jobs"], params, size=scan.page_size):
            yield [_listed(row, _STATUSES.get(row[_STATUS], JobStatus.DEAD)) for row in rows]
