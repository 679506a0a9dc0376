"""Periodic jobs: a :class:`Schedule` says when a job type is enqueued (cron or ``every``).

A schedule is pure arithmetic on epoch seconds: :meth:`Schedule.next_after` and
:meth:`Schedule.due` give its ticks, and :func:`tick_job_id` the one job id of each tick,
so every worker that runs the schedule computes the same ids and their enqueues collapse
into one job per tick (ADR 0100). Cron expressions are read by croniter (``pqueue-jobs[cron]``),
imported only when a cron schedule is made, so ``import pqueue`` stays light.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pqueue.errors import ConfigError, InvalidJob
from pqueue.extras import install_hint
from pqueue.ids import key_id
from pqueue.job import JSONValue
from pqueue.spec import JOB_TYPE_RE, encode_payload

MAX_CATCH_UP = 1000
"""The most missed ticks one schedule may catch up after downtime."""
MIN_EVERY = 1.0
"""The shortest ``every=`` interval, in seconds."""
MAX_ON_TIME = 1000
"""The most on-time ticks one pass enqueues for a schedule (a bound, never reached in practice)."""
TICK_NAMESPACE = "pqueue:schedule"
"""Mixed into :func:`tick_job_id`, so tick ids never collide with :func:`pqueue.ids.key_id` ids."""


class Missed(StrEnum):
    """What happens to ticks that fell due while no worker ran the schedule."""

    SKIP = "skip"
    """They are not run: the schedule resumes with its next tick."""
    CATCH_UP = "catch_up"
    """The newest ``catch_up`` of them are enqueued at once (oldest first)."""


def tick_job_id(schedule: str, tick: float) -> str:
    """The job id of ``schedule``'s tick at epoch ``tick``: the same in every process."""
    return key_id(TICK_NAMESPACE, schedule, str(round(tick * 1000)))


def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError:  # pragma: no cover - depends on the install
        raise ConfigError(
            f"cron schedules need croniter: {install_hint('cron')}; every= schedules do not"
        ) from None
    return croniter


def _zone(tz: str) -> ZoneInfo:
    if not isinstance(tz, str) or not tz:
        raise ConfigError(f"tz must be an IANA time zone name such as 'Europe/Berlin', got {tz!r}")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown time zone {tz!r}: use an IANA name such as 'Europe/Berlin' or 'UTC'"
        ) from None


def _every_seconds(every: timedelta | float) -> float:
    seconds = every.total_seconds() if isinstance(every, timedelta) else every
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ConfigError(f"every must be a timedelta or a number of seconds, got {every!r}")
    if seconds < MIN_EVERY:
        raise ConfigError(f"every must be at least {MIN_EVERY:g} second, got {seconds!r}")
    return float(seconds)


