"""Inspection and admin over the Redis layout: the :class:`~pqueue.broker.Inspector` half.

Lookups by job id visit every registered queue in one pipelined round trip (a job's key
carries its queue's hash tag, and ids carry no queue); docs/adr/0002-redis-job-lookup.md
explains why there is no global id index.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from pqueue.broker import (
    DONE_WINDOW,
    JobPage,
    JobScan,
    QueueActivity,
    QueueCounts,
    WorkerInfo,
    admin_filter,
    in_slice,
    page_request,
)
from pqueue.brokers.redis import calls, eviction
from pqueue.brokers.redis.codec import decode_job, decode_worker, encode_worker, to_ms
from pqueue.brokers.redis.core import LAYOUT_VERSION, ping, translated
from pqueue.brokers.redis.keys import QueueKeys, is_prioritized, prioritized
from pqueue.brokers.redis.limits import RedisLimits
from pqueue.brokers.redis.scripts import Command, pipelined
from pqueue.brokers.redis.settle import RedisSettler
from pqueue.errors import CorruptJob, JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import Job, JobStatus, unreadable_job
from pqueue.steps import Steps

ADMIN_BATCH = 1000
"""Jobs one admin script run handles (requeue/purge of a whole queue loop over batches)."""
TYPE_SCAN_BATCH = 500
"""Ids read per round trip when :meth:`RedisInspector.list_jobs` filters by job type."""

_ZSETS = {
    JobStatus.SCHEDULED: "scheduled",
    JobStatus.RETRY: "retry",
    JobStatus.ACTIVE: "active",
    JobStatus.DEAD: "dead",
    JobStatus.COMPLETED: "completed",
    JobStatus.CANCELLED: "cancelled",
    JobStatus.WAITING: "waiting",
}
_RETAINED = (JobStatus.COMPLETED, JobStatus.CANCELLED)
_IN_LANES = (JobStatus.PENDING, JobStatus.SCHEDULED, JobStatus.RETRY, JobStatus.ACTIVE)
"""Statuses whose limited jobs sit in their lane's keys instead of the queue's (ADR 0110)."""
_FINISHED = (*_RETAINED, JobStatus.DEAD)  # zsets scored by the time the job finished
_STATUS_VALUES = frozenset(s.value for s in JobStatus)


class RedisInspector(RedisSettler, RedisLimits):
    """get, count, page, cancel, requeue, purge, prune; worker registrations."""

    def _locate(self, job_id: str) -> Steps[list[Command], list[Any], tuple[str, dict[str, str]]]:
        """The queue and hash of a job; :class:`JobNotFound` if no queue holds it."""
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r} (not a job id)")
        queues = yield from self.list_queues_steps()
        if queues:
            found = yield from pipelined([("HGETALL", self.queue(q).job(job_id)) for q in queues])
            for queue, fields in zip(queues, found, strict=True):
                if fields:
                    return queue, fields
        raise JobNotFound(f"no job with id {job_id!r}")

    @translated
    async def get_job(self, job_id: str) -> Job:
        return await self.steps(self.get_job_steps(job_id))

    def get_job_steps(self, job_id: str) -> Steps[list[Command], list[Any], Job]:
        """``get_job`` as steps (pqueue.steps): the asyncio broker and the sync client drive it."""
        queue, fields = yield from self._locate(job_id)
        return decode_job(job_id, queue, fields)

    @translated
    async def list_queues(self) -> list[str]:
        return await self.steps(self.list_queues_steps())

    def list_queues_steps(self) -> Steps[list[Command], list[Any], list[str]]:
        """Every queue that has held a job, sorted, as steps."""
        [names] = yield from pipelined([("SMEMBERS", self.keys.queues)])
        return sorted(names)

    @translated
    async def counts(self) -> QueueCounts:
        queues = await self.registered_queues()
        if not queues:
            return {}
        since = f"({await self.now_ms() - self.retention_ms}"
        commands: list[tuple[Any, ...]] = []
        for queue in queues:
            k = self.queue(queue)
            commands += [
                ("LLEN", k.pending),
                ("ZCARD", k.scheduled),
                ("ZCARD", k.active),
                ("ZCARD", k.retry),
                ("ZCOUNT", k.completed, since, "+inf"),
                ("ZCARD", k.dead),
                ("ZCOUNT", k.cancelled, since, "+inf"),
                ("ZCARD", k.waiting),
                ("ZCARD", prioritized(k).pending),  # pending too: prioritized jobs (ADR 0145)
            ]
        found = await self.run_many(commands)
        order = list(JobStatus)  # pending, scheduled, active, retry, completed, dead, cancelled, waiting
        width = len(order) + 1
        counts = {}
        for i, queue in enumerate(queues):
            sizes = [int(n) for n in found[i * width : (i + 1) * width]]
            sizes[0] += sizes.pop()
            counts[queue] = dict(zip(order, sizes, strict=True))
        await self.add_lane_counts(counts)  # limited jobs wait and run in lanes (ADR 0110)
        return counts

    def _size(self, k: QueueKeys, status: JobStatus, since: str) -> tuple[Any, ...]:
        if status is JobStatus.PENDING:
            return ("ZCARD" if is_prioritized(k.pending) else "LLEN", k.pending)
        key = getattr(k, _ZSETS[status])
        return ("ZCOUNT", key, since, "+inf") if status in _RETAINED else ("ZCARD", key)

    def _range(self, k: QueueKeys, status: JobStatus, since: str, start: int, count: int) -> tuple[Any, ...]:
        if status is JobStatus.PENDING:
            command = "ZRANGE" if is_prioritized(k.pending) else "LRANGE"
            return (command, k.pending, start, start + count - 1)
        key = getattr(k, _ZSETS[status])
        if status in _RETAINED:
            return ("ZRANGE", key, since, "+inf", "BYSCORE", "LIMIT", start, count)
        return ("ZRANGE", key, start, start + count - 1)

    @translated
    async def list_jobs(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> JobPage:
        return await self.steps(
            self.list_jobs_steps(status, queue=queue, type=type, limit=limit, offset=offset)
        )

    def list_jobs_steps(
        self,
        status: JobStatus,
        *,
        queue: str | None = None,
        type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Steps[list[Command], list[Any], JobPage]:
        """``list_jobs`` as steps (pqueue.steps): the asyncio broker and the sync client drive it."""
        status = page_request(status, limit, offset, queue=queue, type=type)
        queues = yield from self.list_queues_steps()
        if queue is not None:
            queues = [q for q in queues if q == queue]
        if not queues:
            return JobPage((), None)
        since = f"({(yield from self.now_ms_steps()) - self.retention_ms}"
        keys = yield from self._listed_keys(queues, status)
        sizes = [int(n) for n in (yield from pipelined([self._size(k, status, since) for k in keys]))]
        if type is not None:
            return (
                yield from self._list_of_type(
                    keys, sizes, status, since=since, job_type=type, limit=limit, offset=offset
                )
            )
        ranges: list[tuple[Any, ...]] = []
        owners: list[str] = []
        skip, want = offset, limit
        for k, size in zip(keys, sizes, strict=True):
            if want <= 0:
                break
            if skip >= size:
                skip -= size
                continue
            take = min(size - skip, want)
            ranges.append(self._range(k, status, since, skip, take))
            owners.append(k.queue)
            skip, want = 0, want - take
        found = (yield from pipelined(ranges)) if ranges else []
        jobs = yield from self._fetch(owners, found, status)
        end = offset + limit
        return JobPage(tuple(jobs), end if end < sum(sizes) else None)

    def _listed_keys(
        self, queues: list[str], status: JobStatus
    ) -> Steps[list[Command], list[Any], list[QueueKeys]]:
        """The keys a listing of ``status`` reads, in listing order: each queue's own, then
        for the statuses limited jobs wait and run in, its lanes' (ADR 0110), by limit key.
        A line's prioritized jobs are listed before its pending list (ADR 0145)."""
        if status not in _IN_LANES:
            return [self.queue(q) for q in queues]
        lanes: dict[str, list[str]] = {q: [] for q in queues}
        for queue, limit_key in (yield from self.lanes_steps(queues)):
            lanes[queue].append(limit_key)
        listed = [
            k for q in queues for k in (self.queue(q), *(self.keys_for(q, key) for key in sorted(lanes[q])))
        ]
        if status is not JobStatus.PENDING:
            return listed
        return [line for k in listed for line in (prioritized(k), k)]

    def _list_of_type(
        self,
        keys: list[QueueKeys],
        sizes: list[int],
        status: JobStatus,
        *,
        since: str,
        job_type: str,
        limit: int,
        offset: int,
    ) -> Steps[list[Command], list[Any], JobPage]:
        """A page of the jobs of one type: the ids are read in listing order, a batch at a
        time, and kept when their hash's ``type`` matches (admin reads; no type index)."""
        wanted: list[tuple[str, str]] = []
        skip = offset
        for k, size in zip(keys, sizes, strict=True):
            for start in range(0, size, TYPE_SCAN_BATCH):
                [ids] = yield from pipelined([self._range(k, status, since, start, TYPE_SCAN_BATCH)])
                if not ids:
                    break
                types = yield from pipelined([("HGET", k.job(i), "type") for i in ids])
                for job_id, found in zip(ids, types, strict=True):
                    if found != job_type:
                        continue
                    if skip:
                        skip -= 1
                    elif len(wanted) == limit:
                        return JobPage(tuple((yield from self._fetch_pairs(wanted, status))), offset + limit)
                    else:
                        wanted.append((k.queue, job_id))
        return JobPage(tuple((yield from self._fetch_pairs(wanted, status))), None)

    def _fetch(
        self, owners: list[str], id_lists: list[list[str]], status: JobStatus
    ) -> Steps[list[Command], list[Any], list[Job]]:
        wanted = [(queue, job_id) for queue, ids in zip(owners, id_lists, strict=True) for job_id in ids]
        return (yield from self._fetch_pairs(wanted, status))

    def _fetch_pairs(
        self, wanted: list[tuple[str, str]], status: JobStatus
    ) -> Steps[list[Command], list[Any], list[Job]]:
        if not wanted:
            return []
        found = yield from pipelined([("HGETALL", self.queue(q).job(i)) for q, i in wanted])
        jobs: list[Job] = []
        for (queue, job_id), fields in zip(wanted, found, strict=True):
            if not fields:
                continue  # gone since it was listed
            try:
                job = decode_job(job_id, queue, fields)
            except CorruptJob as exc:
                stored = fields.get("status")
                if stored != status.value and stored in _STATUS_VALUES:
                    continue  # readable enough to see it moved on
                job = unreadable_job(job_id, queue, status, exc)
            if job.status is status:  # else it moved on since it was listed
                jobs.append(job)
        return jobs

    @translated
    async def cancel(self, job_id: str) -> bool:
        queue, fields = await self.steps(self._locate(job_id))
        k = self.keys_for(queue, fields.get("limit_key"))
        done = await self.run(
            calls.cancel(k, self.now_arg(), job_id, self.retention_ms, self.keys.results_channel)
        )
        if done == -1:
            raise JobNotFound(f"no job with id {job_id!r}")
        if done == 2:  # it has dependants: tell them (ADR 0116)
            await self.settle_or_defer(queue, [job_id])
        return bool(done in (1, 2))

    async def _admin_queues(self, queue: str | None) -> list[str]:
        queues = await self.registered_queues()
        return queues if queue is None else [q for q in queues if q == queue]

    @translated
    async def requeue_dead(self, *, queue: str | None = None, job_ids: Sequence[str] | None = None) -> int:
        admin_filter(queue)
        queues = await self._admin_queues(queue)
        channel = self.keys.wake_channel
        ids_given = None if job_ids is None else [i for i in job_ids if is_job_id(i)]
        limited = 0  # limited jobs go back to their lanes, keeping their limits (ADR 0110)
        for q in queues:
            limited += await self.requeue_dead_limited(q, ids_given)
        if job_ids is not None:
            ids = [i for i in job_ids if is_job_id(i)]
            if not ids or not queues:
                return limited
            moved = await self.run_many(
                [calls.requeue_dead(self.queue(q), self.now_arg(), ids, len(ids), channel) for q in queues]
            )
            return limited + sum(int(reply[0]) for reply in moved)
        total = limited
        for q in queues:
            skip = 0  # limited jobs that died after the lane pass stay dead, at the front
            while True:
                call = calls.requeue_dead(
                    self.queue(q), self.now_arg(), None, ADMIN_BATCH, channel, skip=skip
                )
                moved_now, skipped = (int(n) for n in await self.run(call))
                total += moved_now
                skip += skipped
                if moved_now + skipped < ADMIN_BATCH:
                    break
        return total

    @translated
    async def purge_dead(
        self,
        *,
        queue: str | None = None,
        job_ids: Sequence[str] | None = None,
        older_than: float | None = None,
    ) -> int:
        admin_filter(queue, older_than=older_than)
        queues = await self._admin_queues(queue)
        now = self.now_arg()
        age = None if older_than is None else to_ms(older_than)
        if job_ids is not None:
            ids = [i for i in job_ids if is_job_id(i)]
            if not ids or not queues:
                return 0
            deleted = await self.run_many(
                [calls.purge_dead(self.queue(q), ids, len(ids), now=now, older_than_ms=age) for q in queues]
            )
            return sum(int(n) for n in deleted)
        total = 0
        for q in queues:
            while True:
                call = calls.purge_dead(self.queue(q), None, ADMIN_BATCH, now=now, older_than_ms=age)
                n = int(await self.run(call))
                total += n
                if n < ADMIN_BATCH:
                    break
        return total

    @translated
    async def prune(self, *, limit: int = 1000) -> int:
        removed = 0
        for q in await self.queues_with_work(["completed", "cancelled"], older_than_ms=self.retention_ms):
            if removed >= limit:
                break
            call = calls.prune(self.queue(q), self.now_arg(), self.retention_ms, limit - removed)
            removed += int(await self.run(call))
        return removed

    _evictions_checked = False

    @translated
    async def register_worker(self, info: WorkerInfo, *, ttl: float) -> None:
        now = await self.now_ms() / 1000
        await self.client.hset(self.keys.workers, info.id, encode_worker(info, now=now, expires_at=now + ttl))
        if not self._evictions_checked:  # a worker starts: once, warn of a policy that evicts jobs
            self._evictions_checked = True
            await eviction.warn_once(self.client, self.server)

    @translated
    async def unregister_worker(self, worker_id: str) -> None:
        await self.client.hdel(self.keys.workers, worker_id)

    @translated
    async def list_workers(self) -> list[WorkerInfo]:
        raw: dict[str, str] = await self.client.hgetall(self.keys.workers)  # type: ignore[assignment]
        now = await self.now_ms() / 1000
        live: list[WorkerInfo] = []
        gone: list[str] = []
        for worker_id, text in raw.items():
            decoded = decode_worker(text)
            if decoded is None or decoded[1] <= now:
                gone.append(worker_id)
            else:
                live.append(decoded[0])
        if gone:
            await self.client.hdel(self.keys.workers, *gone)
        return sorted(live, key=lambda w: w.id)

    @translated
    async def check_health(self) -> str:
        await ping(self.client)
        await self.check_layout(self.client)
        await eviction.refuse(self.client, self.server)
        return f"redis prefix {self.prefix!r} with key layout {LAYOUT_VERSION}"

    @translated
    async def activity(self, *, window: float = DONE_WINDOW) -> QueueActivity:
        queues = await self.registered_queues()
        if not queues:
            return QueueActivity({}, {}, window)
        now = self.now_arg()
        found = await self.run_many([calls.activity(self.queue(q), now, to_ms(window)) for q in queues])
        ages: dict[str, float] = {}
        done: dict[str, int] = {}
        for queue, (at, oldest, finished) in zip(queues, found, strict=True):
            if int(oldest) >= 0:
                ages[queue] = max(0, int(at) - int(oldest)) / 1000
            done[queue] = int(finished)
        return QueueActivity(ages, done, window)

    async def scan_jobs(self, scan: JobScan) -> AsyncIterator[Sequence[Job]]:
        """Queue by queue, status by status: ids by rank from the status's list or zset
        (finished ones from the rank of ``since``), then their hashes in one pipeline."""
        queues = [q for q in await self.list_queues() if scan.queue in (None, q)]
        for queue in queues:
            for status in scan.statuses:
                for k in self._scanned_keys(queue, status):
                    start = await self._scan_start(k, status, scan.since)
                    while True:
                        ids = await self._scan_ids(k, status, start, scan.page_size)
                        start += len(ids)
                        wanted = [job_id for job_id in ids if in_slice(job_id, scan)]
                        jobs = [j for j in await self._scan_fetch(queue, wanted, status) if scan.keeps(j)]
                        if jobs:
                            yield jobs
                        if len(ids) < scan.page_size:
                            break

    @translated
    async def _scan_start(self, k: QueueKeys, status: JobStatus, since: float | None) -> int:
        """The rank of the first finished job at or after ``since`` (and within retention)."""
        if status not in _FINISHED:
            return 0
        floor = -1.0 if since is None else since * 1000
        if status in _RETAINED:
            floor = max(floor, await self.now_ms() - self.retention_ms)
        if floor < 0:
            return 0
        [rank] = await self.run_many([("ZCOUNT", getattr(k, _ZSETS[status]), "-inf", f"({floor}")])
        return int(rank)

    def _scanned_keys(self, queue: str, status: JobStatus) -> list[QueueKeys]:
        """The keys a scan of ``status`` reads: the queue's, and for pending its prioritized
        jobs' zset too (ADR 0145)."""
        k = self.queue(queue)
        return [prioritized(k), k] if status is JobStatus.PENDING else [k]

    @translated
    async def _scan_ids(self, k: QueueKeys, status: JobStatus, start: int, count: int) -> list[str]:
        key = k.pending if status is JobStatus.PENDING else getattr(k, _ZSETS[status])
        command = "LRANGE" if status is JobStatus.PENDING and not is_prioritized(key) else "ZRANGE"
        [ids] = await self.run_many([(command, key, start, start + count - 1)])
        return list(ids)

    @translated
    async def _scan_fetch(self, queue: str, ids: list[str], status: JobStatus) -> list[Job]:
        return await self.steps(self._fetch([queue], [ids], status))
