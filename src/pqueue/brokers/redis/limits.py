"""Reading the Redis backend's limit lanes for stats and counts (ADR 0110, lua/_limits.lua)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pqueue.brokers.redis import calls
from pqueue.brokers.redis.core import RedisCore, translated
from pqueue.brokers.redis.keys import prioritized
from pqueue.brokers.redis.scripts import Command, pipelined
from pqueue.job import JobStatus
from pqueue.limits import Limit, LimitState, refill
from pqueue.steps import Steps

Lane = tuple[str, str]
ADMIN_BATCH = 1000
"""Most jobs one requeue script run moves (as the inspector's batches)."""


class RedisLimits(RedisCore):
    """The lanes of every queue: what they hold and their token buckets."""

    def reready(self, lanes_touched: Iterable[tuple[str, str | None]]) -> list[tuple[Any, ...]]:
        """Commands that make the limited lanes a job left (or came back to) be looked at by
        the next claim (score 0; ADR 0110, lua/_limits.lua). XX: an emptied lane stays gone.
        Unlimited jobs (key None) need none."""
        return [
            ("ZADD", self.lanes(queue).zset, "XX", "LT", 0, key)
            for queue, key in dict.fromkeys(lanes_touched)
            if key is not None
        ]

    async def _lanes(self, queues: list[str]) -> list[Lane]:
        """Every (queue, limit key) listed in a queue's lanes zset."""
        return await self.steps(self.lanes_steps(queues))

    def lanes_steps(self, queues: list[str]) -> Steps[list[Command], list[Any], list[Lane]]:
        """``_lanes`` as steps (pqueue.steps), for the inspector's listings too."""
        if not queues:
            return []
        listed = yield from pipelined([("ZRANGE", self.lanes(q).zset, 0, -1) for q in queues])
        return [(q, key) for q, keys in zip(queues, listed, strict=True) for key in keys]

    async def _lane_sizes(self, lanes: list[Lane]) -> list[tuple[int, int, int, int]]:
        """Per lane: pending (its list and prioritized zset, ADR 0145), scheduled, active and
        retry jobs."""
        commands: list[tuple[Any, ...]] = []
        for queue, key in lanes:
            k = self.keys_for(queue, key)
            commands += [
                ("LLEN", k.pending),
                ("ZCARD", prioritized(k).pending),
                ("ZCARD", k.scheduled),
                ("ZCARD", k.active),
                ("ZCARD", k.retry),
            ]
        found = [int(n) for n in await self.run_many(commands)] if commands else []
        return [
            (found[i] + found[i + 1], found[i + 2], found[i + 3], found[i + 4])
            for i in range(0, len(found), 5)
        ]

    async def add_lane_counts(self, counts: Mapping[str, dict[JobStatus, int]]) -> None:
        """Add the jobs waiting and running in lanes to ``counts`` (per queue and status)."""
        lanes = await self._lanes(list(counts))
        statuses = (JobStatus.PENDING, JobStatus.SCHEDULED, JobStatus.ACTIVE, JobStatus.RETRY)
        for (queue, _), sizes in zip(lanes, await self._lane_sizes(lanes), strict=True):
            for status, n in zip(statuses, sizes, strict=True):
                counts[queue][status] += n

    async def requeue_dead_limited(self, queue: str, job_ids: Sequence[str] | None) -> int:
        """Requeue ``queue``'s dead limited jobs (these ids, or all) into their lanes, so they
        keep their limits; the caller requeues the rest as usual. Free when the queue has
        never had a limited job (one EXISTS)."""
        zset = self.lanes(queue).zset
        if not await self.client.exists(zset):
            return 0
        k = self.queue(queue)
        if job_ids is None:
            [dead] = await self.run_many([("ZRANGE", k.dead, 0, -1)])
            ids: list[str] = list(dead)
        else:
            ids = list(job_ids)
        if not ids:
            return 0
        keys = await self.run_many([("HGET", k.job(i), "limit_key") for i in ids])
        by_lane: dict[str, list[str]] = {}
        for job_id, limit_key in zip(ids, keys, strict=True):
            if limit_key is not None:
                by_lane.setdefault(limit_key, []).append(job_id)
        if not by_lane:
            return 0
        now, channel = self.now_arg(), self.keys.wake_channel
        commands: list[Any] = [("ZADD", zset, "LT", 0, key) for key in by_lane]
        for start in range(0, max(len(v) for v in by_lane.values()), ADMIN_BATCH):
            commands += [
                calls.requeue_dead(
                    self.keys_for(queue, key),
                    now,
                    lane_ids[start : start + ADMIN_BATCH],
                    ADMIN_BATCH,
                    channel,
                    lane=True,
                )
                for key, lane_ids in by_lane.items()
                if lane_ids[start : start + ADMIN_BATCH]
            ]
        moved = await self.run_many(commands)
        return sum(int(reply[0]) for reply in moved[len(by_lane) :])

    async def _waiting_limits(self, lanes: list[Lane]) -> list[str | None]:
        """Per lane, the limit its first waiting job carries (None when none waits)."""
        commands: list[tuple[Any, ...]] = []
        for queue, key in lanes:
            k = self.keys_for(queue, key)
            commands += [
                ("ZRANGE", prioritized(k).pending, 0, 0),
                ("LINDEX", k.pending, 0),
                ("ZRANGE", k.scheduled, 0, 0),
                ("ZRANGE", k.retry, 0, 0),
            ]
        found = await self.run_many(commands)
        heads: list[tuple[str, str] | None] = []
        for n, (queue, _) in enumerate(lanes):
            prio, pending, scheduled, retry = found[4 * n : 4 * n + 4]
            first = (
                next(iter(prio), None) or pending or next(iter(scheduled), None) or next(iter(retry), None)
            )
            heads.append(None if first is None else (queue, first))
        wanted = [("HGET", self.queue(q).job(i), "limit") for q, i in filter(None, heads)]
        texts = iter(await self.run_many(wanted) if wanted else [])
        return [None if head is None else next(texts) for head in heads]

    @translated
    async def limit_groups(self) -> list[LimitState]:
        """The lanes that hold a waiting or active job (ADR 0140): an emptied lane stays in
        its queue's lanes zset until a claim visits it, and its bucket outlives it, but a
        group without jobs is not listed, as on the other backends."""
        listed = await self._lanes(await self.registered_queues())
        counted = zip(listed, await self._lane_sizes(listed), strict=True)
        live = [(lane, size) for lane, size in counted if any(size)]
        if not live:
            return []
        lanes, sizes = [lane for lane, _ in live], [size for _, size in live]
        states = await self.run_many(
            [("HMGET", self.lanes(q).prefix + key + ":state", "limit", "tokens", "at") for q, key in lanes]
        )
        unclaimed = [i for i, (text, _, _) in enumerate(states) if not text]
        if unclaimed:  # the state's limit is written by the lane's first claim
            texts = await self._waiting_limits([lanes[i] for i in unclaimed])
            for i, text in zip(unclaimed, texts, strict=True):
                states[i] = [text, *states[i][1:]]
        now_ms = await self.now_ms()
        out: list[LimitState] = []
        for (queue, key), (pending, scheduled, active, retry), (text, tokens, at) in zip(
            lanes, sizes, states, strict=True
        ):
            limit = Limit.from_text(key, text) if text else Limit(key)
            have = None
            if limit.rate is not None:
                have = limit.burst
                if tokens is not None and at is not None:
                    have = refill(float(tokens), int(at) / 1000, now_ms / 1000, limit)
            out.append(
                LimitState(
                    queue, key, active, pending + scheduled + retry, limit.concurrency, limit.rate, have
                )
            )
        return out
