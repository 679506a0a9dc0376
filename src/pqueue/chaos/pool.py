"""The workers of a chaos run, and what faults do to them.

:class:`ProcessPool` runs each worker as a process of its own (``python -m
pqueue.chaos.worker``) and can SIGKILL it, freeze it (SIGSTOP, then SIGCONT: a zombie that
wakes after its lease expired) or drain it (SIGTERM), starting a replacement so the pool
keeps its size. :class:`InProcessPool` runs them as :class:`~pqueue.worker.Worker` objects
in the driver's own event loop, for ``memory://``, which no other process can reach: there
only a drain applies. Both report the workers that exited without being asked to.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pqueue.chaos.app import close_history
from pqueue.chaos.history import ENV
from pqueue.chaos.worker import worker_settings


class Pool(Protocol):
    """Workers that faults can strike; each slot is refilled when its worker goes."""

    size: int

    async def start(self) -> None: ...
    def pid(self, slot: int) -> int: ...
    def refill(self) -> None: ...
    async def kill(self, slot: int) -> None: ...
    async def freeze(self, slot: int, seconds: float) -> None: ...
    async def drain(self, slot: int) -> None: ...
    async def close(self) -> None: ...
    def problems(self) -> list[str]:
        """Workers that exited without being asked to, or drained with a non-zero code."""
        ...


@dataclass
class _Proc:
    slot: int
    process: subprocess.Popen[bytes]
    log: Path
    expected: bool = False
    """Whether its exit was asked for (a kill or a drain)."""


class ProcessPool:
    """``size`` worker processes on ``dsn``, their output in the history folder."""

    def __init__(
        self, dsn: str, folder: Path, *, size: int, concurrency: int, lease: float, env: dict[str, str]
    ) -> None:
        self.size = size
        self._dsn = dsn
        self._folder = folder
        self._concurrency = concurrency
        self._lease = lease
        self._env = env
        self._procs: dict[int, _Proc] = {}
        self._gone: list[_Proc] = []
        self._started = 0

    async def start(self) -> None:
        for slot in range(self.size):
            self._spawn(slot)

    def _spawn(self, slot: int) -> None:
        self._started += 1
        log = self._folder / f"worker-{slot}-{self._started}.log"
        command = [sys.executable, "-m", "pqueue.chaos.worker", "--concurrency", str(self._concurrency),
                   "--lease", str(self._lease)]  # fmt: skip
        env = {**os.environ, **self._env, "PQUEUE_DSN": self._dsn, ENV: str(self._folder)}
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C reaches the driver only, which stops them
            )  # fmt: skip
        self._procs[slot] = _Proc(slot, process, log)

    def pid(self, slot: int) -> int:
        return self._procs[slot].process.pid

    def refill(self) -> None:
        """Replace the workers that exited by themselves (each one is a problem of the run)."""
        for slot, proc in list(self._procs.items()):
            if proc.process.poll() is not None:
                self._gone.append(self._procs.pop(slot))
                self._spawn(slot)

    async def kill(self, slot: int) -> None:
        proc = self._procs.pop(slot)
        proc.expected = True
        proc.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.process.wait)
        self._gone.append(proc)
        self._spawn(slot)

    async def freeze(self, slot: int, seconds: float) -> None:
        process = self._procs[slot].process
        process.send_signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGCONT)

    async def drain(self, slot: int) -> None:
        proc = self._procs.pop(slot)
        proc.expected = True
        self._spawn(slot)  # the replacement first, as a rolling deploy does
        proc.process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.process.wait)
        self._gone.append(proc)

    async def close(self) -> None:
        procs = list(self._procs.values())
        self._procs.clear()
        for proc in procs:
            proc.expected = True
            with contextlib.suppress(ProcessLookupError):
                proc.process.send_signal(signal.SIGCONT)
                proc.process.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                await asyncio.to_thread(proc.process.wait, 60)
            except subprocess.TimeoutExpired:
                proc.process.kill()
                await asyncio.to_thread(proc.process.wait)
                proc.expected = False
            self._gone.append(proc)

    def problems(self) -> list[str]:
        out = []
        for proc in [*self._gone, *self._procs.values()]:
            code = proc.process.poll()
            if code is None:
                continue
            asked_to_die = proc.expected and code == -signal.SIGKILL
            if asked_to_die or (proc.expected and code == 0):
                continue
            tail = proc.log.read_text(errors="replace").strip().splitlines()[-3:]
            out.append(f"worker {proc.process.pid} exited with {code}: {' | '.join(tail)}")
        return out


class InProcessPool:
    """Workers in the driver's own loop (memory://): drained and replaced, never killed."""

    def __init__(self, dsn: str, folder: Path, *, size: int, concurrency: int, lease: float) -> None:
        from pqueue.chaos.app import router

        self.size = size
        self._dsn = dsn
        self._folder = folder
        self._router = router
        self._concurrency = concurrency
        self._lease = lease
        os.environ[ENV] = str(folder)  # where the handlers and the recorder write, here too
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._workers: dict[int, object] = {}
        self._failed: list[str] = []

    async def start(self) -> None:
        for slot in range(self.size):
            self._spawn(slot)

    def _spawn(self, slot: int) -> None:
        from pqueue.worker import Worker

        worker = Worker(self._dsn, self._router, **worker_settings(self._concurrency, self._lease))
        self._workers[slot] = worker
        self._tasks[slot] = asyncio.create_task(worker.serve(), name=f"chaos-worker-{slot}")

    def pid(self, slot: int) -> int:
        return os.getpid()

    def refill(self) -> None:
        for slot, task in list(self._tasks.items()):
            if task.done():
                self._failed.append(f"worker {slot} stopped by itself: {_why(task)}")
                self._workers.pop(slot, None)
                del self._tasks[slot]
                self._spawn(slot)

    async def kill(self, slot: int) -> None:
        raise NotImplementedError("a worker in the driver's own process cannot be killed")

    async def freeze(self, slot: int, seconds: float) -> None:
        raise NotImplementedError("a worker in the driver's own process cannot be frozen")

    async def drain(self, slot: int) -> None:
        worker, task = self._workers.pop(slot), self._tasks.pop(slot)
        self._spawn(slot)
        worker.stop()  # type: ignore[attr-defined]
        await self._ended(task)

    async def _ended(self, task: asyncio.Task[None]) -> None:
        try:
            await asyncio.wait_for(task, 60)
        except Exception as exc:  # noqa: BLE001 - reported as a problem of the run
            self._failed.append(f"worker {task.get_name()} failed: {exc!r}")

    async def close(self) -> None:
        for worker in self._workers.values():
            worker.stop()  # type: ignore[attr-defined]
        for task in self._tasks.values():
            await self._ended(task)
        self._tasks.clear()
        self._workers.clear()
        close_history(str(self._folder))

    def problems(self) -> list[str]:
        return list(self._failed)


def _why(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "cancelled"
    return repr(task.exception()) if task.exception() is not None else "returned"
