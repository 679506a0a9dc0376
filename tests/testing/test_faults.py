"""``FaultyBroker`` injects what it is told, once; and ``FaultContract`` fails a backend
that does not survive it (checked on a deliberately broken wrapper of the memory broker)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import pqueue
from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.errors import BrokerUnavailable
from pqueue.job import JobStatus
from pqueue.middleware import JobReport, Middleware, MiddlewareChain, Outcome
from pqueue.spec import build_spec
from pqueue.testing.faults import Fault, FaultContract, FaultyBroker, InjectedFault
from pqueue.worker.leases import LeaseBook
from pqueue.worker.settle import Settler, WorkerCounters


async def _memory(dsn: str, clock: ManualClock) -> FullBroker:
    """An opened broker on ``dsn`` (the memory store, or a test's namespace on any backend)."""
    broker = pqueue.connect(dsn, clock=clock)
    await broker.open()
    return broker


async def test_before_applies_nothing_and_reply_applies(pqueue_memory_dsn: str) -> None:
    clock = ManualClock()
    faulty = FaultyBroker(await _memory(pqueue_memory_dsn, clock), clock=clock)
    b = faulty.broker
    first, second = build_spec("t", 1), build_spec("t", 2)
    faulty.lose_before("enqueue")
    faulty.lose_reply("enqueue")
    assert faulty.pending == [("enqueue", Fault.BEFORE), ("enqueue", Fault.REPLY)]
    with pytest.raises(InjectedFault) as before:
        await b.enqueue([first])
    with pytest.raises(InjectedFault) as reply:
        await b.enqueue([second])
    assert (before.value.applied, reply.value.applied) == (False, True)
    assert isinstance(before.value, BrokerUnavailable)
    assert [job.payload for job in (await b.list_jobs(JobStatus.PENDING)).jobs] == [2]
    assert faulty.pending == [] and len(faulty.injected) == 2
    assert (await b.enqueue([first]))[0].created  # unarmed: passes through


async def test_misuse_is_said_at_once(pqueue_memory_dsn: str) -> None:
    faulty = FaultyBroker(await _memory(pqueue_memory_dsn, ManualClock()))
    with pytest.raises(ValueError, match="no async method 'enqeue'"):
        faulty.lose_before("enqeue")
    with pytest.raises(RuntimeError, match="reopen"):
        await faulty.restart()
    with pytest.raises(RuntimeError, match="clock"):
        faulty.jump(1)


class _AckAlwaysTrue:
    """A broken backend: it reports every ack as applied, even a refused resend."""

    def __init__(self, inner: FullBroker) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def ack(self, leases: Any, results: Any = None) -> list[bool]:
        await self.inner.ack(leases, results)
        return [True] * len(leases)


async def test_the_contract_fails_a_backend_that_accepts_a_resent_ack(pqueue_memory_dsn: str) -> None:
    clock = ManualClock()
    broken: Any = _AckAlwaysTrue(await _memory(pqueue_memory_dsn, clock))
    faulty = FaultyBroker(broken, clock=clock)
    with pytest.raises(AssertionError):
        await FaultContract().test_ack_sent_again_is_refused_and_the_job_stays_completed(faulty, Fault.REPLY)


class _Reports(Middleware):
    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def after_job(self, report: JobReport) -> None:
        self.outcomes.append(report.outcome)


@pytest.mark.parametrize("fault", [Fault.BEFORE, Fault.REPLY])
async def test_the_workers_settler_rides_out_a_lost_ack(backend_dsn: str, fault: Fault) -> None:
    """What the faults are for, above the seam: the worker's own settler resends an ack
    whose connection or reply was lost, and counts the job completed once, on every backend."""
    clock = ManualClock()
    inner = await _memory(backend_dsn, clock)
    try:
        faulty = FaultyBroker(inner, clock=clock)
        [created] = await inner.enqueue([build_spec("t", 1)])
        [lease] = await inner.claim(["default"], worker_id="w", limit=1, lease_for=30)
        reports, book = _Reports(), LeaseBook()
        book.add([lease])
        settler = Settler(faulty.broker, book, MiddlewareChain([reports]), WorkerCounters())
        settler.start()
        faulty.arm("ack", fault)
        settler.complete(lease, None, 0.0)
        await asyncio.wait_for(settler.close(), 10)
        assert reports.outcomes == [Outcome.COMPLETED]
        assert len(faulty.injected) == 1 and faulty.pending == []
        assert (await inner.get_job(created.id)).status is JobStatus.COMPLETED
    finally:
        await inner.close()
