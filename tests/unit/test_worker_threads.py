"""Handler threads: outcomes come back to the loop, and interrupts hit only their own job."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from datetime import UTC, datetime

from pqueue.ids import new_id
from pqueue.job import Job, JobStatus
from pqueue.worker.threads import HandlerThreads, JobTimeout

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def job(payload: object = None) -> Job:
    now = datetime.now(UTC)
    return Job(new_id(), "t", "default", payload, JobStatus.ACTIVE, 1, 3, 0, 5, now, now)


async def test_results_errors_and_context_come_back() -> None:
    threads = HandlerThreads()
    loop = asyncio.get_running_loop()
    request_id.set("req-7")
    ok = threads.submit(
        lambda j: (j.payload * 2, request_id.get()), job(21), contextvars.copy_context(), loop
    )
    bad = threads.submit(lambda j: 1 / 0, job(), contextvars.copy_context(), loop)
    assert await ok.future == (True, (42, "req-7"))
    success, error = await bad.future
    assert not success and isinstance(error, ZeroDivisionError)
    threads.shutdown()


async def test_interrupt_stops_pure_python_and_spares_the_next_job() -> None:
    threads = HandlerThreads()
    loop = asyncio.get_running_loop()
    started = threading.Event()

    def spin(j: Job) -> str:
        started.set()
        while True:
            pass

    call = threads.submit(spin, job(), contextvars.copy_context(), loop)
    await asyncio.to_thread(started.wait, 10)
    stack = threads.interrupt(call)
    assert "in spin" in stack
    success, error = await asyncio.wait_for(call.future, 10)
    assert not success and isinstance(error, JobTimeout)
    assert threads.interrupt(call) == ""  # once only; the call is over
    # The same thread runs the next job untouched by the earlier interrupt.
    nxt = threads.submit(lambda j: time.sleep(0.05) or "fine", job(), contextvars.copy_context(), loop)
    assert await asyncio.wait_for(nxt.future, 10) == (True, "fine")
    assert threads.size == 1
    threads.shutdown()


async def test_a_call_blocked_in_c_is_interrupted_when_it_returns_to_python() -> None:
    threads = HandlerThreads()
    loop = asyncio.get_running_loop()
    after_sleep: list[str] = []

    def nap(j: Job) -> None:
        time.sleep(0.3)  # C: the interrupt waits for it
        after_sleep.append("reached")  # first bytecode after the sleep: interrupted here

    call = threads.submit(nap, job(), contextvars.copy_context(), loop)
    await asyncio.sleep(0.05)
    assert "in nap" in threads.interrupt(call)
    success, error = await asyncio.wait_for(call.future, 10)
    assert not success and isinstance(error, JobTimeout) and after_sleep == []
    threads.shutdown()
