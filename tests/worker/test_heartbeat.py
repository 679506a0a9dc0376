"""The heartbeat keeps leases alive while a handler blocks the loop or spins the CPU.

Real time here (no ManualClock): a job holds the worker's event loop (or the GIL, in
pure Python) for three times its lease while a second worker, in another thread with its
own loop, recovers and claims whatever expires. The job must run once and never be
recovered.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pqueue import AsyncClient, Job, JobStatus, Router, Worker
from tests.worker.conftest import eventually, settled

LEASE = 1.2
BLOCK = 3 * LEASE


def _spin(seconds: float) -> int:
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
    return n


router = Router()
runs: list[tuple[str, str]] = []


@router.task("hold:sleep-on-loop")
async def sleep_on_loop(job: Job) -> str:
    runs.append((job.id, threading.current_thread().name))
    time.sleep(BLOCK)  # noqa: ASYNC251 - blocking the worker's event loop is the point
    return "kept"


@router.task("hold:spin-on-loop")
async def spin_on_loop(job: Job) -> str:
    runs.append((job.id, threading.current_thread().name))
    _spin(BLOCK)  # burns the CPU on the loop, holding the GIL between switches
    return "kept"


@router.task("hold:spin-in-thread")
def spin_in_thread(job: Job) -> str:
    runs.append((job.id, threading.current_thread().name))
    _spin(BLOCK)
    return "kept"


class OtherWorker(threading.Thread):
    """A second worker on its own thread and loop: recovers expired leases and runs them."""

    def __init__(self, dsn: str) -> None:
        super().__init__(name="other-worker", daemon=True)
        self.worker = Worker(
            dsn, router, queues=["default"], lease=LEASE, recover_interval=0.05, poll_interval=0.05
        )

    def run(self) -> None:
        asyncio.run(self.worker.serve())


@pytest.mark.slow
@pytest.mark.parametrize("job_type", ["hold:sleep-on-loop", "hold:spin-on-loop", "hold:spin-in-thread"])
async def test_blocking_handler_keeps_its_lease(
    backend_dsn: str, pqueue_open_broker: object, job_type: str
) -> None:
    runs.clear()
    async with AsyncClient(backend_dsn) as client:
        job_id = (await client.enqueue(job_type, max_retries=0)).id
        worker = Worker(
            backend_dsn, router, queues=["default"], lease=LEASE, concurrency=1, poll_interval=0.05
        )
        serving = asyncio.create_task(worker.serve())
        await eventually(lambda: runs, timeout=30, what="the job to start")
        other = OtherWorker(backend_dsn)
        other.start()
        try:
            # The first worker's loop may be blocked: wait from a thread, not by polling on it.
            job = await settled(client, job_id, timeout=60)
        finally:
            other.worker.stop()
            worker.stop()
            await asyncio.to_thread(other.join, 60)
            await asyncio.wait_for(serving, 60)
    assert job.status is JobStatus.COMPLETED and job.result == "kept"
    assert job.recoveries == 0 and len(runs) == 1
    assert other.worker.counters.claimed == 0
