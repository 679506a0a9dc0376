"""The leases a worker holds, shared between its event loop and its heartbeat thread."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pqueue.job import Lease


class LeaseBook:
    """Thread-safe record of held leases and of the idempotency keys their jobs hold.

    The worker loop adds leases when it claims and removes them once settled; the
    heartbeat thread extends every lease listed here and refreshes every key.

    A lease whose settlement (ack, fail, release) has been sent is marked *settling*
    until the reply comes back and :meth:`remove` drops it. The heartbeat keeps extending
    it (a settlement retried through an outage needs its lease), but a refused extension
    of a settling lease is no loss: the settlement most likely landed first (an ack
    between the heartbeat's snapshot and its extend), and the settlement's own reply says
    whether the lease was lost. Without the mark the heartbeat now and then reported
    such a job as lost, e.g. about a second (one beat) after a busy worker started
    (ADR 0062).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}
        self._keys: dict[str, tuple[str, str]] = {}  # job id -> (idempotency key, owner)
        self._lost: set[str] = set()
        self._settling: set[str] = set()  # job ids whose settlement is in flight

    def __len__(self) -> int:
        return len(self._leases)

    def add(self, leases: Iterable[Lease]) -> None:
        with self._lock:
            for lease in leases:
                self._leases[lease.job.id] = lease

    def remove(self, leases: Iterable[Lease]) -> None:
        with self._lock:
            for lease in leases:
                job_id = lease.job.id
                held = self._leases.get(job_id)
                if held is not None and held.token == lease.token:
                    del self._leases[job_id]
                    self._keys.pop(job_id, None)
                    self._lost.discard(job_id)
                    self._settling.discard(job_id)

    def settling(self, leases: Iterable[Lease]) -> None:
        """Mark leases whose settlement is about to be sent (before sending it)."""
        with self._lock:
            for lease in leases:
                held = self._leases.get(lease.job.id)
                if held is not None and held.token == lease.token:
                    self._settling.add(lease.job.id)

    def hold_key(self, lease: Lease, key: str, owner: str) -> None:
        with self._lock:
            self._keys[lease.job.id] = (key, owner)

    def drop_key(self, lease: Lease) -> None:
        with self._lock:
            self._keys.pop(lease.job.id, None)

    def snapshot(self) -> tuple[list[Lease], list[tuple[str, str]]]:
        """The leases to extend and the (key, owner) pairs to refresh, right now."""
        with self._lock:
            return list(self._leases.values()), list(self._keys.values())

    def mark_lost(self, leases: Iterable[Lease]) -> list[Lease]:
        """Record leases the broker refused to extend; returns those really lost: still
        held, not being settled, and not reported before."""
        lost: list[Lease] = []
        with self._lock:
            for lease in leases:
                job_id = lease.job.id
                held = self._leases.get(job_id)
                if held is None or held.token != lease.token or job_id in self._settling:
                    continue
                if job_id not in self._lost:
                    self._lost.add(lease.job.id)
                    lost.append(lease)
        return lost

    def holds(self, job_id: str) -> bool:
        """Whether a lease of this job is held (running, waiting for a slot, or settling)."""
        with self._lock:
            return job_id in self._leases

    def is_lost(self, lease: Lease) -> bool:
        with self._lock:
            return lease.job.id in self._lost
