"""The memory backend under threads: each thread runs its own event loop on one store."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

import pqueue
from pqueue.brokers.memory import drop_store
from pqueue.spec import build_spec

THREADS = 6
JOBS_PER_PRODUCER = 1500


@pytest.fixture
def dsn() -> Iterator[str]:
    name = f"threads-{uuid.uuid4().hex[:8]}"
    yield f"memory://{name}"
    drop_store(name)


def test_producers_and_claimers_in_threads_see_each_job_once(dsn: str) -> None:
    claimed: list[str] = []
    lock = threading.Lock()
    produced = threading.Event()

    def producer(n: int) -> None:
        async def go() -> None:
            broker = pqueue.connect(dsn)
            for i in range(0, JOBS_PER_PRODUCER, 50):
                await broker.enqueue([build_spec("t", [n, j]) for j in range(i, i + 50)])

        asyncio.run(go())

    def claimer(n: int) -> None:
        async def go() -> None:
            broker = pqueue.connect(dsn)
            while True:
                leases = await broker.claim(["default"], worker_id=f"w{n}", limit=7, lease_for=30)
                if not leases:
                    if produced.is_set():  # every producer finished before this was set
                        return
                    await asyncio.sleep(0)
                    continue
                assert all(await broker.ack(leases))
                with lock:
                    claimed.extend(lease.job.id for lease in leases)

        asyncio.run(go())

    producers = [threading.Thread(target=producer, args=(n,)) for n in range(2)]
    claimers = [threading.Thread(target=claimer, args=(n,)) for n in range(THREADS)]
    for t in producers + claimers:
        t.start()
    for t in producers:
        t.join()
    produced.set()
    for t in claimers:
        t.join(timeout=60)
        assert not t.is_alive()
    per_job = Counter(claimed)
    assert len(per_job) == 2 * JOBS_PER_PRODUCER
    assert set(per_job.values()) == {1}


def test_an_enqueue_in_one_thread_wakes_a_waiter_in_another(dsn: str) -> None:
    woke: list[bool] = []
    parked = threading.Event()

    def waiter() -> None:
        async def go() -> None:
            broker = pqueue.connect(dsn)
            task = asyncio.create_task(broker.wait_for_jobs(["default"], timeout=30))
            await asyncio.sleep(0.05)
            parked.set()
            woke.append(await task)

        asyncio.run(go())

    thread = threading.Thread(target=waiter)
    thread.start()
    assert parked.wait(10)
    started = time.monotonic()
    asyncio.run(pqueue.connect(dsn).enqueue([build_spec("t")]))
    thread.join(timeout=10)
    assert woke == [True]
    assert time.monotonic() - started < 5  # woken by the enqueue, not the 30 s timeout
