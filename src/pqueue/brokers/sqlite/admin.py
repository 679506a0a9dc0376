"""Inspection, admin, control and schedules on SQLite, as plain functions of a connection.

Like :mod:`.store`, each is one operation's body, run by the broker in one transaction
(reads in a deferred one: a consistent snapshot that never takes the writer lock).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from pqueue.broker import JobPage, JobScan, QueueActivity, WorkerInfo
from pqueue.broker_control import CANCEL_KIND
from pqueue.broker_schedules import RECORD_RETENTION, ScheduleInfo, decode_schedule, encode_schedule
from pqueue.brokers.sqlite import flows
from pqueue.brokers.sqlite.codec import row_to_job, row_to_worker
from pqueue.brokers.sqlite.sql import queries
from pqueue.brokers.sqlite.store import next_counter
from pqueue.errors import CorruptJob, JobNotFound
from pqueue.job import (
    ErrorInfo,
    Job,
    JobStatus,
    append_error,
    errors_from_json,
    errors_to_json,
    unreadable_job,
)
from pqueue.limits import Limit, LimitState, refill

Q = queries()


def listed(row: Sequence[Any], status: JobStatus) -> Job:
    """A listed row as a Job, or a stand-in naming the problem if the row is malformed."""
    try:
        return row_to_job(row)
    except CorruptJob as exc:
        queue = row[2] if len(row) > 2 and isinstance(row[2], str) else "?"
        return unreadable_job(str(row[0]) if row else "?", queue, status, exc)


def get_job(conn: sqlite3.Connection, job_id: str) -> Job:
    row = conn.execute(Q["get_job"], {"id": job_id}).fetchone()
    if row is None:
        raise JobNotFound(f"no job with id {job_id!r}")
    return row_to_job(row)


def counts(conn: sqlite3.Connection) -> dict[str, dict[JobStatus, int]]:
    out: dict[str, dict[JobStatus, int]] = {}
    for queue, status, n in conn.execute(Q["counts"]):
        per = out.setdefault(queue, dict.fromkeys(JobStatus, 0))
        if status is not None:
            per[JobStatus(status)] = int(n)
    return dict(sorted(out.items()))


def list_queues(conn: sqlite3.Connection) -> list[str]:
    return [name for (name,) in conn.execute(Q["list_queues"])]


def list_jobs(
    conn: sqlite3.Connection,
    status: JobStatus,
    *,
    queue: str | None,
    job_type: str | None,
    limit: int,
    offset: int,
) -> JobPage:
    params = {"status": status.value, "queue": queue, "type": job_type, "limit": limit, "offset": offset}
    rows = conn.execute(Q["list_jobs"], params).fetchall()
    jobs = tuple(listed(row, status) for row in rows[:limit])
    return JobPage(jobs, offset + limit if len(rows) > limit else None)


def scan_page(conn: sqlite3.Connection, scan: JobScan, after: int) -> tuple[list[Job], int | None]:
    """One page of a scan after rowid ``after``; returns the jobs of this slice and the rowid
    to continue from (None: done)."""
    params = {
        "after": after,
        "statuses": json.dumps([s.value for s in scan.statuses]),
        "queue": scan.queue,
        "since": scan.since,
        "limit": scan.page_size,
    }
    rows = conn.execute(Q["scan_jobs"], params).fetchall()
    from pqueue.broker import in_slice

    jobs = [listed(row[1:], JobStatus(row[5])) for row in rows if in_slice(str(row[1]), scan)]
    return jobs, (int(rows[-1][0]) if len(rows) == scan.page_size else None)


def _status(conn: sqlite3.Connection, job_id: str) -> tuple[str, str, int, int, str]:
    row = conn.execute(Q["job_status"], {"id": job_id}).fetchone()
    if row is None:
        raise JobNotFound(f"no job with id {job_id!r}")
    return row  # type: ignore[no-any-return]


def cancel(conn: sqlite3.Connection, now: float, job_id: str) -> bool:
    status, _, has_children, _, errors = _status(conn, job_id)
    if status not in ("pending", "scheduled", "retry", "waiting"):
        return False
    conn.execute(Q["finish"], {"id": job_id, "status": "cancelled", "now": now, "errors": errors})
    if has_children:
        flows.settle(conn, [job_id], now)
    return True


def cancel_active(conn: sqlite3.Connection, now: float, job_id: str, reason: str) -> bool:
    status, _, has_children, attempt, errors = _status(conn, job_id)
    if status != "active":
        return False
    note = ErrorInfo(CANCEL_KIND, reason, attempt=attempt, at=now)
    text = errors_to_json(append_error(errors_from_json(errors), note))
    conn.execute(Q["finish"], {"id": job_id, "status": "cancelled", "now": now, "errors": text})
    conn.execute(
        Q["announce_cancel"], {"seq": next_counter(conn, "cancel_seq", 1), "job_id": job_id, "now": now}
    )
    if has_children:
        flows.settle(conn, [job_id], now)
    return True


def _dead(
    conn: sqlite3.Connection,
    now: float,
    queue: str | None,
    job_ids: Sequence[str] | None,
    older_than: float | None,
) -> list[tuple[str, str]]:
    params = {
        "queue": queue,
        "ids": None if job_ids is None else json.dumps(list(job_ids)),
        "older_than": older_than,
        "now": now,
    }
    return [(str(i), str(q)) for i, q in conn.execute(Q["dead_ids"], params)]


def requeue_dead(
    conn: sqlite3.Connection, now: float, queue: str | None, job_ids: Sequence[str] | None
) -> int:
    dead = _dead(conn, now, queue, job_ids, None)
    if dead:
        seq = next_counter(conn, "job_seq", len(dead))
        conn.executemany(
            Q["requeue"], [{"id": i, "now": now, "seq": seq + n} for n, (i, _) in enumerate(dead)]
        )
    return len(dead)


def purge_dead(
    conn: sqlite3.Connection,
    now: float,
    queue: str | None,
    job_ids: Sequence[str] | None,
    older_than: float | None,
) -> int:
    dead = _dead(conn, now, queue, job_ids, older_than)
    conn.executemany(Q["delete_job"], [{"id": i} for i, _ in dead])
    return len(dead)


def prune(conn: sqlite3.Connection, now: float, limit: int, retention: float) -> int:
    removed = conn.execute(Q["prune_jobs"], {"now": now, "limit": limit, "retention": retention}).rowcount
    if removed:
        conn.execute(Q["prune_edges"])
    for name in ("prune_keys", "prune_idempotency", "prune_workers", "prune_cancels"):
        conn.execute(Q[name], {"now": now})
    return int(removed)


def register_worker(conn: sqlite3.Connection, now: float, info: WorkerInfo, ttl: float) -> None:
    fields = asdict(info)
    fields.update(queues=json.dumps(list(info.queues)), meta=json.dumps(dict(info.meta)), ttl=ttl, now=now)
    del fields["last_seen"]
    conn.execute(Q["register_worker"], fields)


def list_workers(conn: sqlite3.Connection, now: float) -> list[WorkerInfo]:
    rows = conn.execute(Q["list_workers"], {"now": now}).fetchall()
    return [info for info in map(row_to_worker, rows) if info is not None]


def activity(conn: sqlite3.Connection, now: float, window: float) -> QueueActivity:
    rows = conn.execute(Q["activity"], {"now": now, "window": window}).fetchall()
    ages = {queue: max(0.0, float(age)) for queue, age, _ in rows if age is not None}
    return QueueActivity(ages, {queue: int(done) for queue, _, done in rows}, window)


def limit_groups(conn: sqlite3.Connection, now: float) -> list[LimitState]:
    out = []
    for queue, key, active, waiting, conc, rate, burst, tokens, refilled_at in conn.execute(
        Q["limit_groups"]
    ):
        level = None
        if rate is not None:
            limit = Limit(key, rate, burst if burst is not None else 1.0, conc)
            level = limit.burst if tokens is None else refill(tokens, refilled_at, now, limit)
        out.append(LimitState(queue, key, int(active), int(waiting), conc, rate, level))
    return out


def pause(conn: sqlite3.Connection, now: float, queue: str) -> bool:
    return conn.execute(Q["pause"], {"queue": queue, "now": now}).fetchone() is not None


def resume(conn: sqlite3.Connection, queue: str) -> bool:
    return conn.execute(Q["resume"], {"queue": queue}).fetchone() is not None


def paused_queues(conn: sqlite3.Connection) -> list[str]:
    return [q for (q,) in conn.execute(Q["paused"])]


def cancels_since(conn: sqlite3.Connection, after: int | None) -> tuple[list[str], int]:
    """Ids cancelled while running after announcement ``after`` (None: from now on)."""
    if after is None:
        (last,) = conn.execute(Q["last_cancel"]).fetchone()
        return [], int(last)
    rows = conn.execute(Q["cancels_since"], {"after": after}).fetchall()
    return [str(job_id) for _, job_id in rows], (int(rows[-1][0]) if rows else after)


def register_schedules(
    conn: sqlite3.Connection, now: float, schedules: Sequence[ScheduleInfo], ttl: float
) -> list[float]:
    conn.execute(Q["drop_old_schedules"], {"now": now, "keep": RECORD_RETENTION})
    out = []
    for info in schedules:
        params = {"name": info.name, "definition": encode_schedule(info), "now": now, "expires_at": now + ttl}
        (cursor,) = conn.execute(Q["register_schedule"], params).fetchone()
        out.append(float(cursor))
    return out


def mark_schedule_run(conn: sqlite3.Connection, name: str, tick: float) -> None:
    conn.execute(Q["mark_schedule_run"], {"name": name, "tick": tick})


def list_schedules(conn: sqlite3.Connection, now: float) -> list[ScheduleInfo]:
    found = (decode_schedule(text, last) for text, last in conn.execute(Q["list_schedules"], {"now": now}))
    return [info for info in found if info is not None]
