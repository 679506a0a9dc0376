"""Worker settings, validated once: what a worker consumes and how it paces itself."""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass
from enum import StrEnum

from pqueue.errors import ConfigError
from pqueue.ids import new_id
from pqueue.priority import QueuesArg, QueueSelection

DEFAULT_QUEUES: dict[str, int] = {"critical": 6, "default": 3, "low": 1}
DEFAULT_PREFETCH_PER_SLOT = 20
"""The default ``prefetch`` is this many jobs per slot (still bounded by ``prefetch_window``)."""


class UnknownTypePolicy(StrEnum):
    """What a worker does with a job whose type no handler is registered for."""

    RETRY = "retry"
    """Hand it back unrun with a growing delay (no attempt burnt): a worker that knows the
    type -- e.g. after a rolling deploy -- will run it. The default."""
    DEAD = "dead"
    """Dead-letter it at once with an ``UnknownJobType`` error."""


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a number of seconds, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """Everything a worker needs besides its DSN and router; build with :meth:`build`."""

    worker_id: str
    concurrency: int
    selection: QueueSelection
    lease: float
    shutdown_timeout: float
    unknown_type: UnknownTypePolicy
    poll_interval: float
    promote_interval: float
    recover_interval: float
    prune_interval: float
    idempotency_ttl: float
    idempotency_busy_delay: float
    unknown_type_max_delay: float
    maintenance: bool
    unknown_type_max_age: float = 7 * 24 * 3600.0
    """Seconds after enqueue that a job of a type no worker knows is dead-lettered (policy retry)."""
    prefetch: int = 0
    """The most jobs held beyond ``concurrency``, waiting for a slot (0: none)."""
    ack_interval: float = 0.002
    """Under load, seconds a finished job may wait for others to share its ack (0: never)."""
    prefetch_window: float = 0.05
    """Hold only the jobs expected to start within this many seconds (see :mod:`.pacing`)."""
    cancel_grace: float = 5.0
    """Seconds a sync handler may run on after its job was cancelled before it is abandoned."""
    wait_for_broker: float = 0.0
    """Seconds a starting worker waits for an unreachable broker (0: it fails at once)."""

    @property
    def beat_interval(self) -> float:
        """Leases are extended every lease/3, so two beats may be missed before expiry."""
        return self.lease / 3

    @classmethod
    def build(
        cls,
        *,
        concurrency: int = 10,
        queues: QueuesArg | None = None,
        strict: bool = False,
        lease: float = 30.0,
        shutdown_timeout: float = 30.0,
        unknown_type: UnknownTypePolicy | str = UnknownTypePolicy.RETRY,
        poll_interval: float = 1.0,
        promote_interval: float = 1.0,
        recover_interval: float | None = None,
        prune_interval: float = 60.0,
        idempotency_ttl: float = 24 * 3600.0,
        idempotency_busy_delay: float = 1.0,
        unknown_type_max_delay: float = 300.0,
        unknown_type_max_age: float = 7 * 24 * 3600.0,
        maintenance: bool = True,
        worker_id: str | None = None,
        prefetch: int | None = None,
        prefetch_window: float = 0.05,
        ack_interval: float = 0.002,
        cancel_grace: float = 5.0,
        wait_for_broker: float = 0.0,
    ) -> WorkerSettings:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"concurrency must be an int >= 1, got {concurrency!r}")
        prefetch = DEFAULT_PREFETCH_PER_SLOT * concurrency if prefetch is None else prefetch
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise ConfigError(f"prefetch must be an int >= 0, got {prefetch!r}")
        selection = QueueSelection.parse(DEFAULT_QUEUES if queues is None else queues, strict=strict)
        lease = _positive("lease", lease)
        try:
            policy = UnknownTypePolicy(unknown_type)
        except ValueError:
            raise ConfigError(f"unknown_type must be 'retry' or 'dead', got {unknown_type!r}") from None
        return cls(
            worker_id=worker_id or default_worker_id(),
            concurrency=concurrency,
            selection=selection,
            lease=lease,
            shutdown_timeout=_positive("shutdown_timeout", shutdown_timeout, allow_zero=True),
            unknown_type=policy,
            poll_interval=_positive("poll_interval", poll_interval),
            promote_interval=_positive("promote_interval", promote_interval),
            recover_interval=_positive(
                "recover_interval", recover_interval if recover_interval is not None else min(5.0, lease / 2)
            ),
            prune_interval=_positive("prune_interval", prune_interval),
            idempotency_ttl=_positive("idempotency_ttl", idempotency_ttl),
            idempotency_busy_delay=_positive(
                "idempotency_busy_delay", idempotency_busy_delay, allow_zero=True
            ),
            unknown_type_max_delay=_positive("unknown_type_max_delay", unknown_type_max_delay),
            unknown_type_max_age=_positive("unknown_type_max_age", unknown_type_max_age),
            maintenance=bool(maintenance),
            prefetch=prefetch,
            prefetch_window=_positive("prefetch_window", prefetch_window),
            ack_interval=_positive("ack_interval", ack_interval, allow_zero=True),
            cancel_grace=_positive("cancel_grace", cancel_grace, allow_zero=True),
            wait_for_broker=_positive("wait_for_broker", wait_for_broker, allow_zero=True),
        )


def default_worker_id() -> str:
    """``host:pid:random`` -- unique even when a pid is reused or two workers share a process."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()[-8:]}"
