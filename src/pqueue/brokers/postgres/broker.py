"""``postgresql://`` — jobs in one Postgres schema, claimed with ``FOR UPDATE SKIP LOCKED``.

Every statement is one autocommit transaction from ``queries.sql``, prepared on its pooled
connection. Time is the injected clock's when there is one, else the server's
``statement_timestamp()``. Idle claimers sleep on one LISTEN connection per broker and wake
on NOTIFY; ``enqueue_in`` puts jobs on the caller's own transaction. docs/postgres.md
explains the design; ADRs 0010-0015 record the decisions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg import errors as pg_errors

from pqueue.broker import Capability, Claimer, IdempotencyState, RecoveryReport
from pqueue.broker_flows import plan_flow, wait_delay
from pqueue.brokers.handoff import HandoffHold
from pqueue.brokers.job_columns import JOB_COLUMNS
from pqueue.brokers.postgres import transactional
from pqueue.brokers.postgres.codec import (
    EnqueueBatch,
    PlainBatch,
    lease_arrays,
    lease_token,
    one_params,
    row_to_lease,
    waiting_params,
)
from pqueue.brokers.postgres.completion import AsyncAck, HandlerTransactions, SyncAck
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.control import PostgresControl
from pqueue.brokers.postgres.core import Rows, Statement, settled
from pqueue.brokers.postgres.handoff import HeldLease, fits_handoff, parse_handoff
from pqueue.brokers.postgres.schedules import PostgresSchedules
from pqueue.brokers.postgres.sql import channel_for, results_channel_for
from pqueue.brokers.postgres.wakeups import Wakeups
from pqueue.brokers.result_waiters import ResultWaiters
from pqueue.clock import Clock
from pqueue.errors import BrokerError, CorruptJob, JobNotFound
from pqueue.ids import is_job_id
from pqueue.job import MAX_ERROR_HISTORY, EnqueueResult, ErrorInfo, Job, JobSpec, JobStatus, Lease
from pqueue.steps import Steps

if TYPE_CHECKING:
    from pqueue.brokers.postgres.sync import PostgresSyncTransport

log = logging.getLogger("pqueue.postgres")

LISTEN_START_TIMEOUT = 5.0
"""Seconds ``wait_for_jobs`` (and ``wait_finished``) wait for the hub to listen before
falling back to sleeping (reading)."""

PARK_MARGIN = 0.5
"""Seconds a parked claimer stays parked past its wait, so a claimer that waits again at
once (the usual case) is never briefly unparked."""

FLUSH_TIMEOUT = 2.0
"""Seconds ``close`` waits for its hand-off channel's flush marker before giving back."""


