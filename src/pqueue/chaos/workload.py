"""The driver's side of a chaos run: producers, admin work, an observer, short-lived clients.

Everything goes through pqueue's public API (:class:`~pqueue.AsyncClient`, the ``pqueue``
command, the sync :class:`~pqueue.Client`) and lands in the history with the times around
each call, so the checker can reason about what was acknowledged and when. An enqueue
whose reply is lost is sent again with the same job id, as a careful producer would; one
that never gets a reply is recorded as such (its job may or may not exist).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pqueue.chaos.app import QUEUES
from pqueue.chaos.history import ENV, HistoryWriter
from pqueue.chaos.plan import Op, Plan, PlannedJob
from pqueue.client import AsyncClient
from pqueue.errors import InvalidJob, JobNotFound, PQueueError
from pqueue.job import JobStatus

SEND_TRIES = 6
"""Sends of one enqueue before it is given up (backing off from 0.1 s to 3.2 s)."""
CLIENT_SCRIPT = """
import json, os, sys, pqueue
task = pqueue.Task(**json.loads(sys.argv[1]))
with pqueue.Client(os.environ["PQUEUE_DSN"]) as client:
    result = client.enqueue_task(task)
    client.get_job(result.id)
    print(json.dumps({"id": result.id, "created": result.created}))
