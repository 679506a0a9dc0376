"""The memory store's dependencies and result waiters (ADR 0115): batches with parents, the
children a finished job settles, and ``result()`` waiters woken when a job finishes.

A part of :class:`~pqueue.brokers.memory.store.MemoryStore`, as ``store.flows``: it keeps its
own state (the waiters, the settling queue) and acts on the store's records under the store's
lock. The store tells it about every finished job that has children or waiters.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pqueue.broker_flows import parent_failed, plan_flow, topological
from pqueue.brokers.memory.records import Record
from pqueue.errors import JobNotFound
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus, append_error

if TYPE_CHECKING:
    from pqueue.brokers.memory.store import MemoryStore


class Flows:
    """Jobs that wait for parents, and callers that wait for a job to finish."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._watchers: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._settling: deque[Record] = deque()  # finished parents whose children are not told yet

    def enqueue_flow(self, specs: Sequence[JobSpec]) -> tuple[list[EnqueueResult], set[str]]:
        """Store a batch with dependencies, all or nothing (see ``FlowBroker.enqueue_flow``);
        returns the results and the queues that gained a due job."""
        store = self._store
        plan = plan_flow(specs)
        now = store.clock.now()
        woken: set[str] = set()
        results: dict[str, EnqueueResult] = {}
        with store.lock:
            missing = [p for p in plan.external if p not in store.jobs]
            if missing:
                raise JobNotFound(f"depends_on names no job with id {missing[0]!r}; nothing was stored")
            created: list[Record] = []
            for spec in topological(specs):
                if spec.id in store.jobs:
                    results[spec.id] = EnqueueResult(spec.id, False)
                    continue
                rec = Record.from_spec(spec, now=now, order=store.next_order())
                if spec.depends_on:
                    rec.status = JobStatus.WAITING
                    rec.unfinished = set(spec.depends_on)
                    for parent in spec.depends_on:
                        holder = store.jobs[parent]
                        if holder.children is None:
                            holder.children = []
                        holder.children.append(rec.id)
                store.add(rec)
                if not spec.depends_on:
                    store.line_up(rec)
                    if rec.status is JobStatus.PENDING:
                        woken.add(rec.queue)
                created.append(rec)
                results[spec.id] = EnqueueResult(spec.id, True)
            for new in created:
                for parent_id in new.depends_on:
                    holder = store.jobs[parent_id]
                    if holder.status.is_final:
                        self._settle_edge(holder, new, now)
        return [results[spec.id] for spec in specs], woken

    def watch(self, job_id: str, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Job | None:
        """The job if it is finished; else ``event`` is set (on ``loop``) when it finishes."""
        with self._store.lock:
            rec = self._store.record(job_id)
            if rec.status.is_final:
                return rec.to_job()
            self._watchers.setdefault(job_id, []).append((loop, event))
            return None

    def unwatch(self, job_id: str, event: asyncio.Event) -> None:
        with self._store.lock:
            left = [w for w in self._watchers.get(job_id, ()) if w[1] is not event]
            if left:
                self._watchers[job_id] = left
            else:
                self._watchers.pop(job_id, None)

    # -- called by the store, under its lock -----------------------------------------

    def concerns(self, rec: Record) -> bool:
        """Whether ``rec`` finishing matters here: it has children or someone waits for it."""
        return rec.children is not None or rec.id in self._watchers

    def finished(self, rec: Record, now: float) -> None:
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
                child = self._store.jobs.get(child_id)
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
        store = self._store
        child.unfinished.discard(parent.id)
        if parent.status is JobStatus.COMPLETED:
            if child.parent_results is None:
                child.parent_results = {}
            child.parent_results[parent.id] = parent.result_json
        elif child.on_parent_failure == "cancel":
            child.unfinished = None
            error = parent_failed(parent.id, parent.status.value)
            child.errors = append_error(child.errors, replace(error, attempt=child.attempt, at=now))
            store.finish(child, JobStatus.CANCELLED, now)
            return
        if child.unfinished:
            return
        child.unfinished = None
        child.run_at = max(child.run_at, now)
        child.order = store.next_order()
        due = child.run_at <= now
        store.set_status(child, JobStatus.PENDING if due else JobStatus.SCHEDULED)
        store.line_up(child)
        if due:
            store.waiters.wake({child.queue})
