"""``redis://`` and ``rediss://``: the Redis broker (lists, sorted sets, hashes and Lua).

Every state change of a job is one Lua script over one queue's keys (docs/redis.md);
calls that span queues run one script per queue, pipelined where order allows.
Times come from one authority: the server's ``TIME`` inside each script, or the
injected clock passed as ARGV. docs/adr/0001-lists-vs-streams.md explains the layout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import RedisError

from pqueue.broker import Capability, Claimer, IdempotencyState, RecoveryReport
from pqueue.brokers.handoff import FlushMarkers, HandoffHold
from pqueue.brokers.hub import Hub
from pqueue.brokers.redis import calls
from pqueue.brokers.redis.codec import decode_lease, pairs, to_ms
from pqueue.brokers.redis.config import RedisOptions
from pqueue.brokers.redis.control import RedisControl
from pqueue.brokers.redis.core import translated, translated_keyless
from pqueue.brokers.redis.flows import RedisFlows
from pqueue.brokers.redis.handoff import HeldJob, parse_handoff
from pqueue.brokers.redis.hub import RedisLink, flush
from pqueue.brokers.redis.keys import QueueKeys
from pqueue.brokers.redis.replicas import ReplicaWait
from pqueue.brokers.redis.schedules import RedisSchedules
from pqueue.brokers.redis.scripts import Command, ScriptCall, pipelined
from pqueue.brokers.redis.wakeup import Wakeups
from pqueue.clock import Clock
from pqueue.combine import Outcome
from pqueue.errors import CorruptJob
from pqueue.job import EnqueueResult, ErrorInfo, JobSpec, Lease
from pqueue.steps import Steps

if TYPE_CHECKING:
    from pqueue.brokers.redis.sync import RedisSyncTransport

log = logging.getLogger("pqueue.redis")

REGISTRATION_REFRESH = 60.0
"""Seconds a broker trusts that a queue it registered is still in the registry; pqueue never
removes registry entries, so this only bounds how long a hand-deleted registry goes stale."""

PARK_MARGIN = 0.5
"""Seconds a parked claimer stays parked past its wait, so a claimer that waits again at
once (the usual case) is never briefly unparked."""

ENQUEUE_CHUNK = 1000
"""Jobs per enqueue script run: large enough to amortise the call, small enough to keep
each run (which blocks the server) to a few milliseconds."""


T = TypeVar("T")
K = TypeVar("K")
Lane = tuple[str, str | None]
"""A job's queue and limit key (None: not limited), which name the keys it lives in."""


def _lane_of_lease(lease: Lease) -> Lane:
    return lease.job.queue, lease.job.limit_key


PerQueue = Callable[[QueueKeys, list[int]], ScriptCall]
"""Builds the script call for one queue's share (indices into the caller's list)."""


