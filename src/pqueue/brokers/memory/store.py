"""The memory backend's state and its transitions: plain synchronous code under one lock.

Each public method takes the lock once, so every transition is atomic with respect to
other threads and asyncio tasks. Due jobs of a queue sit in a heap ordered by
(priority descending, run_at, enqueue order); scheduled and retry jobs wait in one heap by
run_at until they are due and join their line (ADR 0145). Entries are checked on pop and
stale ones dropped, so cancel and retry never search a heap.

The store holds the records and the hot path (enqueue, claim, settle, recover). Its parts
act on the same records under the same lock, each with the state only it needs:
``store.flows`` (dependencies and result waiters, :mod:`.flows`), ``store.admin``
(inspection, dead jobs, workers, pause and cancel, :mod:`.admin`) and the limit groups
(:mod:`.limited`). The bookkeeping methods without a leading underscore are theirs to call,
with the lock held.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pqueue.broker import IdempotencyState, RecoveryReport
from pqueue.brokers.memory.admin import Admin
from pqueue.brokers.memory.cancels import CancelInboxes
from pqueue.brokers.memory.flows import Flows
from pqueue.brokers.memory.limited import LimitGroups
from pqueue.brokers.memory.records import Record
from pqueue.brokers.memory.waiters import Waiters
from pqueue.clock import Clock
from pqueue.errors import JobNotFound
from pqueue.job import EnqueueResult, ErrorInfo, JobSpec, JobStatus, Lease, append_error

_Entry = tuple[int, float, int, str]  # (-priority, run_at, order, job id): a line's order
_Delayed = tuple[float, int, str]  # (run_at, order, job id): when a waiting job is due


class MemoryStore:
    """All jobs of one ``memory://<name>`` namespace, shared by every broker opened on it."""

    def __init__(self, clock: Clock, *, retention: float) -> None:
        self.clock = clock
        self.retention = retention
        self.lock = threading.Lock()
        self.waiters = Waiters()
        self.cancels = CancelInboxes()
        self.jobs: dict[str, Record] = {}
        self.tally: dict[str, Counter[JobStatus]] = {}  # queue -> status -> jobs
        self.paused: set[str] = set()
        self.limited = LimitGroups()
        self._lines: dict[str, list[_Entry]] = {}
        self._delayed: list[_Delayed] = []
        self._active: dict[str, Record] = {}
        self._unique: dict[tuple[str, str], tuple[str, float]] = {}  # (queue, key) -> holder
        self._idempotency: dict[str, tuple[str, IdempotencyState, float]] = {}
        self._finished: deque[tuple[float, str]] = deque()
        self._order = itertools.count(1)
        self._tokens = itertools.count(1)
        self.flows = Flows(self)
        self.admin = Admin(self)

    # -- bookkeeping (the lock held) ----------------------------------------------------

    def add(self, rec: Record) -> None:
        """Keep a new record and count it under its status."""
        self.jobs[rec.id] = rec
        self.tally.setdefault(rec.queue, Counter())[rec.status] += 1

    def delete(self, rec: Record) -> None:
        del self.jobs[rec.id]
        self.tally[rec.queue][rec.status] -= 1

    def next_order(self) -> int:
        """A fresh enqueue order, for a job (re)entering its line."""
        return next(self._order)

    def set_status(self, rec: Record, status: JobStatus) -> None:
        counts = self.tally.setdefault(rec.queue, Counter())
        counts[rec.status] -= 1
        counts[status] += 1
        if rec.limit is not None:
            self.limited.status_changed(rec, rec.status, status)
        rec.status = status

    def line_up(self, rec: Record) -> None:
        """Put a waiting job in its queue's line if it is due (pending), else in the heap of
        scheduled/retry jobs, from which :meth:`promote_due` lines it up once it is."""
        if rec.status is not JobStatus.PENDING:
            heapq.heappush(self._delayed, (rec.run_at, rec.order, rec.id))
            if rec.limit is not None:
                self.limited.note(rec)
            return
        entry = (-rec.priority, rec.run_at, rec.order, rec.id)
        if rec.limit is not None:
            self.limited.line_up(rec, entry)
        else:
            heapq.heappush(self._lines.setdefault(rec.queue, []), entry)

    def promote_due(self, now: float, limit: int | None = None) -> int:
        """Scheduled and retry jobs whose time has come -> pending; returns how many moved."""
        moved = 0
        delayed = self._delayed
        while delayed and delayed[0][0] <= now and (limit is None or moved < limit):
            run_at, order, job_id = heapq.heappop(delayed)
            rec = self.jobs.get(job_id)
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
                self.set_status(rec, JobStatus.PENDING)
                self.line_up(rec)
                moved += 1
        return moved

    def record(self, job_id: str) -> Record:
        """The job's record (call with :attr:`lock` held); :class:`JobNotFound` if none."""
        rec = self.jobs.get(job_id)
        if rec is None:
            raise JobNotFound(f"no job with id {job_id!r}")
        return rec

    def finish(self, rec: Record, status: JobStatus, now: float) -> None:
        """End ``rec`` in a final status; its children and result waiters hear of it."""
        self._active.pop(rec.id, None)
        rec.token = None
        rec.finished_at = now
        self.set_status(rec, status)
        if status is not JobStatus.DEAD:
            self._finished.append((now, rec.id))
        if self.flows.concerns(rec):
            self.flows.finished(rec, now)

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
                if spec.id in self.jobs:
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
                self.add(rec)
                self.line_up(rec)
                if rec.status is JobStatus.PENDING:
                    woken.add(rec.queue)
                results.append(EnqueueResult(rec.id, True))
        return results, woken

    def claim(self, queues: Sequence[str], worker_id: str, limit: int, lease_for: float) -> list[Lease]:
        now = self.clock.now()
        leases: list[Lease] = []
        with self.lock:
            self.promote_due(now)
            for queue in queues:
                if queue in self.paused:
                    continue
                line = self._lines.get(queue)
                while line and len(leases) < limit:
                    rec = self._live(heapq.heappop(line))
                    if rec is None:
                        continue  # stale entry: cancelled, purged or re-lined since
                    leases.append(self._lease(rec, now, worker_id, lease_for))
                if len(leases) < limit:  # limited groups fill what is left (ADR 0110)
                    self.limited.admit(
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
        rec = self.jobs.get(entry[3])
        if rec is None or rec.order != entry[2] or rec.run_at != entry[1]:
            return None
        return rec if rec.status is JobStatus.PENDING else None

    def _lease(self, rec: Record, now: float, worker_id: str, lease_for: float) -> Lease:
        rec.attempt += 1
        rec.started_at = now
        rec.token = str(next(self._tokens))
        rec.lease_expires_at = now + lease_for
        rec.worker_id = worker_id
        self.set_status(rec, JobStatus.ACTIVE)
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
                self.finish(rec, JobStatus.COMPLETED, now)
                if rec.unique_until_done and rec.unique_key is not None:
                    self._free_unique(rec.queue, rec.unique_key, rec.id)
                out.append(True)
        return out

    def _free_unique(self, queue: str, key: str, job_id: str) -> None:
        """Free a unique key its completed job still holds (not one a later job took)."""
        slot = (queue, key)
        holder = self._unique.get(slot)
        if holder is not None and holder[0] == job_id:
            del self._unique[slot]

    def fail(self, lease: Lease, error: ErrorInfo, retry_in: float | None) -> tuple[bool, set[str]]:
        now = self.clock.now()
        with self.lock:
            rec = self._current(lease)
            if rec is None:
                return False, set()
            rec.errors = append_error(rec.errors, replace(error, attempt=rec.attempt, at=now))
            if retry_in is None:
                self.finish(rec, JobStatus.DEAD, now)
                return True, set()
            self._active.pop(rec.id)
            rec.token = None
            rec.run_at = now + retry_in
            rec.order = next(self._order)
            self.set_status(rec, JobStatus.RETRY)
            self.line_up(rec)
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
        self.set_status(rec, JobStatus.SCHEDULED if run_at > now else JobStatus.PENDING)
        self.line_up(rec)

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
                    self.finish(rec, JobStatus.DEAD, now)
                    dead.append(rec.id)
                else:
                    self._put_back(rec, now, run_at=rec.run_at)
                    recovered.append(rec.id)
                    woken.add(rec.queue)
        return RecoveryReport(tuple(recovered), tuple(dead), dict(per_queue)), woken

    def promote(self, limit: int) -> int:
        now = self.clock.now()
        with self.lock:
            return self.promote_due(now, limit)

    def has_due(self, queues: Iterable[str]) -> bool:
        now = self.clock.now()
        with self.lock:
            self.promote_due(now)
            for queue in queues:
                line = self._lines.get(queue)
                while line and self._live(line[0]) is None:
                    heapq.heappop(line)
                if line and queue not in self.paused:
                    return True
            return self.limited.ready(queues, now, self._live)

    def next_token_at(self, queues: Iterable[str]) -> float | None:
        """When a rate-limited group of ``queues`` with a due job next gets a token."""
        now = self.clock.now()
        with self.lock:
            self.promote_due(now)
            return self.limited.next_token_at(queues, now, self._live)

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

    # -- retention ---------------------------------------------------------------

    def prune(self, limit: int) -> int:
        now = self.clock.now()
        cutoff = now - self.retention
        removed = 0
        with self.lock:
            while self._finished and self._finished[0][0] <= cutoff and removed < limit:
                finished_at, job_id = self._finished.popleft()
                rec = self.jobs.get(job_id)
                if (
                    rec is not None
                    and rec.finished_at == finished_at
                    and rec.status
                    in (
                        JobStatus.COMPLETED,
                        JobStatus.CANCELLED,
                    )
                ):
                    self.delete(rec)
                    removed += 1
            self._unique = {k: v for k, v in self._unique.items() if v[1] > now}
            self._idempotency = {k: v for k, v in self._idempotency.items() if v[2] > now}
        return removed
