"""A router's limit rule and ``depends_on`` together, with a worker (ADR 0110, ADR 0115).

Before, a job under a rate or concurrency rule could not have parents (``InvalidOption``);
now it waits for them and then runs under its group's limit, on every backend.
"""

from __future__ import annotations

import asyncio

from pqueue import AsyncClient, Job, JobStatus, Router
from pqueue.clock import ManualClock
from tests.worker.conftest import MakeWorker, running, settled


async def test_limited_children_of_a_parent_run_one_at_a_time(
    client: AsyncClient, make_worker: MakeWorker, backend_dsn: str, clock: ManualClock
) -> None:
    router = Router()
    active: list[int] = []
    most: list[int] = [0]

    @router.task("build")
    async def build(job: Job) -> str:
        return "artifact"

    @router.task("ship", concurrency=1, limit_key=lambda payload: payload["region"])
    async def ship(job: Job) -> str:
        active.append(1)
        most[0] = max(most[0], len(active))
        await asyncio.sleep(0.02)
        active.pop()
        return f"{job.parent_result()} to {job.payload['region']}"

    async with AsyncClient(backend_dsn, router=router, clock=clock) as producer:
        parent = await producer.enqueue("build", {})
        children = [
            await producer.enqueue("ship", {"region": "eu", "n": i}, depends_on=[parent.id]) for i in range(4)
        ]
        assert {(await client.get_job(c.id)).limit_key for c in children} == {"eu"}
        async with running(make_worker(router, concurrency=8)):
            done = [await settled(client, c.id) for c in children]
    assert {job.status for job in done} == {JobStatus.COMPLETED}
    assert {job.result for job in done} == {"artifact to eu"}
    assert most[0] == 1  # the group's concurrency held across the released children
