"""The memory backend's state and its transitions: plain synchronous code under one lock.

Each public method takes the lock once, so every transition is atomic with respect to
other threads and asyncio tasks. Waiting jobs of a queue sit in a heap ordered by
(run_at, enqueue order); entries are checked on pop and stale ones dropped, so
cancel and retry never search the heap.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pqueue.broker import (
    IdempotencyState,
    JobPage,
    JobScan,
    QueueActivity,
    RecoveryReport,
    WorkerInfo,
    in_slice,
)
from pqueue.broker_control import CANCEL_KIND
from pqueue.broker_flows import parent_failed, plan_flow, topological
from pqueue.brokers.memory.cancels import CancelInboxes
from pqueue.brokers.memory.limited import LimitGroups
from pqueue.brokers.memory.records import Record
from pqueue.brokers.memory.waiters import Waiters
from pqueue.clock import Clock
from pqueue.errors import JobNotFound
from pqueue.job import EnqueueResult, ErrorInfo, Job, JobSpec, JobStatus, Lease, append_error
from pqueue.limits import LimitState

_Entry = tuple[float, int, str]  # (run_at, order, job id)


class MemoryStore:
    """All jobs of one ``memory://<name>`` namespace, shared by every broker opened on it."""

    def __init__(self, clock: Clock, *, retention: float) -> None:
        self.clock = clock
        self.retention = retention
        self.lock = threading.Lock()
        self.waiters = Waiters()
        self.cancels = CancelInboxes()
        self._paused: set[str] = set()
        self._jobs: dict[str, Record] = {}
        self._lines: dict[str, list[_Entry]] = {}
        self._delayed: list[_Entry] = []
        self._active: dict[str, Record] = {}
        self._unique: dict[tuple[str, str], tuple[str, float]] = {}  # (queue, key) -> holder
        self._idempotency: dict[str, tuple[str, IdempotencyState, float]] = {}
        self._workers: dict[str, tuple[WorkerInfo, float]] = {}
        self._finished: deque[tuple[float, str]] = deque()
        self._counts: dict[str, Counter[JobStatus]] = {}
        self._limited = LimitGroups()
        self._order = itertools.count(1)
        self._tokens = itertools.count(1)
        self._watchers: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._settling: deque[Record] = deque()  # finished parents whose children are not told yet

    # -- bookkeeping -------------------------------------------------------------

    def _set_status(self, rec: Record, status: JobStatus) -> None:
        counts = self._counts.setdefault(rec.queue, Counter())
        counts[rec.status] -= 1
        counts[status] += 1
        if rec.limit is not None:
            self._limited.status_changed(rec, rec.status, status)
        rec.status = status

    def _line_up(self, rec: Record) -> None:
        """Put a waiting job in its queue's line (scheduled/retry ones also in the relabel heap)."""
        entry = (rec.run_at, rec.order, rec.id)
        if rec.limit is not None:
            self._limited.line_up(rec, entry)
        else:
            heapq.heappush(self._lines.setdefault(rec.queue, []), entry)
        if rec.status is not JobStatus.PENDING:
            heapq.heappush(self._delayed, entry)

    def _promote_due(self, now: float, limit: int | None = None) -> int:
        moved = 0
        delayed = self._delayed
        while delayed and delayed[0][0] <= now and (limit is None or moved < limit):
            run_at, order, job_id = heapq.heappop(delayed)
            rec = self._jobs.get(job_id)
            if (
                rec
                and rec.order == order
                and rec.run_at == run_at
                and rec.status
                in (
                    JobStatus.SCHEDULED,
                    JobStatus.RETRY,
                )
            ):
                self._set_status(rec, JobStatus.PENDING)
                moved += 1
        return moved

    def _finish(self, rec: Record, status: JobStatus, now: float) -> None:
        self._active.pop(rec.id, None)
        rec.token = None
        rec.finished_at = now
        self._set_status(rec, status)
        if status is not JobStatus.DEAD:
            self._finished.append((now, rec.id))
        if rec.children is not None or rec.id in self._watchers:
            self._after_finish(rec, now)

    # -- dependencies and result waiters (ADR 0115) --------------------------------

    def _after_finish(self, rec: Record, now: float) -> None:
        """Wake ``result()`` waiters of ``rec``; settle its children (iteratively, so a long
        chain of cancellations cannot exhaust the stack)."""
        for loop, event in self._watchers.pop(rec.id, ()):
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)
        if rec.children is None:
            return
        self._settling.append(rec)
        if len(self._settling) > 1:
            return  # an outer call is draining the queue
        while self._settling:
            parent = self._settling[0]
            for child_id in parent.children or ():
                child = self._jobs.get(child_id)
                if child is not None:
                    self._settle_edge(parent, child, now)
            self._settling.popleft()

    def _settle_edge(self, parent: Record, child: Record, now: float) -> None:
        """Tell ``child`` that ``parent`` finished; a repeat does nothing."""
        if (
            child.status is not JobStatus.WAITING
            or child.unfinished is None
            or parent.id not in child.unfinished
        ):
            return
        child.unfinished.discard(parent.id)
        if parent.status is JobStatus.COMPLETED:
            if child.parent_results is None:
                child.parent_results = {}
            child.parent_results[parent.id] = parent.result_json
        elif child.on_parent_failure == "cancel":
            child.unfinished = None
            error = parent_failed(parent.id, parent.status.value)
            child.errors = append_error(child.errors, replace(error, attempt=child.attempt, at=now))
            self._finish(child, JobStatus.CANCELLED, now)
            return
        if child.unfinished:
            return
        child.unfinished = None
        child.run_at = max(child.run_at, now)
        child.order = next(self._order)
        due = child.run_at <= now
        self._set_status(child, JobStatus.PENDING if due else JobStatus.SCHEDULED)
        self._line_up(child)
        if due:
            self.waiters.wake({child.queue})

    def enqueue_flow(self, specs: Sequence[JobSpec]) -> tuple[list[EnqueueResult], set[str]]:
        """Store a batch with dependencies, all or nothing (see ``FlowBroker.enqueue_flow``)."""
        plan = plan_flow(specs)
        now = self.clock.now()
        woken: set[str] = set()
        results: dict[str, EnqueueResult] = {}
        with self.lock:
            missing = [p for p in plan.external if p not in self._jobs]
            if missing:
                raise JobNotFound(f"depends_on names no job with id {missing[0]!r}; nothing was stored")
            created: list[Record] = []
            for spec in topological(specs):
                if spec.id in self._jobs:
                    results[spec.id] = EnqueueResult(spec.id, False)
                    continue
                rec = Record.from_spec(spec, now=now, order=next(self._order))
                if spec.depends_on:
                    rec.status = JobStatus.WAITING
                    rec.unfinished = set(spec.depends_on)
                    for parent in spec.depends_on:
                        holder = self._jobs[parent]
                        if holder.children is None:
                            holder.children = []
                        holder.children.append(rec.id)
                self._jobs[rec.id] = rec
                self._counts.setdefault(rec.queue, Counter())[rec.status] += 1
                if not spec.depends_on:
                    self._line_up(rec)
                    if rec.status is JobStatus.PENDING:
                        woken.add(rec.queue)
                created.append(rec)
                results[spec.id] = EnqueueResult(spec.id, True)
            for new in created:
                for parent_id in new.depends_on:
                    holder = self._jobs[parent_id]
                    if holder.status.is_final:
                        self._settle_edge(holder, new, now)
        return [results[spec.id] for spec in specs], woken

    def watch(self, job_id: str, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Job | None:
        """The job if it is finished; else ``event`` is set (on ``loop``) when it finishes."""
        with self.lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                raise JobNotFound(f"no job with id {job_id!r}")
            if rec.status.is_final:
                return rec.to_job()
            self._watchers.setdefault(job_id, []).append((loop, event))
            return None

    def unwatch(self, job_id: str, event: asyncio.Event) -> None:
        with self.lock:
            left = [w for w in self._watchers.get(job_id, ()) if w[1] is not event]
            if left:
                self._watchers[job_id] = left
            else:
                self._watchers.pop(job_id, None)

    def _delete(self, rec: Record) -> None:
        del self._jobs[rec.id]
        self._counts[rec.queue][rec.status] -= 1

    def _current(self, lease: Lease) -> Record | None:
        rec = self._active.get(lease.job.id)
        return rec if rec is not None and rec.token == lease.token else None

    # -- hot path ----------------------------------------------------------------

    def enqueue(self, specs: Sequence[JobSpec]) -> tuple[list[EnqueueResult], set[str]]:
        """Store specs; returns the results and the queues that gained a due job."""
        now = self.clock.now()
        results: list[EnqueueResult] = []
        woken: set[str] = set()
        with self.lock:
            for spec in specs:
                if spec.id in self._jobs:
                    results.append(EnqueueResult(spec.id, False))
                    continue
                if spec.unique_key is not None:
                    slot = (spec.queue, spec.unique_key)
                    holder = self._unique.get(slot)
                    if holder is not None and holder[1] > now:
                        results.append(EnqueueResult(holder[0], False))
                        continue
                    assert spec.unique_for is not None
                    self._unique[slot] = (spec.id, now + spec.unique_for)
                rec = Record.from_spec(spec, now=now, order=next(self._order))
                self._jobs[rec.id] = rec
                self._counts.setdefault(rec.queue, Counter())[rec.status] += 1
                self._line_up(rec)
                if rec.status is JobStatus.PENDING:
                    woken.add(rec.queue)
                results.append(EnqueueResult(rec.id, True))
        return results, woken

    def claim(self, queues: Sequence[str], worker_id: str, limit: int, lease_for: float) -> list[Lease]:
        now = self.clock.now()
        leases: list[Lease] = []
        with self.lock:
            self._promote_due(now)
            for queue in queues:
                if queue in self._paused:
                    continue
                line = self._lines.get(queue)
                while line and len(leases) < limit and line[0][0] <= now:
                    run_at, order, job_id = heapq.heappop(line)
                    rec = self._live((run_at, order, job_id))
                    if rec is None:
                        continue  # stale entry: cancelled, purged or re-lined since
                    leases.append(self._lease(rec, now, worker_id, lease_for))
                if len(leases) < limit:  # limited groups fill what is left (ADR 0110)
                    self._limited.admit(
                        queue,
                        now,
                        limit - len(leases),
                        self._live,
                        lambda rec: leases.append(self._lease(rec, now, worker_id, lease_for)),
                    )
                if len(leases) >= limit:
                    break
        return leases

    def _live(self, entry: _Entry) -> Record | None:
        """The record a line entry stands for, if it still waits there (else a stale entry)."""
        rec = self._jobs.get(entry[2])
        if rec is None or rec.order != entry[1] or rec.run_at != entry[0] or not rec.status.is_waiting:
            return None
        return rec

    def _lease(self, rec: Record, now: float, worker_id: str, lease_for: float) -> Lease:
        rec.attempt += 1
        rec.started_at = now
        rec.token = str(next(self._tokens))
        rec.lease_expires_at = now + lease_for
        rec.worker_id = worker_id
        self._set_status(rec, JobStatus.ACTIVE)
        self._active[rec.id] = rec
        return Lease(rec.to_job(), rec.token, rec.lease_expires_at)

    def ack(self, leases: Sequence[Lease], results_json: Sequence[str | None] | None) -> list[bool]:
        now = self.clock.now()
        out: list[bool] = []
        with self.lock:
            for i, lease in enumerate(leases):
                rec = self._current(lease)
                if rec is None:
                    out.append(False)
                    continue
                rec.result_json = results_json[i] if results_json else None
                self._finish(rec, JobStatus.COMPLETED, now)
                out.append(True)
        return out

    def fail(self, lease: Lease, error: ErrorInfo, retry_in: float | None) -> tuple[bool, set[str]]:
        now = self.clock.now()
        with self.lock:
            rec = self._current(lease)
            if rec is None:
                return False, set()
            rec.errors = append_error(rec.errors, replace(error, attempt=rec.attempt, at=now))
            if retry_in is None:
                self._finish(rec, JobStatus.DEAD, now)
                return True, set()
            self._active.pop(rec.id)
            rec.token = None
            rec.run_at = now + retry_in
            rec.order = next(self._order)
            self._set_status(rec, JobStatus.RETRY)
            self._line_up(rec)
            return True, {rec.queue} if retry_in <= 0 else set()

    def release(
        self, leases: Sequence[Lease], delay: float, note: ErrorInfo | None
    ) -> tuple[list[bool], set[str]]:
        now = self.clock.now()
        out: list[bool] = []
        woken: set[str] = set()
        with self.lock:
            for lease in leases:
                rec = self._current(lease)
                if rec is None:
                    out.append(False)
                    continue
                if note is not None:
                    rec.errors = append_error(rec.errors, replace(note, attempt=rec.attempt, at=now))
                self._put_back(rec, now, run_at=now + delay if delay > 0 else rec.run_at)
                woken.update([rec.queue] if rec.status is JobStatus.PENDING else [])
                out.append(True)
        return out, woken

    def _put_back(self, rec: Record, now: float, *, run_at: float) -> None:
        """Return an active job to its line unrun; the cut-short run does not count."""
        self._active.pop(rec.id)
        rec.token = None
        rec.attempt -= 1
        rec.run_at = run_at
        self._set_status(rec, JobStatus.SCHEDULED if run_at > now else JobStatus.PENDING)
        self._line_up(rec)

    def extend(self, leases: Sequence[Lease], lease_for: float) -> list[bool]:
        now = self.clock.now()
        out: list[bool] = []
        with self.lock:
            for lease in leases:
                rec = self._current(lease)
                if rec is not None:
                    rec.lease_expires_at = now + lease_for
                out.append(rec is not None)
        return out

    def recover(self, limit: int) -> tuple[RecoveryReport, set[str]]:
        now = self.clock.now()
        recovered: list[str] = []
        dead: list[str] = []
        woken: set[str] = set()
        per_queue: Counter[str] = Counter()
        with self.lock:
            expired = [r for r in self._active.values() if r.lease_expires_at <= now]
            expired.sort(key=lambda r: r.lease_expires_at)
            for rec in expired[:limit]:
                per_queue[rec.queue] += 1
                rec.recoveries += 1
                if rec.recoveries > rec.max_recoveries:
                    reason = ErrorInfo("LeaseExpired", f"lease expired {rec.recoveries} times")
                    rec.errors = append_error(rec.errors, replace(reason, attempt=rec.attempt, at=now))
                    self._finish(rec, JobStatus.DEAD, now)
                    dead.append(rec.id)
                else:
                    self._put_back(rec, now, run_at=rec.run_at)
                    recovered.append(rec.id)
                    woken.add(rec.queue)
        return RecoveryReport(tuple(recovered), tuple(dead), dict(per_queue)), woken

    def promote(self, limit: int) -> int:
        now = self.clock.now()
        with self.lock:
            return self._promote_due(now, limit)

    def has_due(self, queues: Iterable[str]) -> bool:
        now = self.clock.now()
        with self.lock:
            for queue in queues:
                line = self._lines.get(queue)
                if line and line[0][0] <= now and queue not in self._paused:
                    return True
            return self._limited.ready(queues, now, self._live)

    def next_token_at(self, queues: Iterable[str]) -> float | None:
        """When a rate-limited group of ``queues`` with a due job next gets a token."""
        now = self.clock.now()
        with self.lock:
            self._promote_due(now)
            return self._limited.next_token_at(queues, now, self._live)

    def limit_groups(self) -> list[LimitState]:
        """Every limit group: active jobs, waiting jobs, limits and tokens."""
        now = self.clock.now()
        with self.lock:
            self._promote_due(now)
            waiting = Counter(
                (r.queue, r.limit.key)
                for r in self._jobs.values()
                if r.limit is not None and r.status.is_waiting
            )
            return self._limited.states(now, lambda queue, key: waiting[(queue, key)])

    # -- idempotency keys --------------------------------------------------------

    def idempotency_begin(self, key: str, owner: str, ttl: float) -> IdempotencyState:
        now = self.clock.now()
        with self.lock:
            held = self._idempotency.get(key)
            if held is not None and held[2] <= now:
                held = None
            if held is not None and held[1] is IdempotencyState.DONE:
                return IdempotencyState.DONE
            if held is not None and held[0] != owner:
                return IdempotencyState.IN_FLIGHT
            self._idempotency[key] = (owner, IdempotencyState.IN_FLIGHT, now + ttl)
            return IdempotencyState.ACQUIRED

    def idempotency_end(self, key: str, owner: str, done: bool, ttl: float) -> None:
        now = self.clock.now()
        with self.lock:
            if done:
                self._idempotency[key] = (owner, IdempotencyState.DONE, now + ttl)
                return
            held = self._idempotency.get(key)
            if held is not None and held[0] == owner and held[1] is IdempotencyState.IN_FLIGHT:
                del self._idempotency[key]

    # -- inspection and admin ----------------------------------------------------

    def get_job(self, job_id: str) -> Job:
        with self.lock:
            self._promote_due(self.clock.now())
            rec = self._jobs.get(job_id)
            if rec is None:
                raise JobNotFound(f"no job with id {job_id!r}")
            return rec.to_job()

    def counts(self) -> dict[str, dict[JobStatus, int]]:
        with self.lock:
            self._promote_due(self.clock.now())
            return {q: {s: c[s] for s in JobStatus} for q, c in sorted(self._counts.items())}

    def list_queues(self) -> list[str]:
        with self.lock:
            return sorted(self._counts)

    def list_jobs(
        self, status: JobStatus, queue: str | None, job_type: str | None, limit: int, offset: int
    ) -> JobPage:
        with self.lock:
            self._promote_due(self.clock.now())
            matching = sorted(
                (
                    r
                    for r in self._jobs.values()
                    if r.status is status and queue in (None, r.queue) and job_type in (None, r.type)
                ),
                key=lambda r: (r.created_at, r.id),
            )
            page = matching[offset : offset + limit]
            nxt = offset + limit if offset + limit < len(matching) else None
            return JobPage(tuple(r.to_job() for r in page), nxt)

    def scan(self, scan: JobScan) -> list[Job]:
        """Every job ``scan`` matches in its slice (by a CRC-32 of the id), oldest first."""
        with self.lock:
            self._promote_due(self.clock.now())
            records = sorted(self._jobs.values(), key=lambda r: (r.created_at, r.id))
            jobs = [r.to_job() for r in records if in_slice(r.id, scan)]
        return [job for job in jobs if scan.keeps(job)]

    def cancel(self, job_id: str) -> bool:
        now = self.clock.now()
        with self.lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                raise JobNotFound(f"no job with id {job_id!r}")
            if not rec.status.is_waiting and rec.status is not JobStatus.WAITING:
                return False
            rec.unfinished = None
            self._finish(rec, JobStatus.CANCELLED, now)
            return True

    def _dead(self, queue: str | None, job_ids: Sequence[str] | None) -> list[Record]:
        if job_ids is not None:
            recs = (self._jobs.get(i) for i in job_ids)
            return [
                r for r in recs if r is not None and r.status is JobStatus.DEAD and queue in (None, r.queue)
            ]
        return [r for r in self._jobs.values() if r.status is JobStatus.DEAD and queue in (None, r.queue)]

    def requeue_dead(self, queue: str | None, job_ids: Sequence[str] | None) -> tuple[int, set[str]]:
        now = self.clock.now()
        with self.lock:
            recs = self._dead(queue, job_ids)
            for rec in sorted(recs, key=lambda r: r.order):
                rec.attempt = rec.recoveries = 0
                rec.finished_at = None
                rec.run_at = now
                rec.order = next(self._order)
                self._set_status(rec, JobStatus.PENDING)
                self._line_up(rec)
            return len(recs), {r.queue for r in recs}

    def purge_dead(self, queue: str | None, job_ids: Sequence[str] | None, older_than: float | None) -> int:
        cutoff = None if older_than is None else self.clock.now() - older_than
        with self.lock:
            recs = self._dead(queue, job_ids)
            if cutoff is not None:
                recs = [r for r in recs if (r.finished_at or 0.0) <= cutoff]
            for rec in recs:
                self._delete(rec)
            return len(recs)

    def prune(self, limit: int) -> int:
        now = self.clock.now()
        cutoff = now - self.retention
        removed = 0
        with self.lock:
            while self._finished and self._finished[0][0] <= cutoff and removed < limit:
                finished_at, job_id = self._finished.popleft()
                rec = self._jobs.get(job_id)
                if (
                    rec is not None
                    and rec.finished_at == finished_at
                    and rec.status
                    in (
                        JobStatus.COMPLETED,
                        JobStatus.CANCELLED,
                    )
                ):
                    self._delete(rec)
                    removed += 1
            self._unique = {k: v for k, v in self._unique.items() if v[1] > now}
            self._idempotency = {k: v for k, v in self._idempotency.items() if v[2] > now}
        return removed

    def register_worker(self, info: WorkerInfo, ttl: float) -> None:
        now = self.clock.now()
        with self.lock:
            self._workers[info.id] = (replace(info, last_seen=now), now + ttl)

    def unregister_worker(self, worker_id: str) -> None:
        with self.lock:
            self._workers.pop(worker_id, None)

    def list_workers(self) -> list[WorkerInfo]:
        now = self.clock.now()
        with self.lock:
            self._workers = {k: v for k, v in self._workers.items() if v[1] > now}
            return sorted((info for info, _ in self._workers.values()), key=lambda w: w.id)

    def activity(self, window: float) -> QueueActivity:
        """Oldest due waiting job's age and jobs finished within ``window``, per queue (a scan:
        the memory backend keeps no index for these, and its stores are small)."""
        now = self.clock.now()
        since = now - window
        with self.lock:
            oldest: dict[str, float] = {}
            done = dict.fromkeys(sorted(self._counts), 0)
            for rec in self._jobs.values():
                if rec.status.is_waiting and rec.run_at <= now:
                    oldest[rec.queue] = min(oldest.get(rec.queue, rec.run_at), rec.run_at)
                elif rec.status in (JobStatus.COMPLETED, JobStatus.DEAD) and (rec.finished_at or 0.0) > since:
                    done[rec.queue] += 1
        ages = {queue: now - run_at for queue, run_at in sorted(oldest.items())}
        return QueueActivity(ages, done, window)

    # -- control: paused queues, cancel of running jobs ---------------------------------

    def pause(self, queue: str) -> bool:
        with self.lock:
            if queue in self._paused:
                return False
            self._paused.add(queue)
            return True

    def resume(self, queue: str) -> bool:
        with self.lock:
            if queue not in self._paused:
                return False
            self._paused.discard(queue)
            return True

    def paused_queues(self) -> list[str]:
        with self.lock:
            return sorted(self._paused)

    def cancel_active(self, job_id: str, reason: str) -> bool:
        """Active -> cancelled now, the lease revoked and ``reason`` in the error history."""
        now = self.clock.now()
        with self.lock:
            rec = self._jobs.get(job_id)
            if rec is None:
                raise JobNotFound(f"no job with id {job_id!r}")
            if rec.status is not JobStatus.ACTIVE:
                return False
            note = ErrorInfo(CANCEL_KIND, reason, attempt=rec.attempt, at=now)
            rec.errors = append_error(rec.errors, note)
            self._finish(rec, JobStatus.CANCELLED, now)
        self.cancels.publish(job_id)
        return True