def _by_queue(items: Sequence[T], queue_of: Callable[[T], K]) -> dict[K, list[int]]:
    """Indices of ``items`` grouped by queue (or by (queue, limit key)), in first-seen order."""
    groups: dict[K, list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault(queue_of(item), []).append(i)
    return groups


def _units(requests: Sequence[Sequence[JobSpec]]) -> tuple[dict[str, None], list[list[int]]]:
    """The queues of ``requests``, and the requests grouped into script-call units: those
    without unique keys together first, then each request with a unique key alone."""
    queues: dict[str, None] = {}
    shared: list[int] = []
    units: list[list[int]] = []
    for i, specs in enumerate(requests):
        keyed = False
        for spec in specs:
            queues[spec.queue] = None
            keyed = keyed or spec.unique_key is not None
        if keyed:
            units.append([i])
        else:
            shared.append(i)
    if shared:
        units.insert(0, shared)
    return queues, units


def _lane(spec: JobSpec) -> Lane:
    return spec.queue, None if spec.limit is None else spec.limit.key


def _lanes_of(specs: Sequence[JobSpec]) -> dict[Lane, list[int]]:
    """Indices of ``specs`` by lane (queue, limit key), in first-seen order."""
    if len(specs) == 1:
        return {_lane(specs[0]): [0]}
    return _by_queue(specs, _lane)


class RedisBroker(RedisControl, RedisFlows, RedisSchedules):
    """The Redis backend: hot path here, inspection and admin in :class:`RedisInspector`,
    pause/resume and cancel of running jobs in :class:`RedisControl`, dependencies and
    result waiters in :class:`RedisFlows`."""

    capabilities = frozenset({Capability.WAKEUP, Capability.CROSS_PROCESS, Capability.HANDOFF})

    def __init__(self, options: RedisOptions, *, clock: Clock | None = None) -> None:
        super().__init__(options, clock=clock)
        self._replicas = ReplicaWait(self)
        if options.cluster:  # hand-off needs a node-local subscriber count (ADR 0142)
            self.capabilities = self.capabilities - {Capability.HANDOFF}
        self._hub = Hub(RedisLink(lambda: self.client, self.reporter), name=f"pqueue-redis-hub-{self.prefix}")
        self._wakeups = Wakeups()
        self._markers = FlushMarkers()
        self._registered: dict[str, float] = {}  # queue -> monotonic time it was last registered
        self._handoff_id = uuid.uuid4().hex  # names this broker's hand-off channel
        self._hold: HandoffHold[HeldJob] = HandoffHold(
            self._leases, self.release, name="pqueue-redis-handoff-sweep"
        )
        self._box = self._hold.box
        self._parked: dict[str, set[str]] = {}  # queue -> claimers this broker parked there
        self.parkings = 0  # claimers parked so far (Capability.HANDOFF)

    def sync_transport(self) -> RedisSyncTransport:
        """The sync ``Client``'s direct path over this broker's steps (redis-py's blocking
        client), built on demand so a worker never loads it (ADR 0136)."""
        from pqueue.brokers.redis.sync import RedisSyncTransport

        return RedisSyncTransport(self)

    @classmethod
    def from_url(cls, dsn: str, *, clock: Clock | None = None, **options: object) -> RedisBroker:
        """``redis[s]://[user:pass@]host[:port][/db][?prefix=pqueue&retention=86400&pool_size=16]``.

        Other query parameters go to redis-py (e.g. ``ssl_cert_reqs``, ``socket_timeout``).
        """
        return cls(RedisOptions.parse(dsn, options), clock=clock)

    @translated
    async def open(self) -> None:
        await self._open_client()

    async def close(self) -> None:
        await self._unpark()
        await self._hub.close()
        await self._hold.close()
        await self._replicas.close()
        await self._close_client()

    async def __aenter__(self) -> RedisBroker:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @translated_keyless
    async def now(self) -> float:
        if self.clock is not None:
            return self.clock.now()
        seconds, micros = await self.client.time()
        return int(seconds) + int(micros) / 1_000_000

    # -- hot path ----------------------------------------------------------------

    @translated
    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        results = await self.steps(self.enqueue_steps(specs))
        short = await self._replicas.shortfall({s.queue for s in specs})
        if short is not None:
            raise short.error([r.id for r in results])
        return results

    def enqueue_steps(self, specs: Sequence[JobSpec]) -> Steps[list[Command], list[Any], list[EnqueueResult]]:
        """Enqueue as steps: one pipeline, driven by the asyncio broker or the sync client."""
        if not specs:
            return []
        [outcome] = yield from self.enqueue_each_steps([specs])
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    @translated
    async def enqueue_each(self, requests: Sequence[Sequence[JobSpec]]) -> list[Outcome]:
        """Several callers' enqueues in one round trip, each with its own results or error."""
        outcomes = await self.steps(self.enqueue_each_steps(requests))
        short = await self._replicas.shortfall({s.queue for specs in requests for s in specs})
        if short is None:
            return outcomes
        return [o if isinstance(o, BaseException) else short.error([r.id for r in o]) for o in outcomes]

    def enqueue_each_steps(
        self, requests: Sequence[Sequence[JobSpec]]
    ) -> Steps[list[Command], list[Any], list[Outcome]]:
        """Enqueues of several callers in one pipeline (pqueue.combine): per request, its
        results in order, or its error.

        Requests without unique keys share their queues' script calls: enqueue.lua has no
        errors of its own, and what can fail it (a key of the wrong type) fails every job
        of the queue alike. A request with a unique key gets script calls of its own: its
        key alone can fail (a hand-written key of another type), and a script keeps the
        writes made before an error, so sharing its call could half-store a neighbour.
        """
        queues, units = _units(requests)
        now, channel, handoff = self.now_arg(), self.keys.wake_channel, self.keys.handoff_prefix
        register = self._unregistered(queues)
        batch: list[Any] = [("SADD", self.keys.queues, *register)] if register else []
        plans: list[tuple[Sequence[JobSpec], list[tuple[int, list[int]]]]] = []
        for unit in units:
            specs = requests[unit[0]] if len(unit) == 1 else [s for i in unit for s in requests[i]]
            plan: list[tuple[int, list[int]]] = []  # (reply index, indices into specs)
            for (queue, limit_key), indices in _lanes_of(specs).items():
                k = self.keys_for(queue, limit_key)  # a limited job waits in its lane (ADR 0110)
                if limit_key is not None:  # before its jobs: a lane listed without jobs is dropped
                    batch.append(("ZADD", self.lanes(queue).zset, "LT", 0, limit_key))
                for start in range(0, len(indices), ENQUEUE_CHUNK):
                    chunk = indices[start : start + ENQUEUE_CHUNK]
                    plan.append((len(batch), chunk))
                    chunk_specs = specs if len(chunk) == len(specs) else [specs[i] for i in chunk]
                    batch.append(calls.enqueue(k, chunk_specs, now, channel, handoff))
            plans.append((specs, plan))
        replies = yield from pipelined(batch, errors_in_place=True)
        if register and not isinstance(replies[0], Exception):
            self._registered.update(dict.fromkeys(register, time.monotonic()))
        if len(requests) == 1:
            return [self._enqueued(*plans[0], replies)]
        outcomes: list[Outcome | None] = [None] * len(requests)
        for unit, (specs, plan) in zip(units, plans, strict=True):
            outcome = self._enqueued(specs, plan, replies)
            start = 0
            for i in unit:
                n = len(requests[i])
                outcomes[i] = outcome if isinstance(outcome, BaseException) else outcome[start : start + n]
                start += n
        return [o for o in outcomes if o is not None]

    def _enqueued(
        self, specs: Sequence[JobSpec], plan: list[tuple[int, list[int]]], replies: list[Any]
    ) -> Outcome:
        """One request's results from its script calls' replies, or its first error."""
        results: list[EnqueueResult | None] = [None] * len(specs)
        for at, chunk in plan:
            reply = replies[at]
            if isinstance(reply, RedisError):
                return self.translate(reply)
            for i, outcome in zip(chunk, reply, strict=True):
                results[i] = (
                    EnqueueResult(specs[i].id, True) if outcome == 1 else EnqueueResult(outcome, False)
                )
        return [r for r in results if r is not None]

    def _unregistered(self, queues: Iterable[str]) -> list[str]:
        """Queues to add to the registry with this enqueue (before any of their jobs exist)."""
        stale = time.monotonic() - REGISTRATION_REFRESH
        return [q for q in queues if self._registered.get(q, stale) <= stale]

    @translated
    async def claim(
        self, queues: Sequence[str], *, worker_id: str, limit: int, lease_for: float
    ) -> list[Lease]:
        leases = await self._leases(self._box.take(worker_id, queues, limit))
        if leases:  # handed off while we waited: no round trip
            return leases
        lease_ms = max(1, to_ms(lease_for))
        parking = self._parking(worker_id)
        for queue in queues:
            if len(leases) >= limit:
                break
            k = self.queue(queue)
            try:
                call = calls.claim(
                    k,
                    self.now_arg(),
                    limit - len(leases),
                    lease_ms,
                    worker_id,
                    parking=parking,
                    lanes=self.lanes(queue),
                )
                deadline_ms, claimed = await self.run(call)
            except (RedisError, OSError) as exc:
                if not leases:
                    raise
                # Jobs leased from earlier queues would only come back by lease expiry
                # (counted as a crash): hand them over and let the next claim try again.
                log.warning("pqueue: claim from queue %r failed (%s); returning the jobs leased so far",
                            queue, exc)  # fmt: skip
                break
            for job_id, flat in claimed:
                try:
                    leases.append(decode_lease(queue, job_id, flat, deadline_ms / 1000))
                except CorruptJob as exc:
                    await self._bury(queue, job_id, flat, exc)
        return leases

    async def _leases(self, held: Sequence[HeldJob]) -> list[Lease]:
        """Leases of handed-off jobs; undecodable ones are dead-lettered, as by ``claim``."""
        leases: list[Lease] = []
        for job in held:
            try:
                leases.append(decode_lease(job.queue, job.job_id, job.fields, job.expires_at))
            except CorruptJob as exc:
                await self._bury(job.queue, job.job_id, job.fields, exc)
        return leases

    def _received(self, data: str) -> None:
        """A hand-off message from the hub: hold its jobs for their claimer (or, for a
        flush marker, note that it arrived)."""
        if self._markers.arrived(data):
            return
        loop = asyncio.get_running_loop()
        try:
            worker, held = parse_handoff(data, loop.time())
        except ValueError as exc:  # its leases expire and are recovered
            log.error("pqueue: dropped a hand-off message: %s", exc)
            return
        self._hold.put(worker, held)

    async def _unpark(self) -> None:
        """Take this broker's claimers out of every parked set, then receive what was handed
        to them before that, so ``close`` can give it back instead of leaving it leased."""
        parked, self._parked = self._parked, {}
        if not parked:
            return
        commands: list[tuple[Any, ...]] = []
        for queue, members in parked.items():
            k = self.queue(queue)
            commands += [("ZREM", k.parked, *members), ("HDEL", k.parkers, *members)]
        try:
            await self.run_many(commands)
        except (RedisError, OSError) as exc:  # their parking expires within seconds anyway
            log.warning("pqueue: could not unpark this broker's claimers (%s)", exc)
            return
        if not await flush(self.client, self._hub, self._markers, self._handoff_channel, timeout=2.0):
            log.warning("pqueue: jobs handed off just before close may stay leased until their lease expires")

    @property
    def _handoff_channel(self) -> str:
        return self.keys.handoff_prefix + self._handoff_id

    async def _bury(self, queue: str, job_id: str, flat: list[str], exc: CorruptJob) -> None:
        """Dead-letter a claimed job that cannot be decoded, so it is reported, not retried.

        If that fails, the job is left to lease expiry, whose recovery brings it back to be
        buried by a later claim: the claim's other jobs must not be lost over it.
        """
        log.error("pqueue: %s; moving it to dead", exc)
        error = ErrorInfo(kind="CorruptJob", message=str(exc))
        call = calls.fail(
            self.keys_for(queue, pairs(flat).get("limit_key")),
            self.now_arg(),
            job_id=job_id,
            token=pairs(flat).get("token", ""),
            error=error,
            retry_ms=None,
            channel=self.keys.wake_channel,
            results_channel=self.keys.results_channel,
        )
        try:
            await self.run(call)
        except (RedisError, OSError) as failure:
            log.warning("pqueue: could not dead-letter malformed job %s yet (%s)", job_id, failure)

    async def _per_queue(
        self, leases: Sequence[Lease], build: PerQueue, *, settles: bool = True
    ) -> list[bool]:
        """Run ``build(keys, indices)`` once per queue (limited jobs: per lane) of ``leases``;
        results in lease order. ``settles``: the jobs leave active, freeing their lanes' slots."""
        if not leases:
            return []
        groups = _by_queue(leases, _lane_of_lease)
        commands: list[Any] = [build(self.keys_for(q, key), idx) for (q, key), idx in groups.items()]
        if settles:
            commands += self.reready(groups)
        replies = await self.run_many(commands)
        out = [False] * len(leases)
        for indices, reply in zip(groups.values(), replies[: len(groups)], strict=True):
            for i, ok in zip(indices, reply, strict=True):
                out[i] = ok == 1
        return out

    @translated
    async def ack(
        self, leases: Sequence[Lease], results_json: Sequence[str | None] | None = None
    ) -> list[bool]:
        results = list(results_json) if results_json is not None else [None] * len(leases)
        now, channel = self.now_arg(), self.keys.results_channel

        def build(k: QueueKeys, idx: list[int]) -> ScriptCall:
            chunk = [leases[i] for i in idx]
            return calls.ack(
                k, now, self.retention_ms, chunk, [results[i] for i in idx], results_channel=channel
            )

        if not leases:
            return []
        groups = _by_queue(leases, _lane_of_lease)  # limited jobs: per lane (ADR 0110)
        commands: list[Any] = [build(self.keys_for(q, key), idx) for (q, key), idx in groups.items()]
        replies = await self.run_many([*commands, *self.reready(groups)])
        out = [False] * len(leases)
        for ((queue, _), indices), reply in zip(groups.items(), replies[: len(groups)], strict=True):
            parents = [leases[i].job.id for i, ok in zip(indices, reply, strict=True) if ok == 2]
            for i, ok in zip(indices, reply, strict=True):
                out[i] = ok in (1, 2)
            if parents:  # completed jobs with dependants (ADR 0116)
                await self.settle_or_defer(queue, parents)
        short = await self._replicas.shortfall(queue for queue, _ in groups)
        acked = [lease.job.id for lease, ok in zip(leases, out, strict=True) if ok]
        if short is not None and acked:
            raise short.error(acked, acks=True)
        return out

    @translated
    async def fail(self, lease: Lease, error: ErrorInfo, *, retry_in: float | None) -> bool:
        retry_ms = None if retry_in is None else max(0, to_ms(retry_in))
        k = self.keys_for(lease.job.queue, lease.job.limit_key)
        call = calls.fail(
            k,
            self.now_arg(),
            job_id=lease.job.id,
            token=lease.token,
            error=error,
            retry_ms=retry_ms,
            channel=self.keys.wake_channel,
            results_channel=self.keys.results_channel,
        )
        replies = await self.run_many([call, *self.reready([_lane_of_lease(lease)])])
        done = replies[0]
        if done == 2:  # dead with dependants (ADR 0116)
            await self.settle_or_defer(lease.job.queue, [lease.job.id])
        return bool(done in (1, 2))

    @translated
    async def release(
        self, leases: Sequence[Lease], *, delay: float = 0.0, note: ErrorInfo | None = None
    ) -> list[bool]:
        now, delay_ms, channel = self.now_arg(), max(0, to_ms(delay)), self.keys.wake_channel

        def build(k: QueueKeys, idx: list[int]) -> ScriptCall:
            return calls.release(k, now, delay_ms, [leases[i] for i in idx], channel, note=note)

        return await self._per_queue(leases, build)

    @translated
    async def extend(self, leases: Sequence[Lease], *, lease_for: float) -> list[bool]:
        now, lease_ms = self.now_arg(), max(1, to_ms(lease_for))

        def build(k: QueueKeys, idx: list[int]) -> ScriptCall:
            return calls.extend(k, now, lease_ms, [leases[i] for i in idx])

        return await self._per_queue(leases, build, settles=False)

    @translated
    async def recover(self, *, limit: int = 1000) -> RecoveryReport:
        recovered: list[str] = []
        dead: list[str] = []
        per_queue: dict[str, int] = {}
        for queue in await self.queues_with_work(["active"]):
            left = limit - len(recovered) - len(dead)
            if left <= 0:
                break
            call = calls.recover(
                self.queue(queue), self.now_arg(), left, self.keys.wake_channel, self.keys.results_channel
            )
            back, died = await self.run(call)
            recovered += back
            dead += died
            if died:  # those with dependants were recorded as settled (ADR 0116)
                await self.settle_or_defer(queue, died)
            if back or died:
                per_queue[queue] = len(back) + len(died)
        for queue, limit_key in await self._lanes_with_work():
            left = limit - len(recovered) - len(dead)
            if left <= 0:
                break
            k = self.keys_for(queue, limit_key)
            call = calls.recover(k, self.now_arg(), left, self.keys.wake_channel, self.keys.results_channel)
            (back, died), *_ = await self.run_many([call, *self.reready([(queue, limit_key)])])
            recovered += back
            dead += died
            if died:  # those with dependants were recorded as settled (ADR 0116)
                await self.settle_or_defer(queue, died)
            if back or died:
                per_queue[queue] = per_queue.get(queue, 0) + len(back) + len(died)
        await self.sweep_settled()  # releases a crash left half done (ADR 0116)
        return RecoveryReport(tuple(recovered), tuple(dead), per_queue)

    async def _lanes_with_work(self) -> list[Lane]:
        """Every limit lane whose active set has an expired lease (ADR 0110): one pipelined
        ZRANGE per queue, then one ZCOUNT per lane, so recovery runs scripts only where needed."""
        queues = await self.registered_queues()
        if not queues:
            return []
        listed = await self.run_many([("ZRANGE", self.lanes(q).zset, 0, -1) for q in queues])
        found: list[Lane] = [(q, key) for q, keys in zip(queues, listed, strict=True) for key in keys]
        if not found:
            return []
        until = await self.now_ms()
        counts = await self.run_many(
            [("ZCOUNT", self.keys_for(q, key).active, "-inf", until) for q, key in found]
        )
        return [lane for lane, n in zip(found, counts, strict=True) if int(n)]

    @translated
    async def promote(self, *, limit: int = 1000) -> int:
        moved = 0
        for queue in await self.queues_with_work(["scheduled", "retry"]):
            if moved >= limit:
                break
            call = calls.promote(self.queue(queue), self.now_arg(), limit - moved, self.keys.wake_channel)
            moved += int(await self.run(call))
        return moved

    @translated
    async def wait_for_jobs(
        self, queues: Sequence[str], timeout: float, *, claimer: Claimer | None = None
    ) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        hub, wakeups = self._hub, self._wakeups
        if not hub.registered(self.keys.wake_channel):
            self.client  # noqa: B018 - raises unless the broker is open
            hub.register(self.keys.wake_channel, wakeups.wake, wakeups.wake_all)
            hub.register(self._handoff_channel, self._received)
        await hub.start(max(timeout, 0.0))
        # Parked claimers need their hand-offs heard; a cluster's claimers never park: the
        # enqueue's PUBSUB NUMSUB sees only the subscribers of its own node (ADR 0142).
        listening = Capability.HANDOFF in self.capabilities and hub.hears(self._handoff_channel)
        event = asyncio.Event()
        wakeups.add(queues, event)
        if claimer is not None:
            self._box.watch(claimer.worker_id, event)
        try:
            while True:
                event.clear()
                if claimer is not None and self._box.holds(claimer.worker_id):
                    return True
                park_for = deadline - loop.time() + PARK_MARGIN
                due, next_in = await self._look(queues, claimer if listening else None, park_for)
                left = deadline - loop.time()
                if due:
                    return True
                if left <= 0:
                    return False
                nap = left if next_in is None else min(left, next_in + 0.001)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(nap):  # not wait_for: it can lose a cancel on 3.11
                        await event.wait()
                if event.is_set() and not self.options.cluster:
                    # A wake-up says work arrived: return at once rather than look again
                    # (one round trip less before the claim; a stale wake-up costs an
                    # empty claim, never a missed job). On a cluster the bus forwards a
                    # wake-up to this node asynchronously: one published before this wait
                    # began can arrive during it, so the loop looks again (ADR 0142).
                    return True
        finally:
            wakeups.remove(queues, event)
            if claimer is not None:
                self._box.unwatch(claimer.worker_id, event)

    def _parking(self, worker_id: str) -> str:
        """The name a claimer of this broker parks under (park.lua, claim.lua)."""
        return f"{self._handoff_id} {worker_id}"

    async def _look(
        self, queues: Sequence[str], claimer: Claimer | None, park_for: float
    ) -> tuple[bool, float | None]:
        """Whether any of ``queues`` has a due job, else seconds until the next one (or None);
        with a ``claimer``, it is parked for ``park_for`` seconds on each queue (park.lua)."""
        if not queues:
            return False, None
        member, limit, lease_ms = "", 1, 1
        if claimer is not None:
            member = self._parking(claimer.worker_id)
            limit, lease_ms = max(1, claimer.limit), max(1, to_ms(claimer.lease_for))
            for queue in queues:
                self._parked.setdefault(queue, set()).add(member)
        now, park_ms = self.now_arg(), to_ms(park_for)
        replies = await self.run_many(
            [
                calls.park(
                    self.queue(q),
                    now,
                    member,
                    limit=limit,
                    lease_ms=lease_ms,
                    park_ms=park_ms,
                    lanes=self.lanes(q),
                )
                for q in queues
            ]
        )
        if claimer is not None:
            self.parkings += 1
        if any(int(due) for due, _ in replies):
            return True, None
        waits = [int(wait_ms) for _, wait_ms in replies if int(wait_ms) >= 0]
        return False, (min(waits) / 1000 if waits else None)

    @translated
    async def idempotency_begin(self, key: str, owner: str, ttl: float) -> IdempotencyState:
        key = self.keys.idempotency(key)
        call = calls.idempotency_begin(key, self.now_arg(), owner, max(1, to_ms(ttl)))
        return IdempotencyState(await self.run(call))

    @translated
    async def idempotency_end(self, key: str, owner: str, *, done: bool, ttl: float) -> None:
        key = self.keys.idempotency(key)
        call = calls.idempotency_end(key, self.now_arg(), owner, done, max(0, to_ms(ttl)))
        await self.run(call)
