"""Telling dependants that a parent finished, across queues (ADR 0116).

The finishing script (ack, fail, recover, cancel, link) has recorded the parent in its
queue's ``settled`` set; here the parent's status, result and children are read, one
``settle.lua`` runs per child queue (idempotent: it removes the parent from each child's
set of unfinished parents only once), children cancelled in turn are settled the same
way, and the parent leaves ``settled``. A crash anywhere in between leaves the record,
which :meth:`RedisSettler.sweep_settled` (run by ``recover``) finishes later.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from redis.exceptions import RedisError

from pqueue.brokers.redis import calls
from pqueue.brokers.redis.core import RedisCore

log = logging.getLogger("pqueue.redis")

SWEEP_AFTER_MS = 5000
"""How old a ``settled`` record must be before the sweep finishes it: younger ones are
being handled by the call that made them (a repeat would be harmless, only wasted)."""
SWEEP_BATCH = 100
"""Parents one sweep takes per queue."""


class RedisSettler(RedisCore):
    """The second step of a release across queues, and the sweep that completes it."""

    async def settle(self, queue: str, parent_ids: Sequence[str]) -> None:
        """Tell the children of these finished parents of ``queue``; then forget them."""
        work = [(queue, parent) for parent in parent_ids]
        while work:
            queue, parent = work.pop()
            k = self.queue(queue)
            [(status, result, children)] = await self.run_many(
                [("HMGET", k.job(parent), "status", "result", "children")]
            )
            by_queue: dict[str, list[str]] = {}
            for line in (children or "").splitlines():
                child_queue, _, child = line.partition(" ")
                if child:
                    by_queue.setdefault(child_queue, []).append(child)
            if status in ("completed", "dead", "cancelled") and by_queue:
                batch = [
                    calls.settle(
                        self.queue(child_queue),
                        self.now_arg(),
                        parent_id=parent,
                        parent_status=status,
                        parent_result="null" if result is None else result,
                        retention_ms=self.retention_ms,
                        channel=self.keys.wake_channel,
                        results_channel=self.keys.results_channel,
                        children=ids,
                    )
                    for child_queue, ids in by_queue.items()
                ]
                replies = await self.run_many(batch)
                for child_queue, cancelled in zip(by_queue, replies, strict=True):
                    work += [(child_queue, child) for child in cancelled]
            await self.run_many([("ZREM", k.settled, parent)])

    async def settle_or_defer(self, queue: str, parent_ids: Sequence[str]) -> None:
        """:meth:`settle` right after a finishing script; if Redis fails meanwhile, the
        finish stands (it is done) and the ``settled`` record leaves the rest to the sweep."""
        try:
            await self.settle(queue, parent_ids)
        except (RedisError, OSError) as exc:
            log.warning("pqueue: dependants of %d finished job(s) will be released by the next "
                        "recover sweep (%s)", len(parent_ids), exc)  # fmt: skip

    async def sweep_settled(self) -> int:
        """Finish releases a crash left half done (``settled`` records older than a few
        seconds); returns how many parents it settled."""
        done = 0
        for queue in await self.queues_with_work(["settled"], older_than_ms=SWEEP_AFTER_MS):
            until = await self.now_ms() - SWEEP_AFTER_MS
            [parents] = await self.run_many(
                [("ZRANGE", self.queue(queue).settled, "-inf", until, "BYSCORE", "LIMIT", 0, SWEEP_BATCH)]
            )
            await self.settle(queue, parents)
            done += len(parents)
        return done
