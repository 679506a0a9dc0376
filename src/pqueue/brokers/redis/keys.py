"""Redis key names: pure functions of the key prefix and the queue (docs/redis.md).

Every key of one queue carries the queue as its hash tag (``<prefix>:{<queue>}:...``),
so each Lua script, which touches one queue's keys only, stays within one Redis Cluster
slot. Queue names cannot contain ``{``, ``}`` or ``:`` (``pqueue.spec``) and the prefix
cannot contain braces (:func:`validate_prefix`), so the tag is always the queue name.
Global keys (the queue registry, workers, idempotency keys) are only ever touched by
single-key commands or single-key scripts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from pqueue.errors import ConfigError

DEFAULT_PREFIX = "pqueue"

_PREFIX_RE = re.compile(r"^[A-Za-z0-9_.\-]+(:[A-Za-z0-9_.\-]+)*\Z")


def validate_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is usable as a key prefix, else raise :class:`ConfigError`.

    Letters, digits, ``_ . -`` and ``:`` separators: no braces (they would become the
    hash tag) and no glob characters (cleanup matches ``<prefix>:*``).
    """
    if not isinstance(prefix, str) or len(prefix) > 100 or not _PREFIX_RE.match(prefix):
        raise ConfigError(
            f"redis key prefix {prefix!r} is invalid: use 1-100 letters, digits, '_', '.', '-' "
            "and ':' as a separator"
        )
    return prefix


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The keys of one queue; all share the hash tag ``{<queue>}``."""

    queue: str
    pending: str
    scheduled: str
    retry: str
    active: str
    completed: str
    cancelled: str
    dead: str
    seq: str
    parked: str
    parkers: str
    paused: str
    job_prefix: str
    unique_prefix: str
    waiting: str
    """zset id -> created ms: jobs waiting for parents (ADR 0115)."""
    settled: str
    """zset id -> finished ms: finished parents whose children are not all told (ADR 0116)."""
    deps_prefix: str
    """Sets ``deps:<child id>``: the parents a waiting job still waits for."""
    followed: str
    """Set of unfinished jobs with dependants or a ``result()`` waiter: the finishing scripts
    look closer only at these (one SCARD per call while it is empty)."""

    def job(self, job_id: str) -> str:
        """The hash holding one job of this queue."""
        return self.job_prefix + job_id

    def unique(self, unique_key: str) -> str:
        """The string holding a unique key of this queue."""
        return self.unique_prefix + unique_key


@lru_cache(maxsize=4096)
def queue_keys(prefix: str, queue: str) -> QueueKeys:
    """The keys of ``queue`` under ``prefix`` (cached: they are built on every call)."""
    base = f"{prefix}:{{{queue}}}:"
    return QueueKeys(
        queue=queue,
        pending=base + "pending",
        scheduled=base + "scheduled",
        retry=base + "retry",
        active=base + "active",
        completed=base + "completed",
        cancelled=base + "cancelled",
        dead=base + "dead",
        seq=base + "seq",
        parked=base + "parked",
        parkers=base + "parkers",
        paused=base + "paused",
        job_prefix=base + "job:",
        unique_prefix=base + "unique:",
        waiting=base + "waiting",
        settled=base + "settled",
        deps_prefix=base + "deps:",
        followed=base + "followed",
    )


PRIO_SUFFIX = ":prio"
"""A line's prioritized jobs live in the zset ``<its pending list>:prio`` (ADR 0145; the Lua
scripts derive it the same way, ``pq_prio_key`` in lua/_lib.lua)."""


def prioritized(k: QueueKeys) -> QueueKeys:
    """``k`` with ``pending`` naming the zset of its line's prioritized jobs, scored by
    priority then seq (the inspector lists and counts it beside the pending list)."""
    return replace(k, pending=k.pending + PRIO_SUFFIX)


def is_prioritized(pending: str) -> bool:
    """Whether a ``pending`` key is a line's prioritized zset (see :func:`prioritized`)."""
    return pending.endswith(PRIO_SUFFIX)


@dataclass(frozen=True, slots=True)
class GlobalKeys:
    """Keys that belong to no queue."""

    queues: str
    """Set of every queue name that has held a job."""
    workers: str
    """Hash worker id -> JSON registration."""
    meta: str
    """Hash with the data layout version."""
    idempotency_prefix: str
    """Strings ``<prefix>:idem:<key>``, one per idempotency key."""
    wake_channel: str
    """Pub/sub channel; the message is the name of a queue that gained due jobs."""
    handoff_prefix: str
    """Pub/sub channels ``<prefix>:handoff:<broker id>``: leases handed to parked claimers."""
    paused: str
    """Set of paused queue names: the index ``paused_queues`` reads (each queue's own
    ``paused`` key is what claims obey)."""
    cancel_channel: str
    """Pub/sub channel; the message is the id of a job cancelled while running."""
    results_channel: str
    """Pub/sub channel; the message is the id of a finished job a ``result()`` waits for."""

    def idempotency(self, key: str) -> str:
        return self.idempotency_prefix + key


def global_keys(prefix: str) -> GlobalKeys:
    """The global keys under ``prefix``."""
    return GlobalKeys(
        queues=f"{prefix}:queues",
        workers=f"{prefix}:workers",
        meta=f"{prefix}:meta",
        idempotency_prefix=f"{prefix}:idem:",
        wake_channel=f"{prefix}:wake",
        handoff_prefix=f"{prefix}:handoff:",
        paused=f"{prefix}:paused",
        cancel_channel=f"{prefix}:cancel",
        results_channel=f"{prefix}:results",
    )


def schedules_key(prefix: str) -> str:
    """Hash schedule name -> registration and last run (``lua/schedules_register.lua``)."""
    return f"{prefix}:schedules"


@dataclass(frozen=True, slots=True)
class Lanes:
    """Where a queue's limited jobs live (ADR 0110, lua/_limits.lua)."""

    zset: str
    """``<prefix>:{<queue>}:lanes``: limit key -> when its lane may next be claimable (ms)."""
    prefix: str
    """``<prefix>:{<queue>}:lane:``: a lane's keys are ``<this><limit key>:<name>``."""


@lru_cache(maxsize=4096)
def lanes(prefix: str, queue: str) -> Lanes:
    """The lane keys of ``queue`` under ``prefix``."""
    base = f"{prefix}:{{{queue}}}:"
    return Lanes(base + "lanes", base + "lane:")


def lanes_of(k: QueueKeys) -> Lanes:
    """The lane keys of the queue whose keys are ``k`` (they share its ``<prefix>:{<queue>}:``)."""
    base = k.seq.removesuffix("seq")
    return Lanes(base + "lanes", base + "lane:")


@lru_cache(maxsize=4096)
def lane_keys(prefix: str, queue: str, limit_key: str) -> QueueKeys:
    """The keys a limited job of ``queue`` waits and runs in: its lane's own pending,
    scheduled, retry and active (and a parked set nobody parks in, so no hand-off), the
    queue's for everything else (job hashes, seq, finished sets, unique keys)."""
    lane = lanes(prefix, queue).prefix + limit_key + ":"
    return replace(
        queue_keys(prefix, queue),
        pending=lane + "pending",
        scheduled=lane + "scheduled",
        retry=lane + "retry",
        active=lane + "active",
        parked=lane + "parked",
        parkers=lane + "parkers",
    )