@dataclass(frozen=True, slots=True)
class Schedule:
    """When job type ``type`` is enqueued to ``queue``: a cron expression in ``tz``, or every
    ``every`` seconds (ticks at whole multiples of ``every`` since the Unix epoch, UTC).

    Build it with :meth:`build` (``@router.periodic`` does); ``name`` identifies it in the
    broker and in job ids, so renaming a schedule makes a new one.
    """

    name: str
    type: str
    queue: str
    cron: str | None = None
    every: float | None = None
    tz: str = "UTC"
    missed: Missed = Missed.SKIP
    catch_up: int = 0
    payload: JSONValue = None
    max_retries: int = 3
    timeout: float | None = None

    @classmethod
    def build(
        cls,
        name: str,
        job_type: str,
        queue: str,
        *,
        cron: str | None = None,
        every: timedelta | float | None = None,
        tz: str = "UTC",
        missed: Missed | str | None = None,
        catch_up: int = 0,
        payload: JSONValue = None,
        max_retries: int = 3,
        timeout: float | None = None,
    ) -> Schedule:
        """Check every option (a bad one raises :class:`~pqueue.errors.ConfigError`)."""
        if not isinstance(name, str) or not JOB_TYPE_RE.match(name):
            raise ConfigError(f"invalid schedule name {name!r}: use the characters a job type may hold")
        if (cron is None) == (every is None):
            raise ConfigError(f"schedule {name!r}: give either a cron expression or every=, not both")
        _zone(tz)
        seconds = None if every is None else _every_seconds(every)
        if cron is not None:
            if not isinstance(cron, str) or len(cron.split()) != 5:
                raise ConfigError(
                    f"schedule {name!r}: cron needs 5 fields (minute hour day month weekday), got {cron!r}"
                )
            croniter = _croniter()
            if not croniter.is_valid(cron):
                raise ConfigError(f"schedule {name!r}: invalid cron expression {cron!r}")
        if isinstance(catch_up, bool) or not isinstance(catch_up, int) or not 0 <= catch_up <= MAX_CATCH_UP:
            raise ConfigError(f"catch_up must be an int from 0 to {MAX_CATCH_UP}, got {catch_up!r}")
        try:
            policy = Missed(missed) if missed is not None else Missed.CATCH_UP if catch_up else Missed.SKIP
        except ValueError:
            raise ConfigError(f"missed must be 'skip' or 'catch_up', got {missed!r}") from None
        if policy is Missed.CATCH_UP and catch_up < 1:
            raise ConfigError(f"schedule {name!r}: missed='catch_up' needs catch_up=N (N >= 1)")
        if policy is Missed.SKIP and catch_up:
            raise ConfigError(f"schedule {name!r}: catch_up={catch_up} contradicts missed='skip'")
        try:
            encode_payload(payload)
        except InvalidJob as exc:
            raise ConfigError(f"schedule {name!r}: {exc}") from None
        return cls(
            name=name,
            type=job_type,
            queue=queue,
            cron=cron,
            every=seconds,
            tz=tz if cron is not None else "UTC",
            missed=policy,
            catch_up=catch_up,
            payload=payload,
            max_retries=max_retries,
            timeout=timeout,
        )

    def _cron(self, at: float) -> Any:
        return _croniter()(self.cron, datetime.fromtimestamp(at, ZoneInfo(self.tz)))

    def next_after(self, at: float) -> float:
        """The first tick strictly after epoch ``at``."""
        if self.every is not None:
            return (math.floor(at / self.every) + 1) * self.every
        return float(self._cron(at).get_next(float))

    def previous(self, at: float) -> float:
        """The last tick strictly before epoch ``at``."""
        if self.every is not None:
            return (math.ceil(at / self.every) - 1) * self.every
        return float(self._cron(at).get_prev(float))

    def last_until(self, at: float) -> float:
        """The last tick at or before epoch ``at``."""
        if self.every is not None:
            return math.floor(at / self.every) * self.every
        return self.previous(math.floor(at) + 1.0)  # cron ticks fall on whole seconds

    def due(self, after: float, until: float, *, awake_since: float | None) -> list[float]:
        """The ticks to enqueue now, oldest first: of the ticks in (``after``, ``until``],
        every one after ``awake_since`` (on time: a scheduler was waiting for it) and, of
        the older ones (missed), the newest ``catch_up`` under :attr:`Missed.CATCH_UP`."""
        on_time: list[float] = []
        missed: list[float] = []
        want_missed = self.catch_up if self.missed is Missed.CATCH_UP else 0
        tick = self.last_until(until)
        while tick > after:
            if awake_since is not None and tick > awake_since and len(on_time) < MAX_ON_TIME:
                on_time.append(tick)
            elif len(missed) < want_missed:
                missed.append(tick)
            else:
                break
            tick = self.previous(tick)
        return sorted(missed + on_time)

    def job_id(self, tick: float) -> str:
        """The id of this schedule's job for ``tick`` (see :func:`tick_job_id`)."""
        return tick_job_id(self.name, tick)