def _claim_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Claimed rows in queue order (pos), then by (-priority, run_at, seq) as within a queue."""
    return (row[0], -row[_PRIORITY], row[_RUN_AT], row[1])


_RUN_AT = 4 + JOB_COLUMNS.index("run_at")
_PRIORITY = 4 + len(JOB_COLUMNS) + 1
"""Where a claimed row (pos, seq, token, deadline, then {job_columns}) has the priority."""


def _id_taken(exc: BrokerError) -> bool:
    """Whether an optimistic insert failed because a job id already exists."""
    cause = exc.__cause__
    return isinstance(cause, pg_errors.UniqueViolation) and cause.diag.constraint_name == "jobs_pkey"


def _text(value: str) -> str:
    """Postgres text cannot hold NUL; an exception message may. Keep the rest of it."""
    return value.replace("\x00", "\ufffd")


class PostgresBroker(PostgresControl, PostgresSchedules):
    """The Postgres backend: the whole :class:`~pqueue.broker.FullBroker` protocol."""

    capabilities = frozenset(
        {
            Capability.WAKEUP,
            Capability.CROSS_PROCESS,
            Capability.TRANSACTIONAL_ENQUEUE,
            Capability.HANDOFF,
            Capability.TRANSACTIONAL_COMPLETION,
        }
    )

    def __init__(self, config: PostgresConfig, *, clock: Clock | None = None) -> None:
        super().__init__(config, clock=clock)
        self._hold: HandoffHold[HeldLease] = HandoffHold(
            self._leases, self.release, name="pqueue-postgres-handoff-sweep"
        )
        self._has_parked = False  # close() unparks only a broker that ever parked a claimer
        self._parked_workers: set[str] = set()  # parked since their last claim statement
        self.parkings = 0  # claimers parked so far (Capability.HANDOFF)
        self._wakeups = Wakeups()
        self._results = ResultWaiters()
        self._completions = HandlerTransactions(config, clock)

    def sync_transport(self) -> PostgresSyncTransport:
        """The sync ``Client``'s direct path over this broker's steps (a blocking psycopg
        pool), built on demand so a worker never loads it (ADR 0136)."""
        from pqueue.brokers.postgres.sync import PostgresSyncTransport

        return PostgresSyncTransport(self)

    @classmethod
    def from_url(cls, dsn: str, *, clock: Clock | None = None, **options: object) -> PostgresBroker:
        """``postgresql://user@host/db?schema=pqueue&retention=86400&pool_max=10``.

        pqueue's options are taken out of the DSN (``options`` override them); the rest is
        handed to libpq.
        """
        return cls(PostgresConfig.from_url(dsn, options), clock=clock)

    async def __aenter__(self) -> PostgresBroker:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Unpark this broker's claimers, give back what was handed to them, then disconnect."""
        if self._db is not None:
            if self._has_parked:
                await self._unpark()
            await self._hold.close()
        await self._completions.close()
        await super().close()

    # -- hot path ----------------------------------------------------------------

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        return await self.steps(self.enqueue_steps(specs))

    def enqueue_steps(self, specs: Sequence[JobSpec]) -> Steps[Statement, Rows, list[EnqueueResult]]:
        """Enqueue as steps (pqueue.steps): the asyncio broker and the sync client drive it."""
        if not specs:
            return []
        limited = any(spec.limit is not None for spec in specs)  # ADR 0110: only `enqueue`
        if len(specs) == 1 and specs[0].unique_key is None and not limited:
            # One job without a unique key: a lighter statement than the batch one, which
            # also hands the job to a parked claimer when it is due (ADR 0054).
            spec = specs[0]
            params = self._params(**one_params(spec), handoff=fits_handoff(spec))
            [(created, _)] = yield (self._q["enqueue_one"], params, True)
            return [EnqueueResult(spec.id, bool(created))]
        plain = None if limited else PlainBatch.of(specs)
        if plain is not None:
            return (yield from self._enqueue_plain(plain))
        batch = EnqueueBatch.of(specs)
        rows = yield (self._q["enqueue"], self._params(**batch.columns), True)
        return batch.results(rows)

    def _enqueue_plain(self, plain: PlainBatch) -> Steps[Statement, Rows, list[EnqueueResult]]:
        """A batch without unique keys or repeated ids (ADR 0041): ``enqueue_same`` when the
        jobs differ only in payload, optimistically; ``enqueue_plain`` otherwise, or when an
        id turned out to exist."""
        if plain.same:
            try:
                [(created, _)] = yield (self._q["enqueue_same"], self._params(**plain.same_params()), True)
                return plain.results(created, None)
            except BrokerError as exc:
                if not _id_taken(exc):
                    raise
        params = self._params(**plain.plain_params())
        [(created, created_ids, _)] = yield (self._q["enqueue_plain"], params, True)
        return plain.results(created, created_ids)

    async def enqueue_in(self, conn: Any, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """Enqueue on the caller's open transaction (psycopg ``AsyncConnection`` or SQLAlchemy
        ``AsyncConnection``/``AsyncSession``): workers see the jobs only if it commits."""
        return await transactional.enqueue_in(conn, specs, schema=self.schema, clock=self.clock)

    def enqueue_in_sync(self, conn: Any, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """Enqueue on the caller's open transaction (psycopg ``Connection`` or SQLAlchemy
        ``Connection``/``Session``); needs no open broker and no event loop."""
        return transactional.enqueue_in_sync(conn, specs, schema=self.schema, clock=self.clock)

    def ack_transaction(self, conn: Any = None) -> contextlib.AbstractAsyncContextManager[AsyncAck]:
        """A transaction on ``conn`` (psycopg or SQLAlchemy, async) or a handler connection of
        this broker's, in which a job is completed with its handler's writes (ADR 0151)."""
        return self._completions.transaction(conn)

    def ack_transaction_sync(self, conn: Any = None) -> contextlib.AbstractContextManager[SyncAck]:
        """As :meth:`ack_transaction`, blocking, for sync handlers on their threads."""
        return self._completions.transaction_sync(conn)

    async def claim(
        self, queues: Sequence[str], *, worker_id: str, limit: int, lease_for: float
    ) -> list[Lease]:
        if limit < 1 or not queues:
            return []
        handed = await self._leases(self._hold.box.take(worker_id, queues, limit))
        if handed:  # handed off while we waited: no round trip
            return handed
        unpark = worker_id in self._parked_workers
        self._parked_workers.discard(worker_id)
        params = self._params(
            queues=list(queues), limit=limit, lease_for=lease_for, worker_id=worker_id, unpark=unpark
        )
        rows = await self.db.rows(self._q["claim"], params)
        rows.sort(key=_claim_order)
        leases: list[Lease] = []
        for _, _, token, expires_at, *job in rows:
            try:
                leases.append(row_to_lease(token, expires_at, job))
            except CorruptJob as exc:
                await self._bury(job[0], token, exc)
        return leases

    async def _bury(self, job_id: object, token: int, exc: CorruptJob) -> None:
        """Dead-letter a claimed row that cannot be decoded, so it cannot crash-loop workers.

        If that fails, the row is left to lease expiry, whose recovery brings it back to be
        buried by a later claim: the claim's other jobs must not be lost over it.
        """
        log.error("pqueue: %s; moving it to dead", exc)
        error = ErrorInfo("CorruptJob", str(exc))
        try:
            await self.db.rows(self._q["fail"], self._fail_params(job_id, token, error, None))
        except BrokerError as failure:
            log.warning("pqueue: could not dead-letter malformed job %s yet (%s)", job_id, failure)

    async def ack(
        self, leases: Sequence[Lease], results_json: Sequence[str | None] | None = None
    ) -> list[bool]:
        if not leases:
            return []
        if results_json is not None and len(results_json) != len(leases):
            raise ValueError(f"ack: {len(results_json)} results for {len(leases)} leases")
        ids, tokens = lease_arrays(leases)
        if results_json is None:
            rows = await self.db.rows(self._q["ack"], self._params(id=ids, token=tokens))
        else:
            params = self._params(id=ids, token=tokens, result=list(results_json))
            rows = await self.db.rows(self._q["ack_results"], params)
        return settled(leases, rows)

    async def fail(self, lease: Lease, error: ErrorInfo, *, retry_in: float | None) -> bool:
        token = lease_token(lease)
        if token is None or not is_job_id(lease.job.id):
            return False
        params = self._fail_params(lease.job.id, token, error, retry_in)
        return bool(await self.db.rows(self._q["fail"], params))

    def _fail_params(
        self, job_id: object, token: int, error: ErrorInfo, retry_in: float | None
    ) -> dict[str, Any]:
        return self._params(
            id=job_id,
            token=token,
            retry_in=retry_in,
            kind=_text(error.kind),
            message=_text(error.message),
            traceback=_text(error.traceback),
            keep=MAX_ERROR_HISTORY,
        )

    async def release(
        self, leases: Sequence[Lease], *, delay: float = 0.0, note: ErrorInfo | None = None
    ) -> list[bool]:
        if not leases:
            return []
        ids, tokens = lease_arrays(leases)
        params = self._params(
            id=ids,
            token=tokens,
            delay=delay,
            kind=None if note is None else _text(note.kind),
            message=None if note is None else _text(note.message),
            traceback=None if note is None else _text(note.traceback),
            keep=MAX_ERROR_HISTORY,
        )
        rows = await self.db.rows(self._q["release"], params)
        return settled(leases, rows)

    async def extend(self, leases: Sequence[Lease], *, lease_for: float) -> list[bool]:
        if not leases:
            return []
        ids, tokens = lease_arrays(leases)
        rows = await self.db.rows(self._q["extend"], self._params(id=ids, token=tokens, lease_for=lease_for))
        return settled(leases, rows)

    async def recover(self, *, limit: int = 1000) -> RecoveryReport:
        rows = await self.db.rows(self._q["recover"], self._params(limit=limit, keep=MAX_ERROR_HISTORY))
        recovered = tuple(str(job_id) for job_id, _, status in rows if status != "dead")
        dead = tuple(str(job_id) for job_id, _, status in rows if status == "dead")
        return RecoveryReport(recovered, dead, Counter(str(queue) for _, queue, _ in rows))

    async def promote(self, *, limit: int = 1000) -> int:
        return int(await self.db.value(self._q["promote"], self._params(limit=limit)))

    async def wait_for_jobs(
        self, queues: Sequence[str], timeout: float, *, claimer: Claimer | None = None
    ) -> bool:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        self.db  # noqa: B018 - raises unless the broker is open (a closed one must not listen)
        if not self._hub.registered(self.handoff_channel):
            self._hub.register(channel_for(self.schema), self._wakeups.dispatch, self._wakeups.wake_all)
            self._hub.register(self.handoff_channel, self._handoff_received)
        await self._hub.start(min(timeout, LISTEN_START_TIMEOUT))
        waiter = self._wakeups.park(queues)
        box = self._hold.box
        if claimer is not None:
            box.watch(claimer.worker_id, waiter.event)
        try:
            if claimer is not None and box.holds(claimer.worker_id):
                return True
            due_in = await self._look(queues, claimer, park_for=timeout + PARK_MARGIN)
            if due_in is not None:
                waiter.expect(loop.time() + due_in)
            while True:
                now = loop.time()
                if waiter.due_at <= now or (claimer is not None and box.holds(claimer.worker_id)):
                    return True
                if end <= now:
                    return False
                waiter.event.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.event.wait(), min(end, waiter.due_at) - now)
        finally:
            self._wakeups.unpark(waiter)
            if claimer is not None:
                box.unwatch(claimer.worker_id, waiter.event)

    async def _look(self, queues: Sequence[str], claimer: Claimer | None, *, park_for: float) -> float | None:
        """Seconds until the earliest waiting job of ``queues`` is due (None: none); with a
        ``claimer`` and a listening connection, it is parked on each queue meanwhile."""
        identity = self._link.identity if self._hub.hears(self.handoff_channel) else None
        park = claimer is not None and identity is not None and bool(queues)
        pid, started = identity if identity is not None else (None, None)
        self._has_parked = self._has_parked or park
        if park and claimer is not None:
            self._parked_workers.add(claimer.worker_id)
        params = self._params(
            queues=list(queues),
            park=park,
            worker_id=claimer.worker_id if claimer is not None else None,
            channel=self.handoff_channel,
            listener_pid=pid,
            listener_start=started,
            lease_for=claimer.lease_for if claimer is not None else None,
            park_for=park_for,
        )
        due_in: float | None = await self.db.value(self._q["look"], params)
        if park:
            self.parkings += 1
        return due_in

    # -- dependencies and result waiting (ADRs 0115, 0117) --------------------------

    async def enqueue_flow(self, specs: Sequence[JobSpec]) -> list[EnqueueResult]:
        """One transaction: lock the stored parents, store the jobs (parentless ones as by
        ``enqueue``, the others ``waiting``), record the edges, and settle edges whose
        parent had already finished."""
        plan = plan_flow(specs)
        roots = [s for s in specs if not s.depends_on]
        waiting = [s for s in specs if s.depends_on]
        parents = list(dict.fromkeys(p for s in waiting for p in s.depends_on))
        results: dict[str, EnqueueResult] = {}
        async with self.db.transaction() as conn:
            cur = await conn.execute(self._q["flow_lock_parents"], {"ids": parents})
            found = {str(job_id): status for job_id, status in await cur.fetchall()}
            missing = [p for p in plan.external if p not in found]
            if missing:
                raise JobNotFound(f"depends_on names no job with id {missing[0]!r}; nothing was stored")
            if roots:
                batch = EnqueueBatch.of(roots)
                cur = await conn.execute(self._q["enqueue"], self._params(**batch.columns))
                results.update(
                    (s.id, r) for s, r in zip(roots, batch.results(await cur.fetchall()), strict=True)
                )
            cur = await conn.execute(self._q["enqueue_waiting"], self._params(**waiting_params(waiting)))
            created = {str(row[0]) for row in await cur.fetchall()}
            results.update((s.id, EnqueueResult(s.id, s.id in created)) for s in waiting)
            edges = [(p, s.id) for s in waiting if s.id in created for p in s.depends_on]
            if edges:
                link = {"parent": [p for p, _ in edges], "child": [c for _, c in edges]}
                await conn.execute(self._q["flow_link"], link)
                done = [p for p, status in found.items() if JobStatus(status).is_final]
                if done:
                    await conn.execute(self._q["flow_settle"], self._params(ids=done))
        return [results[s.id] for s in specs]

    async def wait_finished(self, job_id: str, timeout: float) -> Job | None:
        if not is_job_id(job_id):
            raise JobNotFound(f"no job with id {job_id!r} (not a job id)")
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        self.db  # noqa: B018 - raises unless the broker is open (a closed one must not listen)
        channel = results_channel_for(self.schema)
        if not self._hub.registered(channel):
            results = self._results
            self._hub.register(channel, results.wake, lambda: results.wake(None))
        await self._hub.start(min(timeout, LISTEN_START_TIMEOUT))
        event = self._results.add(job_id)
        try:
            while True:
                event.clear()
                if not await self.db.rows(self._q["watch"], {"id": job_id}):
                    return await self.get_job(job_id)  # finished already (or JobNotFound)
                try:
                    async with asyncio.timeout(wait_delay(end - loop.time())):
                        await event.wait()
                except TimeoutError:
                    return None
                job = await self.get_job(job_id)
                if job.status.is_final:
                    return job
        finally:
            self._results.remove(job_id, event)

    # -- hand-off (ADR 0054) ---------------------------------------------------------

    def _handoff_received(self, payload: str) -> None:
        """A hand-off notification from the hub: hold its lease for its claimer (or, for
        a flush marker, note that it arrived)."""
        if self.markers.arrived(payload):
            return
        try:
            worker, held = parse_handoff(payload, asyncio.get_running_loop().time())
        except ValueError as exc:  # its lease expires and is recovered
            log.error("pqueue: dropped a hand-off notification: %s", exc)
            return
        self._hold.put(worker, [held])

    async def _leases(self, held: Sequence[HeldLease]) -> list[Lease]:
        """Leases of handed-off jobs; undecodable ones are dead-lettered, as by ``claim``."""
        leases: list[Lease] = []
        for job in held:
            try:
                leases.append(row_to_lease(job.token, job.expires_at, job.row))
            except CorruptJob as exc:
                await self._bury(job.row[0], job.token, exc)
        return leases

    async def _unpark(self) -> None:
        """Take this broker's claimers out of the parked table, then wait until everything
        handed to them before that has arrived, so ``close`` can give it back."""
        channel = self.handoff_channel
        try:
            await self.db.rows(self._q["unpark"], {"channel": channel})
            if not self._hub.hears(channel):
                return  # no marker can arrive; hand-offs sent while it was down come back by expiry
            with self.markers.new() as (marker, arrived):
                await self.db.value(self._q["notify"], {"channel": channel, "payload": marker})
                await asyncio.wait_for(arrived.wait(), FLUSH_TIMEOUT)
        except (BrokerError, TimeoutError) as exc:  # parkings expire within seconds anyway
            log.warning("pqueue: jobs handed off just before close may stay leased until their lease "
                        "expires (%s)", exc)  # fmt: skip

    async def idempotency_begin(self, key: str, owner: str, ttl: float) -> IdempotencyState:
        params = self._params(key=key, owner=owner, ttl=ttl)
        [(holder, state)] = await self.db.rows(self._q["idempotency_begin"], params)
        if state == "done":
            return IdempotencyState.DONE
        return IdempotencyState.ACQUIRED if holder == owner else IdempotencyState.IN_FLIGHT

    async def idempotency_end(self, key: str, owner: str, *, done: bool, ttl: float) -> None:
        if done:
            await self.db.rows(self._q["idempotency_done"], self._params(key=key, owner=owner, ttl=ttl))
        else:
            await self.db.rows(self._q["idempotency_release"], {"key": key, "owner": owner})
