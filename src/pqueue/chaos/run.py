"""One chaos run, start to verdict.

1. A namespace of the run's own on the broker (a Redis key prefix, a Postgres schema, a
   SQLite file beside the given one, a memory store): the user's jobs are never touched,
   and the namespace is dropped after a clean run (kept, and named, after a failing one).
   With ``--private-broker`` the run starts its own server first (and may restart it).
2. Worker processes, a TCP proxy in front of a network broker, the producers, operators,
   an observer and short-lived client processes, while faults strike on schedule.
3. Quiet: faults healed, paused queues resumed, producers stopped; every job the run knows
   must reach a final state. Then the effect rows are counted, ``stats()`` is compared
   with the jobs one by one, the workers drain, SQLite's ``integrity_check`` runs.
4. The history is checked (:mod:`pqueue.chaos.check`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any, TypeVar

from pqueue.broker import Capability
from pqueue.chaos.app import EFFECTS, EFFECTS_ENV, QUEUES, SETUP, SETUP_QUEUE
from pqueue.chaos.check import FINAL, Checker, Verdict, Violation, excerpt
from pqueue.chaos.faults import Injector
from pqueue.chaos.history import Event, HistoryWriter, read_history
from pqueue.chaos.plan import Plan, client_schedule, fault_schedule
from pqueue.chaos.pool import InProcessPool, Pool, ProcessPool
from pqueue.chaos.workload import Admin, Clients, Observer, Producer
from pqueue.client import AsyncClient
from pqueue.errors import BrokerUnavailable, JobNotFound
from pqueue.job import Job, JobStatus

EFFECTS_TABLE = "pqueue_chaos_effects"


@dataclass(frozen=True)
class Settings:
    """What the user asked for (``pqueue chaos`` flags)."""

    dsn: str
    duration: float = 60.0
    workers: int = 3
    seed: int = 0
    faults: tuple[str, ...] = ()
    private_broker: bool = False
    concurrency: int = 8
    lease: float = 2.0
    rate: float = 40.0
    settle_timeout: float = 120.0
    keep: bool = False
    history: Path | None = None


@dataclass
class Outcome:
    """A finished run: the verdict, what was injected, how long recovery took."""

    settings: Settings
    scheme: str
    verdict: Verdict
    faults: Counter[str] = field(default_factory=Counter)
    recover: dict[str, list[float]] = field(default_factory=dict)
    """Fault kind -> seconds each fault took to recover from (see :func:`_fault_figures`)."""
    elapsed: float = 0.0
    jobs: int = 0
    history: Path | None = None
    namespace: str = ""
    kept: bool = False
    excerpts: list[tuple[Violation, list[str]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.verdict.violations


async def run(
    settings: Settings, *, scheme: str, private: Any = None, broker_dsn: str | None = None
) -> Outcome:
    """One run against ``broker_dsn`` (the user's DSN, or the private server's); ``private``
    is the server the run started (restarts, failovers)."""
    from pqueue.brokers.namespaces import namespace

    started = time.monotonic()
    name = f"pqueue_chaos_{settings.seed % 10**8}_{secrets.token_hex(3)}"
    space = namespace(broker_dsn or settings.dsn, name)
    await space.create()
    folder = settings.history or Path(tempfile.mkdtemp(prefix="pqueue-chaos-"))
    folder.mkdir(parents=True, exist_ok=True)
    history = HistoryWriter(folder, "driver")
    outcome = Outcome(settings, scheme, Verdict(), history=folder, namespace=name)
    try:
        async with _network(space.dsn, settings) as (proxy, work_dsn):
            await _Run(
                settings, scheme, space.dsn, work_dsn, proxy, private, history, folder, outcome
            ).drive()
    except BaseException:
        print(
            f"chaos: stopped before its check; history kept in {folder}, namespace kept: {name}",
            file=sys.stderr,
        )
        raise
    finally:
        history.close()
    outcome.elapsed = time.monotonic() - started
    if outcome.ok and not settings.keep:
        await space.drop()
        if settings.history is None:
            shutil.rmtree(folder, ignore_errors=True)
            outcome.history = None
    else:
        outcome.kept = True
    return outcome


@asynccontextmanager
async def _network(dsn: str, settings: Settings) -> AsyncIterator[tuple[Any, str]]:
    """A :class:`~pqueue.chaos.proxy.FaultProxy` in front of the broker when the faults
    need one and the DSN allows one; yields it (or None) and the DSN workers use."""
    from pqueue.chaos.faults import NETWORK_FAULTS
    from pqueue.chaos.proxy import FaultProxy, proxied_dsn, upstream_of

    if not set(settings.faults) & set(NETWORK_FAULTS) or proxied_dsn(dsn, 1) is None:
        yield None, dsn
        return
    proxy = FaultProxy(*upstream_of(dsn))
    await proxy.start()
    try:
        work_dsn = proxied_dsn(dsn, proxy.port)
        assert work_dsn is not None
        yield proxy, work_dsn
    finally:
        await proxy.close()


@dataclass
class _Run:
    """One run's parts, once its namespace and network are in place."""

    settings: Settings
    scheme: str
    dsn: str
    """The namespace's DSN, straight to the broker (the observer and the final reads)."""
    work_dsn: str
    """The DSN workers, producers and clients use (through the proxy when there is one)."""
    proxy: Any
    private: Any
    history: HistoryWriter
    folder: Path
    outcome: Outcome

    @property
    def in_process(self) -> bool:
        return self.scheme == "memory"

    def pool(self) -> Pool:
        """The workers: in this process for memory (no transactions, so no effects table),
        else processes told where the effects table is."""
        s = self.settings
        if self.in_process:
            return InProcessPool(
                self.work_dsn, self.folder, size=s.workers, concurrency=s.concurrency, lease=s.lease
            )
        env = {EFFECTS_ENV: _effects_table(self.scheme, self.outcome.namespace)}
        return ProcessPool(
            self.work_dsn, self.folder, size=s.workers, concurrency=s.concurrency, lease=s.lease, env=env
        )

    async def drive(self) -> None:
        timeout = self.settings.settle_timeout
        async with AsyncClient(self.dsn) as direct, AsyncClient(self.work_dsn) as client:
            transactional = Capability.TRANSACTIONAL_COMPLETION in direct.broker.capabilities
            pool = self.pool()
            await pool.start()
            try:
                if transactional:
                    await _bookkeeping(direct, SETUP, timeout)
                await self.load(Plan(self.settings.seed, transactional), client, direct, pool)
                finals = await _quiet(direct, self.history, timeout, pool)
                effects = await _effects(direct, timeout) if transactional else None
                stats_problems = await _compare_stats(direct, finals)
            finally:
                await pool.close()
            problems = pool.problems()
        self.judge(finals, effects, stats_problems, problems + _integrity(self.scheme, self.dsn))

    def judge(
        self,
        finals: Mapping[str, Job | None],
        effects: Mapping[str, int] | None,
        stats: list[str],
        problems: list[str],
    ) -> None:
        """Check the history and fill in the outcome."""
        events = read_history(self.folder)
        verdict = Checker(events, finals, effects).run()
        for message in stats:
            verdict.add("stats", message)
        for message in problems:
            verdict.add("worker" if message.startswith("worker") else "integrity", message)
        outcome = self.outcome
        outcome.verdict = verdict
        outcome.jobs = len(_known_ids(events))
        outcome.faults, outcome.recover = _fault_figures(events)
        outcome.excerpts = [(v, excerpt(events, v)) for v in verdict.violations[:5]]

    async def load(self, plan: Plan, client: AsyncClient, direct: AsyncClient, pool: Pool) -> None:
        """The busy part: producers, operators, observer, clients and faults for ``duration``."""
        s, history = self.settings, self.history
        loop = asyncio.get_running_loop()
        started = loop.time()
        stop = asyncio.Event()
        producer = Producer(plan, client, history, rate=s.rate)
        admin = Admin(plan, client, history, producer)
        visits = [] if self.in_process else client_schedule(plan, duration=s.duration)
        schedule = fault_schedule(plan, s.faults, duration=s.duration, workers=s.workers, lease=s.lease)
        injector = Injector(history, pool, proxy=self.proxy, server=self.private, seed=s.seed)
        tasks = [
            asyncio.create_task(producer.run(stop)),
            asyncio.create_task(admin.run(stop)),
            asyncio.create_task(Observer(direct, history, producer, s.seed).run(stop)),
            asyncio.create_task(
                Clients(visits, self.work_dsn, self.folder, history, producer).run(stop, started)
            ),
        ]
        faults = asyncio.create_task(injector.run(schedule, started))
        try:
            while loop.time() < started + s.duration:
                await asyncio.sleep(0.5)
                pool.refill()
                _raise_failed([*tasks, faults])
            await faults
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            if not faults.done():
                await asyncio.gather(faults, return_exceptions=True)
            await injector.heal()
            await admin.resume_all(direct)


