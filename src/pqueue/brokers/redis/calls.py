"""Typed builders of every script call: KEYS and ARGV exactly as each ``lua/*.lua`` header
documents them. Pure functions, so the layout can be checked without a server."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pqueue.brokers.redis.codec import encode_error, encode_leases, enqueue_header, waiting_header
from pqueue.brokers.redis.keys import Lanes, QueueKeys, lanes_of
from pqueue.brokers.redis.scripts import ScriptCall
from pqueue.job import MAX_ERROR_HISTORY, ErrorInfo, JobSpec, Lease

PROMOTE_BATCH = 1000
"""Most due scheduled/retry jobs one script run moves to pending (bounds its run time)."""


def enqueue(
    k: QueueKeys, specs: Sequence[JobSpec], now: str, channel: str, handoff_prefix: str
) -> ScriptCall:
    keys = [k.pending, k.scheduled, k.retry, k.seq, k.active, k.parked, k.parkers]
    keys += [k.unique_prefix + s.unique_key for s in specs if s.unique_key is not None]
    header = enqueue_header(specs)
    return ScriptCall(
        "enqueue", keys, [now, k.job_prefix, channel, k.queue, PROMOTE_BATCH, header, handoff_prefix]
    )


def claim(
    k: QueueKeys,
    now: str,
    limit: int,
    lease_ms: int,
    worker_id: str,
    *,
    parking: str,
    lanes: Lanes | None = None,
) -> ScriptCall:
    lanes = lanes or lanes_of(k)
    return ScriptCall(
        "claim",
        [k.pending, k.scheduled, k.retry, k.active, k.seq, k.parked, k.parkers, k.paused, lanes.zset],
        [now, k.job_prefix, limit, lease_ms, worker_id, PROMOTE_BATCH, parking, lanes.prefix],
    )


def park(
    k: QueueKeys,
    now: str,
    claimer: str,
    *,
    limit: int,
    lease_ms: int,
    park_ms: int,
    lanes: Lanes | None = None,
) -> ScriptCall:
    lanes = lanes or lanes_of(k)
    return ScriptCall(
        "park",
        [k.pending, k.scheduled, k.retry, k.parked, k.parkers, k.paused, lanes.zset],
        [now, claimer, limit, lease_ms, park_ms],
    )


def ack(
    k: QueueKeys,
    now: str,
    retention_ms: int,
    leases: Sequence[Lease],
    results: Sequence[str | None],
    *,
    results_channel: str,
) -> ScriptCall:
    return ScriptCall(
        "ack",
        [k.active, k.completed, k.settled, k.followed],
        [
            now,
            k.job_prefix,
            retention_ms,
            encode_leases(leases, results, unique=True),
            results_channel,
            k.unique_prefix,
        ],
    )


def fail(
    k: QueueKeys,
    now: str,
    *,
    job_id: str,
    token: str,
    error: ErrorInfo,
    retry_ms: int | None,
    channel: str,
    results_channel: str,
) -> ScriptCall:
    return ScriptCall(
        "fail",
        [k.active, k.retry, k.dead, k.seq, k.job(job_id), k.settled, k.followed],
        [
            now,
            job_id,
            token,
            encode_error(error),
            "" if retry_ms is None else retry_ms,
            MAX_ERROR_HISTORY,
            channel,
            k.queue,
            results_channel,
        ],
    )


def release(
    k: QueueKeys, now: str, delay_ms: int, leases: Sequence[Lease], channel: str, *, note: ErrorInfo | None
) -> ScriptCall:
    return ScriptCall(
        "release",
        [k.active, k.pending, k.scheduled, k.seq],
        [
            now,
            k.job_prefix,
            delay_ms,
            channel,
            k.queue,
            encode_leases(leases),
            "" if note is None else encode_error(note),
            MAX_ERROR_HISTORY,
        ],
    )


def extend(k: QueueKeys, now: str, lease_ms: int, leases: Sequence[Lease]) -> ScriptCall:
    return ScriptCall("extend", [k.active], [now, k.job_prefix, lease_ms, encode_leases(leases)])


def recover(k: QueueKeys, now: str, limit: int, channel: str, results_channel: str) -> ScriptCall:
    return ScriptCall(
        "recover",
        [k.active, k.pending, k.dead, k.settled, k.followed],
        [now, k.job_prefix, limit, MAX_ERROR_HISTORY, channel, k.queue, results_channel],
    )


def promote(k: QueueKeys, now: str, limit: int, channel: str) -> ScriptCall:
    return ScriptCall(
        "promote", [k.pending, k.scheduled, k.retry, k.seq], [now, k.job_prefix, limit, channel, k.queue]
    )


def cancel(k: QueueKeys, now: str, job_id: str, retention_ms: int, results_channel: str) -> ScriptCall:
    return ScriptCall(
        "cancel",
        [
            k.pending,
            k.scheduled,
            k.retry,
            k.cancelled,
            k.job(job_id),
            k.waiting,
            k.settled,
            k.deps_prefix + job_id,
            k.followed,
        ],
        [now, job_id, retention_ms, results_channel],
    )


def enqueue_waiting(k: QueueKeys, now: str, specs: Sequence[JobSpec]) -> ScriptCall:
    return ScriptCall(
        "enqueue_waiting", [k.waiting, k.seq], [now, k.job_prefix, k.deps_prefix, waiting_header(specs)]
    )


def link(k: QueueKeys, now: str, children: Mapping[str, Sequence[str]]) -> ScriptCall:
    """``children``: parent id (of this queue) -> ``"<child queue> <child id>"`` lines."""
    return ScriptCall("link", [k.settled, k.followed], [now, k.job_prefix, json.dumps(children)])


def settle(
    k: QueueKeys,
    now: str,
    *,
    parent_id: str,
    parent_status: str,
    parent_result: str,
    retention_ms: int,
    channel: str,
    results_channel: str,
    children: Sequence[str],
) -> ScriptCall:
    return ScriptCall(
        "settle",
        [k.pending, k.scheduled, k.waiting, k.cancelled, k.settled, k.seq, k.followed, lanes_of(k).zset],
        [
            now,
            k.job_prefix,
            k.deps_prefix,
            parent_id,
            parent_status,
            parent_result,
            retention_ms,
            channel,
            k.queue,
            results_channel,
            MAX_ERROR_HISTORY,
            lanes_of(k).prefix,
            *children,
        ],
    )


def watch(k: QueueKeys, now: str, job_id: str) -> ScriptCall:
    return ScriptCall("watch", [k.job(job_id), k.followed], [now, job_id])


def requeue_dead(
    k: QueueKeys,
    now: str,
    job_ids: Sequence[str] | None,
    limit: int,
    channel: str,
    *,
    lane: bool = False,
    skip: int = 0,
) -> ScriptCall:
    """Dead jobs back to ``k``'s pending line: a limit lane's (``lane``), or the queue's own,
    which a limited job never joins (it would run outside its limits: it is skipped, and
    ``skip`` passes over those an earlier call skipped). Replies [moved, skipped]."""
    ids = list(job_ids or ())
    keys = [k.pending, k.scheduled, k.retry, k.dead, k.seq] + [k.job(i) for i in ids]
    mode = "all" if job_ids is None else "ids"
    where = "lane" if lane else "plain"
    args: list[str | int] = [now, k.job_prefix, mode, limit, channel, k.queue, where, skip, *ids]
    return ScriptCall("requeue_dead", keys, args)


def purge_dead(
    k: QueueKeys,
    job_ids: Sequence[str] | None,
    limit: int,
    *,
    now: str = "",
    older_than_ms: int | None = None,
) -> ScriptCall:
    ids = list(job_ids or ())
    mode = "all" if job_ids is None else "ids"
    age = "" if older_than_ms is None else older_than_ms
    return ScriptCall(
        "purge_dead", [k.dead] + [k.job(i) for i in ids], [k.job_prefix, mode, limit, now, age, *ids]
    )


def prune(k: QueueKeys, now: str, retention_ms: int, limit: int) -> ScriptCall:
    return ScriptCall("prune", [k.completed, k.cancelled], [now, retention_ms, limit, k.job_prefix])


def activity(k: QueueKeys, now: str, window_ms: int) -> ScriptCall:
    return ScriptCall(
        "activity", [k.pending, k.scheduled, k.retry, k.completed, k.dead], [now, k.job_prefix, window_ms]
    )


def idempotency_begin(key: str, now: str, owner: str, ttl_ms: int) -> ScriptCall:
    return ScriptCall("idempotency_begin", [key], [now, owner, ttl_ms])


def idempotency_end(key: str, now: str, owner: str, done: bool, ttl_ms: int) -> ScriptCall:
    return ScriptCall("idempotency_end", [key], [now, owner, "1" if done else "0", ttl_ms])


def schedules_register(
    key: str, now: str, ttl_ms: int, retention_ms: int, entries: Sequence[tuple[str, str]]
) -> ScriptCall:
    """``entries``: (schedule name, definition JSON) pairs."""
    return ScriptCall(
        "schedules_register", [key], [now, ttl_ms, retention_ms, *(x for pair in entries for x in pair)]
    )


def schedules_mark(key: str, name: str, tick_ms: int) -> ScriptCall:
    return ScriptCall("schedules_mark", [key], [name, tick_ms])


def pause(k: QueueKeys, now: str) -> ScriptCall:
    return ScriptCall("pause", [k.paused, k.parked, k.parkers], [now])


def resume(k: QueueKeys, now: str, channel: str) -> ScriptCall:
    return ScriptCall("resume", [k.paused], [now, channel, k.queue])


def cancel_active(
    k: QueueKeys,
    now: str,
    job_id: str,
    *,
    retention_ms: int,
    reason: ErrorInfo,
    channel: str,
    results_channel: str,
) -> ScriptCall:
    return ScriptCall(
        "cancel_active",
        [k.active, k.cancelled, k.job(job_id), k.settled, k.followed],
        [now, job_id, retention_ms, encode_error(reason), MAX_ERROR_HISTORY, channel, results_channel],
    )
