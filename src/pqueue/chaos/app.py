"""The jobs a chaos run enqueues and the handlers its workers run.

A job's payload says how its handler behaves (``{"b": "flaky", "n": 2, ...}``): succeed,
fail a few times, fail for good, raise ``SkipRetry``, outlive its timeout, run until it is
cancelled, or complete inside ``job.transaction()`` with an effect row written in the same
transaction. Every run records its start and end in the history, and :class:`Recorder`
records how the worker settled each delivery, so the checker can tell a repeated run
(allowed) from a job completed twice (not).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from typing import Any

from pqueue.broker import RecoveryReport
from pqueue.chaos.history import ENV, HistoryWriter
from pqueue.errors import SkipRetry
from pqueue.job import Job
from pqueue.middleware import JobReport, Middleware
from pqueue.retry import ConstantBackoff
from pqueue.router import Router

EFFECTS_ENV = "PQUEUE_CHAOS_EFFECTS"
"""The effects table's name as the workers' SQL writes it (schema-qualified on Postgres)."""

QUEUES = ("chaos-hi", "chaos", "chaos-lo")
WORKER_QUEUES = "chaos-hi:3,chaos:2,chaos-lo:1"
SETUP_QUEUE = "chaos-setup"
"""Where the run's own bookkeeping jobs go (the effects table's creation and count)."""

ASYNC, SYNC = "chaos:async", "chaos:sync"
SETUP, EFFECTS = "chaos:setup", "chaos:effects"

router = Router()
_writers: dict[str, HistoryWriter] = {}


def history() -> HistoryWriter:
    """This process's history writer in the current run's folder (one per folder: the
    in-process workers of consecutive runs in one process write to their own run's)."""
    folder = os.environ[ENV]
    writer = _writers.get(folder)
    if writer is None:
        writer = _writers[folder] = HistoryWriter(folder, "worker")
    return writer


def close_history(folder: str) -> None:
    """Close this process's writer for a finished run's folder."""
    writer = _writers.pop(folder, None)
    if writer is not None:
        writer.close()


class ChaosFailure(Exception):
    """The failure a chaos job raises on purpose."""


def _effects_table() -> str:
    return os.environ.get(EFFECTS_ENV, "pqueue_chaos_effects")


def _placeholder(conn: Any) -> str:
    """``?`` for sqlite3 connections, ``%s`` for psycopg ones."""
    return "?" if type(conn).__module__.startswith("sqlite3") else "%s"


async def _execute(conn: Any, sql: str, params: list[Any] | None = None) -> Any:
    """``conn.execute`` on a psycopg AsyncConnection (awaited) or a sqlite3 connection (plain:
    an async handler's SQLite block hands out a blocking connection)."""
    result = conn.execute(sql, params or [])
    return await result if inspect.isawaitable(result) else result


async def _fetchall(cursor: Any) -> list[Any]:
    rows = cursor.fetchall()
    return list(await rows if inspect.isawaitable(rows) else rows)


def _effect_sql(conn: Any) -> str:
    mark = _placeholder(conn)
    return f"INSERT INTO {_effects_table()} (job_id, attempt, pid) VALUES ({mark}, {mark}, {mark})"


def _started(job: Job) -> dict[str, Any]:
    spec = job.payload if isinstance(job.payload, dict) else {}
    history().write(
        "start", job.id, attempt=job.attempt, recoveries=job.recoveries, queue=job.queue,
        b=spec.get("b"), limit=job.limit_key,
    )  # fmt: skip
    return spec


def _ended(job: Job, how: str) -> None:
    history().write("end", job.id, attempt=job.attempt, how=how)


def _verdict(job: Job, spec: dict[str, Any]) -> None:
    """Raise as the job's behaviour asks for this attempt (before its work, for most)."""
    behaviour = spec.get("b")
    if behaviour == "fail":
        raise ChaosFailure(f"chaos: {job.id} always fails")
    if behaviour == "skip":
        raise SkipRetry(f"chaos: {job.id} gives up")
    if behaviour in ("flaky", "txn_fail") and job.attempt <= int(spec.get("n", 0)):
        raise ChaosFailure(f"chaos: {job.id} fails attempt {job.attempt}")


@router.task(ASYNC, queue="chaos", retry=ConstantBackoff(0.1))
async def run_async(job: Job) -> Any:
    spec = _started(job)
    how = "error"
    try:
        result = await _behave_async(job, spec)
        how = "ok"
        return result
    except asyncio.CancelledError:
        how = "cancelled"
        raise
    finally:
        _ended(job, how)


async def _behave_async(job: Job, spec: dict[str, Any]) -> Any:
    behaviour = spec.get("b")
    if behaviour in ("txn", "txn_fail", "txn_timeout"):
        tx = job.transaction()
        async with tx as conn:
            await asyncio.sleep(float(spec.get("s", 0.0)))
            await _execute(conn, _effect_sql(conn), [job.id, job.attempt, os.getpid()])
            _verdict(job, spec)
            tx.result = {"effect": job.id}
        return tx.result
    _verdict(job, spec)
    if behaviour == "long":
        await asyncio.sleep(float(spec.get("s", 3.0)))  # a cancel of the job cancels this task
    elif behaviour in ("slow", "timeout"):
        await asyncio.sleep(float(spec.get("s", 0.1)))
    return {"n": spec.get("i")}


@router.task(SYNC, queue="chaos", retry=ConstantBackoff(0.1))
def run_sync(job: Job) -> Any:
    spec = _started(job)
    how = "error"
    try:
        result = _behave_sync(job, spec)
        how = "ok"
        return result
    finally:
        _ended(job, how)


def _behave_sync(job: Job, spec: dict[str, Any]) -> Any:
    behaviour = spec.get("b")
    if behaviour in ("txn", "txn_fail", "txn_timeout"):
        tx = job.transaction()
        with tx as conn:
            time.sleep(float(spec.get("s", 0.0)))
            conn.execute(_effect_sql(conn), [job.id, job.attempt, os.getpid()])
            _verdict(job, spec)
            tx.result = {"effect": job.id}
        return tx.result
    _verdict(job, spec)
    if behaviour == "long":
        deadline = time.monotonic() + float(spec.get("s", 3.0))
        while time.monotonic() < deadline and not job.cancelled():
            time.sleep(0.02)
    elif behaviour in ("slow", "timeout"):
        time.sleep(float(spec.get("s", 0.1)))
    return {"n": spec.get("i")}


@router.task(SETUP, queue=SETUP_QUEUE, retry=ConstantBackoff(0.1))
async def setup(job: Job) -> None:
    """Create the effects table, in the queue's own database (a job, so the run needs no
    driver of its own for it)."""
    async with job.transaction() as conn:
        await _execute(
            conn,
            f"CREATE TABLE IF NOT EXISTS {_effects_table()} "
            "(job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)",
        )


@router.task(EFFECTS, queue=SETUP_QUEUE, retry=ConstantBackoff(0.1))
async def count_effects(job: Job) -> dict[str, int]:
    """How many effect rows each job wrote (its result; read in a transaction of its own)."""
    tx = job.transaction()
    async with tx as conn:
        cursor = await _execute(conn, f"SELECT job_id, count(*) FROM {_effects_table()} GROUP BY job_id")
        rows = await _fetchall(cursor)
        tx.result = {str(job_id): int(n) for job_id, n in rows}
    return dict(tx.result)


class Recorder(Middleware):
    """Records how the worker settled each delivery, and the jobs it took back."""

    def after_job(self, report: JobReport) -> None:
        history().write(
            "settled", report.job.id, outcome=report.outcome.value, attempt=report.job.attempt,
            error=type(report.error).__name__ if report.error is not None else None,
        )  # fmt: skip

    def after_recover(self, report: RecoveryReport) -> None:
        for job_id in report.recovered:
            history().write("recovered", job_id)
        for job_id in report.dead:
            history().write("recovered", job_id, dead=True)
