"""Job dependencies on SQLite (ADR 0115): settling the children of finished jobs, and storing
a batch whose jobs wait for parents.

Postgres settles children in a trigger function (migration 0005); here the operation that
finishes a job calls :func:`settle` inside its own transaction, and a long chain of
cancellations is walked with a queue, never recursion. The rules (what a dead parent does
to a child, the order of a batch) are pqueue.broker_flows'.
"""

from __future__ import annotations

import json
import sqlite3
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pqueue.broker_flows import parent_failed, plan_flow
from pqueue.brokers.sqlite.sql import queries
from pqueue.errors import JobNotFound
from pqueue.job import EnqueueResult, JobSpec, append_error, errors_from_json, errors_to_json

Q = queries()

FINAL = ("completed", "dead", "cancelled")


def settle(conn: sqlite3.Connection, finished: Iterable[str], now: float) -> None:
    """Tell the waiting children of each finished job (and theirs, on cancellation)."""
    todo = deque(finished)
    while todo:
        parent_id = todo.popleft()
        parent = conn.execute(Q["parents"], {"ids": json.dumps([parent_id])}).fetchone()
        if parent is None:
            continue
        _, status, result = parent
        for child in conn.execute(Q["children"], {"parent": parent_id}).fetchall():
            if _settle_edge(conn, parent_id, status, result, child, now=now):
                todo.append(child[0])


def _settle_edge(
    conn: sqlite3.Connection,
    parent_id: str,
    status: str,
    result: str | None,
    child: Sequence[object],
    *,
    now: float,
) -> bool:
    """Apply one finished parent to one waiting child; True if the child was cancelled."""
    child_id, on_failure, left, results_text, run_at, _, attempt, errors_text = child
    results = json.loads(str(results_text)) if results_text else {}
    if status != "completed" and on_failure == "cancel":
        error = replace(parent_failed(parent_id, status), attempt=int(str(attempt)), at=now)
        errors = errors_to_json(append_error(errors_from_json(str(errors_text)), error))
        conn.execute(Q["finish"], {"id": child_id, "status": "cancelled", "now": now, "errors": errors})
        return True
    if status == "completed":
        results[parent_id] = None if result is None else json.loads(result)
    remaining = int(str(left)) - 1
    encoded = json.dumps(results, separators=(",", ":")) if results else None
    if remaining > 0:
        conn.execute(
            Q["child_settled"], {"id": child_id, "parents_left": remaining, "parent_results": encoded}
        )
        return False
    from pqueue.brokers.sqlite.store import next_counter

    due = max(float(str(run_at)), now)
    params = {
        "id": child_id,
        "status": "scheduled" if due > now else "pending",
        "parent_results": encoded,
        "run_at": due,
        "seq": next_counter(conn, "job_seq", 1),
    }
    conn.execute(Q["child_released"], params)
    return False


def enqueue_flow(conn: sqlite3.Connection, specs: Sequence[JobSpec], now: float) -> list[EnqueueResult]:
    """Store a batch with dependencies, all or nothing (``FlowBroker.enqueue_flow``)."""
    from pqueue.brokers.sqlite.store import enqueue

    plan = plan_flow(specs)
    found = {
        str(job_id): str(status)
        for job_id, status, _ in conn.execute(Q["parents"], {"ids": json.dumps(list(plan.external))})
    }
    missing = [p for p in plan.external if p not in found]
    if missing:
        raise JobNotFound(f"depends_on names no job with id {missing[0]!r}; nothing was stored")
    waiting = frozenset(s.id for s in specs if s.depends_on)
    results = enqueue(conn, specs, now, waiting=waiting)
    created = {r.id for r, s in zip(results, specs, strict=True) if r.created and s.id in waiting}
    edges = [(p, s.id) for s in specs if s.id in created for p in dict.fromkeys(s.depends_on)]
    conn.executemany(Q["link"], [{"parent": p, "child": c} for p, c in edges])
    conn.executemany(Q["mark_parent"], [{"id": p} for p in sorted({p for p, _ in edges})])
    done = [p for p, status in found.items() if status in FINAL]
    settle(conn, done, now)
    return results
