"""The SQLite broker's hot path as plain functions of a connection inside one transaction.

Each function is one operation's body (enqueue, claim, ack, fail, release, extend, recover,
promote, idempotency): the broker runs it in a ``BEGIN IMMEDIATE`` transaction on its own
thread, the sync transport on the caller's thread, :func:`~pqueue.brokers.sqlite.enqueue_in`
on the application's own connection. The statements are in ``queries.sql``; what is decided
here is only what the Postgres statements decide in SQL (which row, which status), with the
shared rules (error history, token buckets, flows) taken from pqueue's backend-neutral code.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pqueue.broker import IdempotencyState, RecoveryReport
from pqueue.brokers.fencing import landed
from pqueue.brokers.sqlite import flows, limited
from pqueue.brokers.sqlite.codec import row_to_job
from pqueue.brokers.sqlite.sql import queries
from pqueue.errors import CorruptJob
from pqueue.job import EnqueueResult, ErrorInfo, JobSpec, Lease, append_error, errors_from_json, unset_to_text
from pqueue.job import errors_to_json as _errors_json

Q = queries()


def next_counter(conn: sqlite3.Connection, name: str, n: int) -> int:
    """Take ``n`` values of a counter; returns the first of them."""
    (last,) = conn.execute(Q["next_counter"], {"name": name, "n": n}).fetchone()
    return int(last) - n + 1


def _meta(spec: JobSpec) -> str:
    return json.dumps(dict(spec.meta), separators=(",", ":")) if spec.meta else "{}"


def job_params(spec: JobSpec, now: float, seq: int, *, waiting: bool = False) -> dict[str, Any]:
    """The ``insert_job`` parameters of one spec."""
    run_at = spec.run_at if spec.run_at is not None else now + (spec.delay or 0.0)
    status = "waiting" if waiting else ("scheduled" if run_at > now else "pending")
    limit = spec.limit
    parents = list(dict.fromkeys(spec.depends_on))
    return {
        "id": spec.id,
        "seq": seq,
        "priority": spec.priority,
        "status": status,
        "queue": spec.queue,
        "type": spec.type,
        "payload": spec.payload_json,
        "run_at": run_at,
        "now": now,
        "max_retries": spec.max_retries,
        "max_recoveries": spec.max_recoveries,
        "timeout": spec.timeout,
        "unique_key": spec.unique_key,
        "idempotency_key": spec.idempotency_key,
        "meta": _meta(spec),
        "depends_on": json.dumps(list(spec.depends_on)) if waiting else None,
        "on_parent_failure": spec.on_parent_failure if waiting else None,
        "parents_left": len(parents) if waiting else None,
        "limit_key": None if limit is None else limit.key,
        "limit_rate": None if limit is None else limit.rate,
        "limit_burst": None if limit is None else limit.burst,
        "limit_concurrency": None if limit is None else limit.concurrency,
        "unset": unset_to_text(spec.unset),
    }


def enqueue(
    conn: sqlite3.Connection, specs: Sequence[JobSpec], now: float, *, waiting: frozenset[str] = frozenset()
) -> list[EnqueueResult]:
    """Store jobs; a taken id or a held unique key is not stored (its holder's id comes back).
    Jobs whose id is in ``waiting`` are stored ``waiting`` for their parents (flows)."""
    if not specs:
        return []
    taken = {row[0] for row in conn.execute(Q["existing_ids"], {"ids": json.dumps([s.id for s in specs])})}
    seq = next_counter(conn, "job_seq", len(specs))
    results: list[EnqueueResult] = []
    rows: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        if spec.id in taken:
            results.append(EnqueueResult(spec.id, False))
            continue
        if spec.unique_key is not None:
            slot = {"queue": spec.queue, "key": spec.unique_key}
            held = conn.execute(Q["unique_holder"], slot).fetchone()
            if held is not None and held[1] > now:
                results.append(EnqueueResult(str(held[0]), False))
                continue
            conn.execute(
                Q["unique_take"],
                {
                    **slot,
                    "job_id": spec.id,
                    "expires_at": now + (spec.unique_for or 0),
                    "until_done": int(spec.unique_until == "done"),
                },
            )
        taken.add(spec.id)
        rows.append(job_params(spec, now, seq + i, waiting=spec.id in waiting))
        results.append(EnqueueResult(spec.id, True))
    if rows:
        conn.executemany(Q["insert_job"], rows)
        conn.executemany(
            Q["queue_seen"], [{"queue": q, "now": now} for q in sorted({r["queue"] for r in rows})]
        )
        groups = sorted({(r["queue"], r["limit_key"]) for r in rows if r["limit_key"] is not None})
        conn.executemany(Q["limit_group_seen"], [{"queue": q, "key": k} for q, k in groups])
    return results


def claim(
    conn: sqlite3.Connection,
    now: float,
    queues: Sequence[str],
    *,
    worker_id: str,
    limit: int,
    lease_for: float,
) -> tuple[list[Lease], list[tuple[str, int, CorruptJob]]]:
    """Lease up to ``limit`` due jobs, queue by queue in the given order; returns the leases
    and the claimed rows that could not be decoded (for the caller to bury)."""
    paused = {row[0] for row in conn.execute(Q["paused"])}
    picked: list[str] = []
    for queue in queues:
        if queue in paused or queue in queues[: queues.index(queue)]:
            continue
        want = limit - len(picked)
        picked += [
            row[0] for row in conn.execute(Q["claim_due"], {"queue": queue, "now": now, "limit": want})
        ]
        if len(picked) < limit:
            picked += limited.admit(conn, queue, now, limit - len(picked))
        if len(picked) >= limit:
            break
    if not picked:
        return [], []
    token = next_counter(conn, "lease_token", len(picked))
    params = {
        "ids": json.dumps(picked),
        "now": now,
        "token": token,
        "expires_at": now + lease_for,
        "worker_id": worker_id,
    }
    rows = sorted(conn.execute(Q["lease"], params).fetchall(), key=lambda row: int(row[0]))  # claim order
    leases: list[Lease] = []
    corrupt: list[tuple[str, int, CorruptJob]] = []
    for tok, expires, *row in rows:
        try:
            leases.append(Lease(row_to_job(row), str(tok), float(expires)))
        except CorruptJob as exc:
            corrupt.append((str(row[0]), tok, exc))
    return leases, corrupt


def token_of(lease: Lease) -> int | None:
    """The numeric token of a lease, or None for one this broker never issued."""
    try:
        return int(lease.token)
    except ValueError:
        return None


def ack(
    conn: sqlite3.Connection, now: float, leases: Sequence[Lease], results_json: Sequence[str | None] | None
) -> list[bool]:
    results = results_json or [None] * len(leases)
    triples = [[lease.job.id, token_of(lease), result] for lease, result in zip(leases, results, strict=True)]
    ids = [lease.job.id for lease in leases]
    current = None
    if len(set(ids)) < len(ids):  # a job twice (a stale lease and its successor): whose token is current?
        current = dict(conn.execute(Q["lease_tokens"], {"ids": json.dumps(ids)}).fetchall())
    rows = conn.execute(Q["ack"], {"leases": json.dumps(triples), "now": now}).fetchall()
    done = {str(job_id) for job_id, *_ in rows}
    flows.settle(conn, [str(job_id) for job_id, has_children, *_ in rows if has_children], now)
    held = [[queue, key, job_id] for job_id, _, queue, key in rows if key is not None]
    if held:  # plain acks run nothing more
        conn.execute(Q["unique_done"], {"held": json.dumps(held)})
    if current is None:  # each job once: a row that came back is its one lease's
        return [job_id in done for job_id in ids]
    return landed(leases, ((job_id, str(current[job_id])) for job_id in done))


def _stamped(errors_text: str, attempt: int, error: ErrorInfo, now: float) -> str:
    """A job's error history with ``error`` appended (stamped with its attempt and time)."""
    return _errors_json(append_error(errors_from_json(errors_text), replace(error, attempt=attempt, at=now)))


def fail(
    conn: sqlite3.Connection, now: float, job_id: str, token: int, error: ErrorInfo, *, retry_in: float | None
) -> bool:
    row = conn.execute(Q["leased"], {"id": job_id, "token": token}).fetchone()
    if row is None:
        return False
    errors_text, attempt, _, has_children = row
    errors = _stamped(errors_text, attempt, error, now)
    if retry_in is None:
        conn.execute(Q["fail_dead"], {"id": job_id, "now": now, "errors": errors})
        if has_children:
            flows.settle(conn, [job_id], now)
        return True
    seq = next_counter(conn, "job_seq", 1)
    conn.execute(Q["fail_retry"], {"id": job_id, "run_at": now + retry_in, "seq": seq, "errors": errors})
    return True


def release(
    conn: sqlite3.Connection, now: float, leases: Sequence[Lease], delay: float, note: ErrorInfo | None
) -> list[bool]:
    out: list[bool] = []
    for lease in leases:
        row = conn.execute(Q["leased"], {"id": lease.job.id, "token": token_of(lease)}).fetchone()
        if row is None:
            out.append(False)
            continue
        errors_text, attempt, run_at, _ = row
        errors = errors_text if note is None else _stamped(errors_text, attempt, note, now)
        due = now + delay if delay > 0 else run_at
        _put_back(conn, now, lease.job.id, due, errors, recovered=0)
        out.append(True)
    return out


def _put_back(
    conn: sqlite3.Connection, now: float, job_id: str, run_at: float, errors: str, *, recovered: int
) -> None:
    status = "scheduled" if run_at > now else "pending"
    params = {"id": job_id, "status": status, "run_at": run_at, "errors": errors, "recovered": recovered}
    conn.execute(Q["put_back"], params)


def extend(conn: sqlite3.Connection, now: float, leases: Sequence[Lease], lease_for: float) -> list[bool]:
    out = []
    for lease in leases:
        params = {"id": lease.job.id, "token": token_of(lease), "expires_at": now + lease_for}
        out.append(conn.execute(Q["extend"], params).fetchone() is not None)
    return out


def recover(conn: sqlite3.Connection, now: float, limit: int) -> RecoveryReport:
    recovered: list[str] = []
    dead: list[str] = []
    per_queue: Counter[str] = Counter()
    rows = conn.execute(Q["expired"], {"now": now, "limit": limit}).fetchall()
    for job_id, queue, recoveries, max_recoveries, errors_text, attempt, run_at, has_children in rows:
        per_queue[queue] += 1
        if recoveries + 1 > max_recoveries:
            reason = ErrorInfo("LeaseExpired", f"lease expired {recoveries + 1} times")
            errors = _stamped(errors_text, attempt, reason, now)
            conn.execute(Q["recover_dead"], {"id": job_id, "now": now, "errors": errors})
            if has_children:
                flows.settle(conn, [job_id], now)
            dead.append(job_id)
        else:
            _put_back(conn, now, job_id, run_at, errors_text, recovered=1)
            recovered.append(job_id)
    return RecoveryReport(tuple(recovered), tuple(dead), dict(per_queue))


def promote(conn: sqlite3.Connection, now: float, limit: int) -> int:
    return conn.execute(Q["promote"], {"now": now, "limit": limit}).rowcount


def due_in(conn: sqlite3.Connection, now: float, queues: Sequence[str]) -> float | None:
    """Seconds until a job of ``queues`` may be claimable (0: now; None: none waits)."""
    (earliest,) = conn.execute(Q["earliest"], {"queues": json.dumps(list(queues)), "now": now}).fetchone()
    moments = [] if earliest is None else [float(earliest)]
    paused = {row[0] for row in conn.execute(Q["paused"])}
    at = limited.next_moment(conn, [q for q in queues if q not in paused], now)
    if at is not None:
        moments.append(at)
    return None if not moments else max(0.0, min(moments) - now)


def idempotency_begin(
    conn: sqlite3.Connection, now: float, key: str, owner: str, ttl: float
) -> IdempotencyState:
    held = conn.execute(Q["idempotency_get"], {"key": key}).fetchone()
    if held is not None and held[2] > now:
        if held[1] == "done":
            return IdempotencyState.DONE
        if held[0] != owner:
            return IdempotencyState.IN_FLIGHT
    put = {"key": key, "owner": owner, "state": "in_flight", "expires_at": now + ttl}
    conn.execute(Q["idempotency_put"], put)
    return IdempotencyState.ACQUIRED


def idempotency_end(
    conn: sqlite3.Connection, now: float, key: str, owner: str, *, done: bool, ttl: float
) -> None:
    if done:
        put = {"key": key, "owner": owner, "state": "done", "expires_at": now + ttl}
        conn.execute(Q["idempotency_put"], put)
    else:
        conn.execute(Q["idempotency_release"], {"key": key, "owner": owner})


def bury(conn: sqlite3.Connection, now: float, job_id: str, token: int, exc: CorruptJob) -> None:
    """Dead-letter a claimed row that cannot be decoded, so it cannot crash-loop workers."""
    fail(conn, now, job_id, token, ErrorInfo("CorruptJob", str(exc)), retry_in=None)
