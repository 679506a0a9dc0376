"""The memory store's inspection and admin side: read jobs, counts and activity, handle dead
jobs, keep the worker registry, pause queues and cancel jobs (``Inspector``, ``Admin`` and
the control methods of the Broker seam).

A part of :class:`~pqueue.brokers.memory.store.MemoryStore`, as ``store.admin``: it keeps the
worker registry and acts on the store's records under the store's lock. Nothing here is on
the hot path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pqueue.broker import JobPage, JobScan, QueueActivity, WorkerInfo, in_slice
from pqueue.broker_control import CANCEL_KIND
from pqueue.brokers.memory.records import Record
from pqueue.job import ErrorInfo, Job, JobStatus, append_error
from pqueue.limits import LimitState

if TYPE_CHECKING:
    from pqueue.brokers.memory.store import MemoryStore


class Admin:
    """What operators and dashboards ask of a store, and the changes they make to it."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._workers: dict[str, tuple[WorkerInfo, float]] = {}  # id -> (info, expires at)

    # -- inspection ----------------------------------------------------------------

    def get_job(self, job_id: str) -> Job:
        store = self._store
        with store.lock:
            store.promote_due(store.clock.now())
            rec = store.record(job_id)
            return rec.to_job()

    def counts(self) -> dict[str, dict[JobStatus, int]]:
        store = self._store
        with store.lock:
            store.promote_due(store.clock.now())
            return {q: {s: c[s] for s in JobStatus} for q, c in sorted(store.tally.items())}

    def list_queues(self) -> list[str]:
        with self._store.lock:
            return sorted(self._store.tally)

    def list_jobs(
        self, status: JobStatus, queue: str | None, job_type: str | None, limit: int, offset: int
    ) -> JobPage:
        store = self._store
        with store.lock:
            store.promote_due(store.clock.now())
            matching = sorted(
                (
                    r
                    for r in store.jobs.values()
                    if r.status is status and queue in (None, r.queue) and job_type in (None, r.type)
                ),
                key=lambda r: (r.created_at, r.id),
            )
            page = matching[offset : offset + limit]
            nxt = offset + limit if offset + limit < len(matching) else None
            return JobPage(tuple(r.to_job() for r in page), nxt)

    def scan(self, scan: JobScan) -> list[Job]:
        """Every job ``scan`` matches in its slice (by a CRC-32 of the id), oldest first."""
        store = self._store
        with store.lock:
            store.promote_due(store.clock.now())
            records = sorted(store.jobs.values(), key=lambda r: (r.created_at, r.id))
            jobs = [r.to_job() for r in records if in_slice(r.id, scan)]
        return [job for job in jobs if scan.keeps(job)]

    def activity(self, window: float) -> QueueActivity:
        """Oldest due waiting job's age and jobs finished within ``window``, per queue (a scan:
        the memory backend keeps no index for these, and its stores are small)."""
        store = self._store
        now = store.clock.now()
        since = now - window
        with store.lock:
            oldest: dict[str, float] = {}
            done = dict.fromkeys(sorted(store.tally), 0)
            for rec in store.jobs.values():
                if rec.status.is_waiting and rec.run_at <= now:
                    oldest[rec.queue] = min(oldest.get(rec.queue, rec.run_at), rec.run_at)
                elif rec.status in (JobStatus.COMPLETED, JobStatus.DEAD) and (rec.finished_at or 0.0) > since:
                    done[rec.queue] += 1
        ages = {queue: now - run_at for queue, run_at in sorted(oldest.items())}
        return QueueActivity(ages, done, window)

    def limit_groups(self) -> list[LimitState]:
        """Every limit group with live jobs: active jobs, waiting jobs, limits and tokens."""
        store = self._store
        now = store.clock.now()
        with store.lock:
            store.promote_due(now)
            waiting = Counter(
                (r.queue, r.limit.key)
                for r in store.jobs.values()
                if r.limit is not None and r.status.is_waiting
            )
            return store.limited.states(now, lambda queue, key: waiting[(queue, key)])

    # -- dead jobs ---------------------------------------------------------------------

    def _dead(self, queue: str | None, job_ids: Sequence[str] | None) -> list[Record]:
        jobs = self._store.jobs
        if job_ids is not None:
            recs = (jobs.get(i) for i in job_ids)
            return [
                r for r in recs if r is not None and r.status is JobStatus.DEAD and queue in (None, r.queue)
            ]
        return [r for r in jobs.values() if r.status is JobStatus.DEAD and queue in (None, r.queue)]

    def requeue_dead(self, queue: str | None, job_ids: Sequence[str] | None) -> tuple[int, set[str]]:
        store = self._store
        now = store.clock.now()
        with store.lock:
            recs = self._dead(queue, job_ids)
            for rec in sorted(recs, key=lambda r: r.order):
                rec.attempt = rec.recoveries = 0
                rec.finished_at = None
                rec.run_at = now
                rec.order = store.next_order()
                store.set_status(rec, JobStatus.PENDING)
                store.line_up(rec)
            return len(recs), {r.queue for r in recs}

    def purge_dead(self, queue: str | None, job_ids: Sequence[str] | None, older_than: float | None) -> int:
        store = self._store
        cutoff = None if older_than is None else store.clock.now() - older_than
        with store.lock:
            recs = self._dead(queue, job_ids)
            if cutoff is not None:
                recs = [r for r in recs if (r.finished_at or 0.0) <= cutoff]
            for rec in recs:
                store.delete(rec)
            return len(recs)

    # -- the worker registry -------------------------------------------------------------

    def register_worker(self, info: WorkerInfo, ttl: float) -> None:
        store = self._store
        now = store.clock.now()
        with store.lock:
            self._workers[info.id] = (replace(info, last_seen=now), now + ttl)

    def unregister_worker(self, worker_id: str) -> None:
        with self._store.lock:
            self._workers.pop(worker_id, None)

    def list_workers(self) -> list[WorkerInfo]:
        store = self._store
        now = store.clock.now()
        with store.lock:
            self._workers = {k: v for k, v in self._workers.items() if v[1] > now}
            return sorted((info for info, _ in self._workers.values()), key=lambda w: w.id)

    # -- control: cancels and paused queues ----------------------------------------------

    def cancel(self, job_id: str) -> bool:
        """A job not yet started (waiting for its time or its parents) -> cancelled; False once
        it runs or has finished."""
        store = self._store
        now = store.clock.now()
        with store.lock:
            rec = store.record(job_id)
            if not rec.status.is_waiting and rec.status is not JobStatus.WAITING:
                return False
            rec.unfinished = None
            store.finish(rec, JobStatus.CANCELLED, now)
            return True

    def cancel_active(self, job_id: str, reason: str) -> bool:
        """Active -> cancelled now, the lease revoked and ``reason`` in the error history."""
        store = self._store
        now = store.clock.now()
        with store.lock:
            rec = store.record(job_id)
            if rec.status is not JobStatus.ACTIVE:
                return False
            note = ErrorInfo(CANCEL_KIND, reason, attempt=rec.attempt, at=now)
            rec.errors = append_error(rec.errors, note)
            store.finish(rec, JobStatus.CANCELLED, now)
        store.cancels.publish(job_id)
        return True

    def pause(self, queue: str) -> bool:
        with self._store.lock:
            if queue in self._store.paused:
                return False
            self._store.paused.add(queue)
            return True

    def resume(self, queue: str) -> bool:
        with self._store.lock:
            if queue not in self._store.paused:
                return False
            self._store.paused.discard(queue)
            return True

    def paused_queues(self) -> list[str]:
        with self._store.lock:
            return sorted(self._store.paused)