def _raise_failed(tasks: list[asyncio.Task[None]]) -> None:
    """Stop the run when one of its parts died (its error is the run's)."""
    for task in tasks:
        if task.done() and not task.cancelled():
            error = task.exception()
            if error is not None:
                raise error


async def _quiet(
    direct: AsyncClient, history: HistoryWriter, timeout: float, pool: Pool
) -> dict[str, Job | None]:
    """Every job the run knows, read until each is final (or ``timeout`` passes)."""
    ids = sorted(_known_ids(read_history(history.path.parent)))
    finals: dict[str, Job | None] = {}
    deadline = time.monotonic() + timeout
    todo = ids
    while todo:
        for start in range(0, len(todo), 100):
            chunk = todo[start : start + 100]
            for job_id, job in zip(
                chunk, await asyncio.gather(*(_read(direct, j) for j in chunk)), strict=True
            ):
                finals[job_id] = job
        todo = [j for j in todo if (job := finals[j]) is not None and job.status not in FINAL]
        if not todo or time.monotonic() > deadline:
            break
        pool.refill()
        await asyncio.sleep(0.5)
    return finals


def _known_ids(events: list[Event]) -> set[str]:
    return {e.job for e in events if e.job and e.kind in ("enqueue", "enqueue_error", "refused")}


