"""Rate and concurrency limits at claim time on SQLite (ADR 0110): which due limited jobs of
a queue may start now, spending their groups' tokens.

A group (queue, limit key) admits a job while fewer than ``concurrency`` of its jobs are
active and its bucket holds a whole token; the bucket refills by :func:`pqueue.limits.refill`,
the rule every backend shares. Runs inside the claim's write transaction, so no other
writer sees a bucket between its read and its update.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from pqueue.brokers.sqlite.sql import queries
from pqueue.limits import Limit, refill

Q = queries()

SCAN = 1000
"""Due limited jobs of a queue read per claim: past the first ``SCAN``, held-back groups may
hide admissible jobs until the head moves (bounded work per claim)."""


@dataclass(slots=True)
class _Bucket:
    tokens: float | None
    refilled_at: float | None
    dirty: bool = False

    def level(self, limit: Limit, now: float) -> float:
        if self.tokens is None or self.refilled_at is None:
            return limit.burst
        return refill(self.tokens, self.refilled_at, now, limit)


def _state(conn: sqlite3.Connection, queue: str) -> tuple[dict[str, int], dict[str, _Bucket]]:
    active = {str(k): int(n) for k, n in conn.execute(Q["limited_active"], {"queue": queue})}
    buckets = {str(k): _Bucket(t, r) for k, t, r in conn.execute(Q["limit_buckets"], {"queue": queue})}
    return active, buckets


def _limit(key: str, rate: float | None, burst: float | None, concurrency: int | None) -> Limit:
    return Limit(key, rate, burst if burst is not None else 1.0, concurrency)


def admit(conn: sqlite3.Connection, queue: str, now: float, want: int) -> list[str]:
    """Ids of up to ``want`` due limited jobs of ``queue`` that may start now; their tokens
    are spent (the caller leases them in the same transaction)."""
    rows = conn.execute(Q["limited_due"], {"queue": queue, "now": now, "limit": SCAN}).fetchall()
    if not rows:
        return []
    active, buckets = _state(conn, queue)
    picked: list[str] = []
    for job_id, key, rate, burst, concurrency in rows:
        limit = _limit(key, rate, burst, concurrency)
        if limit.concurrency is not None and active.get(key, 0) >= limit.concurrency:
            continue
        bucket = buckets.setdefault(key, _Bucket(None, None))
        if limit.rate is not None:
            tokens = bucket.level(limit, now)
            if tokens < 1.0:
                continue
            bucket.tokens, bucket.refilled_at, bucket.dirty = tokens - 1.0, now, True
        active[key] = active.get(key, 0) + 1
        picked.append(job_id)
        if len(picked) >= want:
            break
    for key, bucket in buckets.items():
        if bucket.dirty:
            conn.execute(Q["limit_spend"], {"queue": queue, "key": key, "tokens": bucket.tokens, "now": now})
    return picked


def next_moment(conn: sqlite3.Connection, queues: Sequence[str], now: float) -> float | None:
    """When a limited job of ``queues`` may next start: ``now`` if one may at once, the time
    a rate-limited group gets its next token, or None (a concurrency slot frees only when a
    job finishes, which is a write the wake-up poller sees)."""
    moments: list[float] = []
    for queue in queues:
        rows = conn.execute(Q["limited_due"], {"queue": queue, "now": now, "limit": SCAN}).fetchall()
        if not rows:
            continue
        active, buckets = _state(conn, queue)
        for _, key, rate, burst, concurrency in rows:
            limit = _limit(key, rate, burst, concurrency)
            if limit.concurrency is not None and active.get(key, 0) >= limit.concurrency:
                continue
            if limit.rate is None:
                return now
            tokens = buckets.get(key, _Bucket(None, None)).level(limit, now)
            if tokens >= 1.0:
                return now
            moments.append(now + (1.0 - tokens) / limit.rate)
    return min(moments, default=None)
