"""Clocks: the single authority on "now" for a broker.

Production brokers read the server's clock (Redis ``TIME``, Postgres ``now()``) or,
for the memory backend, :class:`SystemClock`. Tests inject a :class:`ManualClock`
into every broker so time-based rules run instantly and deterministically.
Times are float seconds since the Unix epoch.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Something that tells the current time in epoch seconds."""

    def now(self) -> float:
        """Return the current time as float seconds since the epoch."""
        ...


class SystemClock:
    """The host's wall clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to; thread-safe.

    Starts at a fixed, recent instant so ids and dates look real in test output.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (never backwards) and return the new now."""
        if seconds < 0:
            raise ValueError("ManualClock.advance: seconds must be >= 0")
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, when: float | datetime) -> None:
        """Jump to an absolute time (epoch seconds or an aware datetime)."""
        with self._lock:
            self._now = when.timestamp() if isinstance(when, datetime) else float(when)


def to_datetime(epoch: float) -> datetime:
    """Epoch seconds -> aware UTC datetime."""
    return datetime.fromtimestamp(epoch, UTC)


def to_iso(when: datetime | float | None) -> str | None:
    """An aware datetime or epoch seconds as ISO-8601 UTC text (``2026-11-23T15:04:05.123456+00:00``),
    the time format of every JSON answer (``Job.to_dict``, ``Stats.to_dict``); None stays None."""
    if when is None:
        return None
    if not isinstance(when, datetime):
        when = to_datetime(when)
    return when.astimezone(UTC).isoformat()


def to_epoch(when: datetime) -> float:
    """Aware datetime -> epoch seconds; naive datetimes are refused (ambiguous zone)."""
    if when.tzinfo is None:
        raise ValueError("naive datetime: pass a timezone-aware datetime (e.g. datetime.now(UTC))")
    return when.timestamp()
