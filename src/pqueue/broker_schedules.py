"""The broker side of periodic jobs: where workers publish their schedules.

Every worker that runs schedules registers them with a TTL on each pass, as it registers
itself, so ``pqueue schedules``, ``Client.schedules()`` and ``GET /schedules`` show them
without importing the app, and a schedule removed from the code vanishes once no worker
refreshes it. The record also keeps the newest tick that was enqueued (``last_run_at``),
kept for :data:`RECORD_RETENTION` after its last registration so that workers started
after a long downtime still know which ticks they missed (ADR 0100).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from pqueue.clock import to_iso
from pqueue.errors import InvalidRequest

RECORD_RETENTION = 30 * 24 * 3600.0
"""Seconds a schedule's record (and its last run) is kept after its registration expired."""


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """A schedule as workers publish it; ``last_run_at`` is stamped by the broker."""

    name: str
    type: str
    queue: str
    cron: str | None
    every: float | None
    tz: str
    missed: str
    """``skip`` or ``catch_up`` (:class:`pqueue.periodic.Missed`)."""
    catch_up: int
    next_run_at: float
    """Epoch seconds of the next tick, as the worker that registered it last computed it."""
    last_run_at: float | None = None
    """Epoch seconds of the newest tick enqueued (None: never ran)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data, the one shape of a schedule in every answer (CLI --json, HTTP, dashboard)."""
        return {
            "name": self.name,
            "type": self.type,
            "queue": self.queue,
            "cron": self.cron,
            "every": self.every,
            "tz": self.tz,
            "next_run_at": to_iso(self.next_run_at),
            "last_run_at": to_iso(self.last_run_at),
            "missed": self.missed,
            "catch_up": self.catch_up,
        }


def encode_schedule(info: ScheduleInfo) -> str:
    """The stored JSON of a registration (``last_run_at`` is the broker's to keep)."""
    fields = asdict(info)
    del fields["last_run_at"]
    return json.dumps(fields, separators=(",", ":"), sort_keys=True)


def decode_schedule(text: str | bytes, last_run_at: float | None) -> ScheduleInfo | None:
    """A registration read back, or None when it is not one (written by another version)."""
    try:
        data = json.loads(text)
        every = data["every"]
        return ScheduleInfo(
            name=str(data["name"]),
            type=str(data["type"]),
            queue=str(data["queue"]),
            cron=None if data["cron"] is None else str(data["cron"]),
            every=None if every is None else float(every),
            tz=str(data["tz"]),
            missed=str(data["missed"]),
            catch_up=int(data["catch_up"]),
            next_run_at=float(data["next_run_at"]),
            last_run_at=last_run_at,
        )
    except (ValueError, KeyError, TypeError):
        return None


def check_registration(schedules: Sequence[ScheduleInfo], ttl: float) -> None:
    """The same argument rule on every backend: distinct names, a finite TTL > 0."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
        raise InvalidRequest(f"register_schedules: ttl must be a finite number of seconds > 0, got {ttl!r}")
    names = [s.name for s in schedules]
    if len(set(names)) != len(names):
        raise InvalidRequest(f"register_schedules: schedule names must be distinct, got {names}")


@runtime_checkable
class ScheduleStore(Protocol):
    """Schedule registrations and their last runs (part of :class:`~pqueue.broker.FullBroker`)."""

    async def register_schedules(self, schedules: Sequence[ScheduleInfo], *, ttl: float) -> list[float]:
        """Record (or refresh) each schedule until now + ``ttl``, keeping its last run.

        Returns, per schedule in order, the moment its due ticks count from: its last run,
        or when it was first registered if it never ran. Records expired for longer than
        :data:`RECORD_RETENTION` are deleted.
        """
        ...

    async def mark_schedule_run(self, name: str, tick: float) -> None:
        """Raise the last run of schedule ``name`` to ``tick`` (never lowers it)."""
        ...

    async def list_schedules(self) -> list[ScheduleInfo]:
        """Schedules registered within their TTL, by name, with their last run."""
        ...
