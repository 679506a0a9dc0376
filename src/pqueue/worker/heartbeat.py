"""The heartbeat: extend every held lease and refresh the worker's registration.

Runs on the worker's side thread (see :mod:`pqueue.worker.sidecar`), never on the
loop handlers run on, so a handler that blocks the loop or spins the CPU in Python
keeps its lease (the side thread gets the GIL at every switch interval).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from pqueue.broker import FullBroker, WorkerInfo
from pqueue.job import JobStatus, Lease
from pqueue.worker.leases import LeaseBook

log = logging.getLogger("pqueue.worker")


class Heartbeat:
    """One beat extends every lease in ``book`` to now + ``lease`` and re-registers the worker."""

    def __init__(
        self,
        broker: FullBroker,
        book: LeaseBook,
        info: WorkerInfo,
        *,
        lease: float,
        on_lost: Callable[[list[Lease]], None] = lambda leases: None,
        on_cancel: Callable[[list[str]], None] = lambda job_ids: None,
    ) -> None:
        self.broker = broker
        self.book = book
        self.info = info
        self.lease = lease
        self.on_lost = on_lost
        self.on_cancel = on_cancel
        self.beats = 0

    async def beat(self) -> None:
        leases, keys = self.book.snapshot()
        if leases:
            oks = await self.broker.extend(leases, lease_for=self.lease)
            refused = [lease for lease, ok in zip(leases, oks, strict=True) if not ok]
            lost = self.book.mark_lost(refused) if refused else []
            if lost:
                lost = await self._not_cancelled(lost)
            if lost:
                log.warning(
                    "lease lost for %d job(s) (%s): they may run again elsewhere",
                    len(lost),
                    ", ".join(lease.job.id for lease in lost[:5]),
                )
                self.on_lost(lost)
        for key, owner in keys:  # keep the in-flight hold of running idempotent jobs alive
            await self.broker.idempotency_begin(key, owner, self.lease)
        await self.broker.register_worker(self.info, ttl=self.lease)
        self.beats += 1

    async def _not_cancelled(self, lost: list[Lease]) -> list[Lease]:
        """Hand leases refused because their job was cancelled while running to ``on_cancel``
        (the fallback when the broker's push message did not arrive); return the others."""
        cancelled: list[str] = []
        for lease in lost:
            with contextlib.suppress(Exception):  # unreadable: reported as lost below
                if (await self.broker.get_job(lease.job.id)).status is JobStatus.CANCELLED:
                    cancelled.append(lease.job.id)
        if cancelled:
            self.on_cancel(cancelled)
        return [lease for lease in lost if lease.job.id not in cancelled]

    async def goodbye(self) -> None:
        await self.broker.unregister_worker(self.info.id)
