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
from dataclasses import dataclass
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
    job_prefix: str
    unique_prefix: str

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
        job_prefix=base + "job:",
        unique_prefix=base + "unique:",
    )


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
    )