PATIENCE = 60.0
"""Seconds a read of the quiet phase is tried again while the broker is unavailable (a
cluster settling after its last failover, a server just restarted)."""

T = TypeVar("T")


async def _patient(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, tried again while the broker is unavailable, for up to :data:`PATIENCE`."""
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            return await call()
        except BrokerUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _read(client: AsyncClient, job_id: str) -> Job | None:
    try:
        return await _patient(lambda: client.get_job(job_id))
    except JobNotFound:
        return None


async def _bookkeeping(client: AsyncClient, job_type: str, timeout: float) -> Any:
    """Run one of the run's own jobs (the effects table's creation or count) to its result."""
    job_id = str(uuid.uuid4())  # sent again after a lost reply, it stores nothing twice
    job = await _patient(lambda: client.enqueue(job_type, queue=SETUP_QUEUE, job_id=job_id))
    return await _patient(lambda: client.result(job.id, timeout=timeout))


async def _effects(client: AsyncClient, timeout: float) -> dict[str, int]:
    counts = await _bookkeeping(client, EFFECTS, timeout)
    return {str(k): int(v) for k, v in dict(counts).items()}


async def _compare_stats(client: AsyncClient, finals: Mapping[str, Job | None]) -> list[str]:
    """``stats()`` once quiet against the jobs read one by one, queue by queue."""
    truth: Counter[tuple[str, JobStatus]] = Counter(
        (job.queue, job.status) for job in finals.values() if job is not None
    )
    stats = await _patient(client.stats)
    problems = []
    for queue in QUEUES:
        for status in JobStatus:
            said, true = stats.total(status, queue), truth[queue, status]
            if said != true:
                problems.append(f"stats() says {said} {status.value} on {queue}; the jobs say {true}")
    return problems


def _integrity(scheme: str, dsn: str) -> list[str]:
    """SQLite's own check of the file, once every worker is gone."""
    if scheme != "sqlite":
        return []
    path = dsn.removeprefix("sqlite:///").split("?", 1)[0]  # sqlite:///rel.db, sqlite:////abs.db
    with contextlib.closing(sqlite3.connect(path)) as conn:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    return [] if result == ["ok"] else [f"integrity_check on {path}: {'; '.join(map(str, result[:5]))}"]


def _effects_table(scheme: str, name: str) -> str:
    return f'"{name}".{EFFECTS_TABLE}' if scheme.startswith("postgres") else EFFECTS_TABLE


def _fault_figures(events: list[Event]) -> tuple[Counter[str], dict[str, list[float]]]:
    """How many faults of each kind struck, and how long each took to recover from: for a
    worker's fault (kill, stop, drain), until every job it held was settled (elsewhere, or by
    itself once thawed); for the others, from the fault's end to the next completed job."""
    done = [e.t for e in events if e.kind == "settled" and e.get("outcome") == "completed"]
    counts: Counter[str] = Counter()
    recover: dict[str, list[float]] = {}
    begun: dict[tuple[str, int], float] = {}
    for e in events:
        if e.kind != "fault":
            continue
        kind, target = str(e.get("fault")), int(e.get("target", 0))
        if e.get("phase") == "begin":
            begun[kind, target] = e.t
            continue
        counts[kind] += 1
        if kind in ("kill", "stop", "drain"):
            seconds = _held_recovered(events, target, begun.get((kind, target), e.t))
        else:
            after = next((t for t in done if t >= e.t), None)
            seconds = None if after is None else after - e.t
        if seconds is not None:
            recover.setdefault(kind, []).append(seconds)
    return counts, recover


SETTLED = frozenset({"completed", "retry", "dead", "cancelled", "duplicate"})


def _held_recovered(events: list[Event], pid: int, at: float) -> float | None:
    """Seconds from ``at`` until every job worker ``pid`` was running then was settled."""
    running: dict[str, float] = {}
    for e in events:
        if e.t >= at:
            break
        if e.pid == pid and e.job is not None:
            if e.kind == "start":
                running[e.job] = e.t
            elif e.kind in ("end", "settled"):
                running.pop(e.job, None)
    if not running:
        return None
    settled: dict[str, float] = {}
    for e in events:
        if e.t >= at and e.job in running and e.kind == "settled" and e.get("outcome") in SETTLED:
            settled.setdefault(e.job, e.t)
    if len(settled) < len(running):
        return None
    return max(settled.values()) - at


def recover_summary(recover: Mapping[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per fault kind: median and worst seconds to the next completed job."""
    return {
        k: {"median": round(median(v), 3), "max": round(max(v), 3)} for k, v in sorted(recover.items()) if v
    }
