"""A chaos run's history: what every process did and saw, one JSON line per event.

Each process (the driver, each worker, each short-lived client) appends to a file of its
own in the run's history folder, one ``os.write`` per line on an ``O_APPEND`` descriptor:
a line written before a SIGKILL is in the kernel and survives it, and no line is ever
half-written or interleaved. Times are ``time.time()`` on the chaos host, where every
process of the run lives, so lines from different processes compare.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV = "PQUEUE_CHAOS_HISTORY"
"""The history folder, handed to the processes a run starts."""


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened: when, what, in which process, to which job."""

    t: float
    kind: str
    pid: int
    job: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def line(self) -> str:
        """The event as one readable line, for a violation's excerpt."""
        extra = " ".join(f"{k}={v}" for k, v in self.data.items())
        job = f" job={self.job}" if self.job else ""
        return f"{self.t:.3f} pid={self.pid} {self.kind}{job} {extra}".rstrip()


class HistoryWriter:
    """Appends this process's events to ``<folder>/<role>-<pid>.jsonl`` (thread-safe: a
    sync handler's thread and the worker's loop both write)."""

    def __init__(self, folder: str | Path, role: str) -> None:
        self.pid = os.getpid()
        self.path = Path(folder) / f"{role}-{self.pid}.jsonl"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._lock = threading.Lock()

    def write(self, kind: str, job: str | None = None, *, t: float | None = None, **data: Any) -> None:
        record = {"t": time.time() if t is None else t, "kind": kind, "pid": self.pid, **data}
        if job is not None:
            record["job"] = job
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            if self._fd >= 0:
                os.write(self._fd, line)

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


def _events(path: Path) -> Iterator[Event]:
    for text in path.read_text(encoding="utf-8").splitlines():
        if not text.strip():
            continue
        record = json.loads(text)
        t, kind, pid, job = record.pop("t"), record.pop("kind"), record.pop("pid"), record.pop("job", None)
        yield Event(float(t), str(kind), int(pid), job, record)


def read_history(folder: str | Path) -> list[Event]:
    """Every event of the run, oldest first (ties keep each file's order)."""
    events: list[Event] = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        events.extend(_events(path))
    events.sort(key=lambda e: e.t)
    return events


def by_job(events: Iterable[Event]) -> dict[str, list[Event]]:
    """Each job's events, oldest first."""
    out: dict[str, list[Event]] = {}
    for event in events:
        if event.job is not None:
            out.setdefault(event.job, []).append(event)
    return out
