"""Small helpers the contract tests share; they speak only the Broker protocol."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from pqueue.broker import Capability, Claimer, FullBroker
from pqueue.job import ErrorInfo, JobStatus, Lease
from pqueue.spec import build_spec

OpenAnother = Callable[[], Awaitable[FullBroker]]
"""The ``open_broker`` fixture: another broker on the same namespace and clock."""

LEASE = 30.0
"""The lease the contract claims with, in seconds."""
WORKER = "contract-worker"


async def put(broker: FullBroker, job_type: str = "contract:job", payload: Any = None, **options: Any) -> str:
    """Enqueue one job and return its id (asserting it was created)."""
    [result] = await broker.enqueue([build_spec(job_type, payload, **options)])
    assert result.created, f"expected a new job, got {result}"
    return result.id


async def put_many(
    broker: FullBroker, n: int, *, queue: str = "default", start: int = 0, **options: Any
) -> list[str]:
    """Enqueue ``n`` jobs in one batch; payloads are their index (``start``..)."""
    specs = [build_spec("contract:job", i, queue=queue, **options) for i in range(start, start + n)]
    results = await broker.enqueue(specs)
    assert all(r.created for r in results)
    return [r.id for r in results]


def _parkings(broker: FullBroker) -> int | None:
    """How many claimers a ``Capability.HANDOFF`` broker has parked so far, if it counts them."""
    count = getattr(broker, "parkings", None) if Capability.HANDOFF in broker.capabilities else None
    return count if isinstance(count, int) else None


async def waiting_claimer(
    broker: FullBroker, claimer: Claimer, *, timeout: float = 20.0, settle: float = 0.2
) -> asyncio.Task[bool]:
    """``claimer`` waiting in ``wait_for_jobs`` on "default", parked: a broker with
    ``Capability.HANDOFF`` is waited for until its ``parkings`` count goes up (however long
    parking takes on a busy machine), any other given ``settle`` seconds. Fails if the wait
    has ended already (nothing may be due)."""
    parkings = _parkings(broker)
    waiter = asyncio.create_task(broker.wait_for_jobs(["default"], timeout=timeout, claimer=claimer))
    if parkings is not None:
        for _ in range(int(timeout / 0.005)):  # polled: a parking is a broker round trip, no event
            if _parkings(broker) != parkings or waiter.done():
                break
            await asyncio.sleep(0.005)
    else:
        await asyncio.sleep(settle)
    assert not waiter.done()
    return waiter


async def take(
    broker: FullBroker,
    queues: Sequence[str] = ("default",),
    *,
    limit: int = 1,
    lease_for: float = LEASE,
    worker: str = WORKER,
) -> list[Lease]:
    """Claim up to ``limit`` jobs (after a promote pass, as the worker's promoter would)."""
    await broker.promote()
    return await broker.claim(list(queues), worker_id=worker, limit=limit, lease_for=lease_for)


async def take_one(broker: FullBroker, queues: Sequence[str] = ("default",), **kw: Any) -> Lease:
    leases = await take(broker, queues, limit=1, **kw)
    assert len(leases) == 1, f"expected one claimable job in {list(queues)}, got {len(leases)}"
    return leases[0]


async def drain_ids(
    broker: FullBroker, queues: Sequence[str] = ("default",), *, batch: int = 100
) -> list[str]:
    """Claim and ack everything due; return job ids in claim order."""
    ids: list[str] = []
    while leases := await take(broker, queues, limit=batch):
        assert all(await broker.ack(leases))
        ids.extend(lease.job.id for lease in leases)
    return ids


async def status_of(broker: FullBroker, job_id: str) -> JobStatus:
    return (await broker.get_job(job_id)).status


async def total(broker: FullBroker, statuses: Iterable[JobStatus] = tuple(JobStatus)) -> int:
    counts = await broker.counts()
    wanted = set(statuses)
    return sum(n for per_queue in counts.values() for s, n in per_queue.items() if s in wanted)


def boom(message: str = "boom") -> ErrorInfo:
    return ErrorInfo(
        kind="RuntimeError", message=message, traceback="Traceback ...\nRuntimeError: " + message
    )