"""


class Producer:
    """Sends the plan's jobs at ``rate`` operations a second and cancels the long ones."""

    def __init__(self, plan: Plan, client: AsyncClient, history: HistoryWriter, *, rate: float) -> None:
        self.plan = plan
        self.client = client
        self.history = history
        self.rate = rate
        self.known: list[str] = []
        """Ids of jobs acknowledged so far (for the observer and the admin's cancels)."""
        self._pending: set[asyncio.Task[None]] = set()

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for n, op in enumerate(self.plan.ops()):
            if stop.is_set():
                break
            ahead = start + n / self.rate - loop.time()
            if ahead > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), ahead)
                if stop.is_set():
                    break
            if op.kind == "cancel":
                self._spawn(self._cancel_later(op))
            else:
                self._spawn(self.send(op.jobs))
        await self.settle()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settle(self) -> None:
        """Wait for the sends and cancels still under way."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def send(self, jobs: Sequence[PlannedJob]) -> None:
        t0 = time.time()
        pause = 0.1
        error: Exception | None = None
        for _ in range(SEND_TRIES):
            try:
                results = await self.client.enqueue_many([job.task for job in jobs])
            except (InvalidJob, JobNotFound) as exc:
                for job in jobs:
                    self.history.write("refused", job.id, error=_line(exc), spec=job.describe())
                return
            except PQueueError as exc:
                error = exc
                await asyncio.sleep(pause)
                pause = min(pause * 2, 3.2)
                continue
            t1 = time.time()
            for job, result in zip(jobs, results, strict=True):
                self.history.write(
                    "enqueue",
                    job.id,
                    t=t1,
                    t0=t0,
                    created=result.created,
                    holder=result.id,
                    spec=job.describe(),
                )
                if result.id == job.id:
                    self.known.append(job.id)
            return
        for job in jobs:
            self.history.write("enqueue_error", job.id, t0=t0, error=_line(error), spec=job.describe())

    async def _cancel_later(self, op: Op) -> None:
        await asyncio.sleep(op.after)
        assert op.target is not None
        await cancel(self.client, self.history, op.target)


async def cancel(client: AsyncClient, history: HistoryWriter, job_id: str) -> None:
    """Cancel a job and record whether the broker said it did (a lost reply records nothing:
    the cancel may or may not have happened)."""
    t0 = time.time()
    try:
        ok = await client.cancel(job_id)
    except JobNotFound:
        ok = False
    except PQueueError as exc:
        history.write("cancel_error", job_id, t0=t0, error=_line(exc))
        return
    history.write("cancel", job_id, t0=t0, ok=ok)


class Admin:
    """Operators at work meanwhile: stats, listings, requeues, cancels, pauses, prunes."""

    def __init__(self, plan: Plan, client: AsyncClient, history: HistoryWriter, producer: Producer) -> None:
        self.rng = plan.stream("admin")
        self.client = client
        self.history = history
        self.producer = producer
        self.paused: set[str] = set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.rng.uniform(0.2, 0.6))
            if stop.is_set():
                break
            op = self.rng.choice(("stats", "list", "requeue", "cancel", "pause", "prune"))
            try:
                await self._one(op)
            except PQueueError as exc:
                self.history.write("admin_error", op=op, error=_line(exc))

    async def _one(self, op: str) -> None:
        queue = self.rng.choice(QUEUES)
        t0 = time.time()
        if op == "stats":
            stats = await self.client.stats()
            self.history.write("stats", t0=t0, totals={s.value: n for s, n in stats.totals.items() if n})
        elif op == "list":
            status = self.rng.choice(list(JobStatus))
            page = await self.client.list_jobs(status, queue=queue, limit=50)
            self.history.write("list", t0=t0, status=status.value, queue=queue, n=len(page.jobs))
        elif op == "requeue":
            n = await self.client.requeue_dead(queue=queue)
            self.history.write("requeue", t0=t0, queue=queue, n=n)
        elif op == "cancel" and self.producer.known:
            await cancel(self.client, self.history, self.rng.choice(self.producer.known[-200:]))
        elif op == "pause" and queue not in self.paused:
            self.paused.add(queue)
            await self.client.pause(queue)
            self.history.write("pause", t0=t0, queue=queue)
            asyncio.get_running_loop().call_later(self.rng.uniform(0.3, 2.0), self._resume_soon, queue)
        elif op == "prune":
            n = await self.client.broker.prune(limit=100)
            self.history.write("prune", t0=t0, n=n)

    def _resume_soon(self, queue: str) -> None:
        task = asyncio.ensure_future(self.resume(queue))
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def resume(self, queue: str, *, client: AsyncClient | None = None) -> None:
        """Resume ``queue``, trying until the broker answers (a resume is safe to repeat)."""
        while queue in self.paused:
            try:
                await (client or self.client).resume(queue)
            except PQueueError:
                await asyncio.sleep(0.2)
                continue
            self.paused.discard(queue)
            self.history.write("resume", queue=queue)

    async def resume_all(self, client: AsyncClient) -> None:
        for queue in list(self.paused):
            await self.resume(queue, client=client)


class Observer:
    """Looks at a few known jobs every 0.1 s, one call at a time, for the state-machine rule."""

    def __init__(self, client: AsyncClient, history: HistoryWriter, producer: Producer, seed: int) -> None:
        self.client = client
        self.history = history
        self.producer = producer
        self.rng = random.Random(f"{seed}:observer")

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)
            known = self.producer.known
            for job_id in self.rng.sample(known[-300:], min(5, len(known[-300:]))):
                with contextlib.suppress(PQueueError):
                    job = await self.client.get_job(job_id)
                    self.history.write("observe", job_id, status=job.status.value, attempt=job.attempt)


class Clients:
    """Short-lived processes that open the broker, do one thing and exit: ``pqueue enqueue``,
    ``pqueue stats``, ``pqueue jobs list`` and a sync :class:`~pqueue.Client` script."""

    def __init__(self, schedule: list[tuple[float, str, PlannedJob | None]], dsn: str, folder: Path,
                 history: HistoryWriter, producer: Producer) -> None:  # fmt: skip
        self.schedule = schedule
        self.dsn = dsn
        self.folder = folder
        self.history = history
        self.producer = producer
        self._running: set[asyncio.Task[None]] = set()

    async def run(self, stop: asyncio.Event, started: float) -> None:
        loop = asyncio.get_running_loop()
        for at, kind, job in self.schedule:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(0.0, started + at - loop.time()))
            if stop.is_set():
                break
            task = asyncio.create_task(self._one(kind, job))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    async def _one(self, kind: str, job: PlannedJob | None) -> None:
        args = self._command(kind, job)
        env = {**os.environ, "PQUEUE_DSN": self.dsn, ENV: str(self.folder)}
        t0 = time.time()
        process = await asyncio.create_subprocess_exec(
            *args, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(process.communicate(), 60)
        except TimeoutError:
            process.kill()
            out, err = await process.communicate()
        code = process.returncode
        self.history.write(
            "client", t0=t0, what=kind, code=code, error=err.decode(errors="replace")[-300:] if code else ""
        )
        if job is not None:
            self._record(job, t0, code, out.decode(errors="replace"))

    def _command(self, kind: str, job: PlannedJob | None) -> list[str]:
        pqueue = [sys.executable, "-m", "pqueue"]
        if kind == "stats":
            return [*pqueue, "stats", "--json"]
        if kind == "jobs":
            return [*pqueue, "jobs", "list", "--json", "--status", "dead"]
        assert job is not None
        if kind == "client":
            fields = {k: v for k, v in _task_fields(job).items() if v is not None}
            return [sys.executable, "-c", CLIENT_SCRIPT, json.dumps(fields)]
        t = job.task
        command = [*pqueue, "enqueue", t.type, "--payload", json.dumps(t.payload), "--job-id", str(t.job_id),
                   "--queue", str(t.queue), "--max-retries", str(t.max_retries)]  # fmt: skip
        if t.timeout is not None:
            command += ["--timeout", str(t.timeout)]
        if t.priority is not None:
            command += ["--priority", str(t.priority)]
        if t.delay is not None:
            command += ["--delay", str(t.delay)]
        return command

    def _record(self, job: PlannedJob, t0: float, code: int | None, out: str) -> None:
        if code == 0:
            self.history.write("enqueue", job.id, t0=t0, created=True, holder=job.id, spec=job.describe())
            self.producer.known.append(job.id)
        else:
            self.history.write("enqueue_error", job.id, t0=t0, error=f"exit {code}", spec=job.describe())


def _task_fields(job: PlannedJob) -> dict[str, Any]:
    t = job.task
    return {"type": t.type, "payload": t.payload, "queue": t.queue, "max_retries": t.max_retries,
            "timeout": t.timeout, "priority": t.priority, "job_id": t.job_id, "delay": t.delay}  # fmt: skip


def _line(exc: BaseException | None) -> str:
    return " ".join(str(exc).split())[:300] if exc is not None else ""
