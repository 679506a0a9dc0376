"""``enqueue_flow`` and ``wait_finished`` on Redis (ADRs 0115-0117).

A dependency batch is stored in one MULTI/EXEC of per-queue scripts: ``enqueue.lua`` for
jobs without parents, ``enqueue_waiting.lua`` for the others, ``link.lua`` on each
parent's queue. Parents that had finished already are settled right after (or by the
recover sweep, should this process die first).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pqueue.broker_flows import plan_flow, wait_delay
from pqueue.brokers.redis import calls, scripts
from pqueue.brokers.redis.codec import decode_job
from pqueue.brokers.redis.core import translated
from pqueue.brokers.redis.inspector import RedisInspector
from pqueue.brokers.result_waiters import ResultWaiters
from pqueue.errors import JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import EnqueueResult, Job, JobSpec, JobStatus

SUBSCRIBE_TIMEOUT = 5.0
"""Seconds ``wait_finished`` waits for its subscription before it reads the job anyway."""

_FINAL = frozenset(s.value for s in JobStatus if s.is_final)


class RedisFlows(RedisInspector):
    """Dependencies and result waiting over the Redis layout."""

    _results: ResultWaiters | None = None

    async def _queues_of(self, job_ids: Sequence[str]) -> dict[str, str]:
        """Job id -> its queue, for the ids that exist (one pipelined round trip)."""
        queues = await self.registered_queues()
        ids = [i for i in job_ids if is_job_id(i)]
        if not queues or not ids:
            return {}
        found = await self.run_many([("EXISTS", self.queue(q).job(i)) for i in ids for q in queues])
        where: dict[str, str] = {}
        for n, exists in enumerate(found):
            if int(exists):
                where.setdefault(ids[n // len(queues)], queues[n % len(queues)])
        return where

    @translated
    async def enqueue_flow(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        plan = plan_flow(specs)
        where = await self._queues_of(plan.external)
        missing = [p for p in plan.external if p not in where]
        if missing:
            raise JobNotFound(f"depends_on names no job with id {missing[0]!r}; nothing was stored")
        where.update((s.id, s.queue) for s in specs)
        now, channel = self.now_arg(), self.keys.wake_channel
        roots: dict[str, list[JobSpec]] = {}
        waiting: dict[str, list[JobSpec]] = {}
        links: dict[str, dict[str, list[str]]] = {}  # parent queue -> parent -> child lines
        for s in specs:
            (waiting if s.depends_on else roots).setdefault(s.queue, []).append(s)
            for parent in s.depends_on:
                links.setdefault(where[parent], {}).setdefault(parent, []).append(f"{s.queue} {s.id}")
        batch: list[Any] = [("SADD", self.keys.queues, *sorted({s.queue for s in specs}))]
        order: list[list[JobSpec]] = []
        for queue, group in roots.items():
            batch.append(calls.enqueue(self.queue(queue), group, now, channel, self.keys.handoff_prefix))
            order.append(group)
        for queue, group in waiting.items():
            batch.append(calls.enqueue_waiting(self.queue(queue), now, group))
            order.append(group)
        batch += [calls.link(self.queue(queue), now, children) for queue, children in links.items()]
        replies = await scripts.run_atomic(self.client, batch)
        results: dict[str, EnqueueResult] = {}
        for group, reply in zip(order, replies[1 : 1 + len(order)], strict=True):
            for s, outcome in zip(group, reply, strict=True):
                created = outcome == 1
                results[s.id] = EnqueueResult(s.id if created or outcome == 0 else str(outcome), created)
        for queue, reply in zip(links, replies[1 + len(order) :], strict=True):
            finished, _gone = reply
            if finished:
                await self.settle_or_defer(queue, finished)
        stored = [results[s.id] for s in specs]
        short = await self._replicas.shortfall(roots.keys() | waiting.keys() | links.keys())
        if short is not None:
            raise short.error([r.id for r in stored])
        return stored

    @translated
    async def wait_finished(self, job_id: str, timeout: float) -> Job | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        queue, _ = await self.steps(self._locate(job_id))
        waiters = self._results
        if waiters is None:  # the finishing scripts publish watched ids on the results channel
            waiters = self._results = ResultWaiters()
            self._hub.register(self.keys.results_channel, waiters.wake, lambda: waiters.wake(None))
        await self._hub.start(min(timeout, SUBSCRIBE_TIMEOUT))
        event = waiters.add(job_id)
        k = self.queue(queue)
        try:
            while True:
                event.clear()
                status = await self.run(calls.watch(k, self.now_arg(), job_id))
                if status == "":
                    raise JobNotFound(f"no job with id {job_id!r}")
                if status in _FINAL:
                    return await self._read(queue, job_id)
                try:
                    async with asyncio.timeout(wait_delay(end - loop.time())):
                        await event.wait()
                except TimeoutError:
                    return None
                job = await self._read(queue, job_id)
                if job.status.is_final:
                    return job
        finally:
            waiters.remove(job_id, event)

    async def _read(self, queue: str, job_id: str) -> Job:
        [fields] = await self.run_many([("HGETALL", self.queue(queue).job(job_id))])
        if not fields:
            raise JobNotFound(f"no job with id {job_id!r}")
        return decode_job(job_id, queue, fields)
