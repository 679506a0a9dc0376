"""The scheduler every worker with periodic jobs runs: enqueue each tick, with no leader.

Each pass registers the worker's schedules with the broker (which answers where each
one's due ticks count from), enqueues the due ticks with their deterministic job ids and
raises each schedule's last run. Any number of workers may run the same schedules: their
enqueues of one tick carry one id, so the broker stores one job and refuses the rest
(``created=False``). A tick is *on time* when this scheduler had already completed a pass
before it fell due; older unrun ticks are *missed*, and the schedule's policy decides
about those (skip, or catch up the newest N). ADR 0100 explains the design.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import datetime

from pqueue.broker import FullBroker
from pqueue.broker_schedules import ScheduleInfo
from pqueue.clock import to_datetime, to_iso
from pqueue.errors import BrokerUnavailable
from pqueue.job import JobSpec
from pqueue.periodic import Schedule
from pqueue.spec import build_spec
from pqueue.worker.fatal import Seen, never

log = logging.getLogger("pqueue.worker")

SCHEDULE_TTL = 60.0
"""Seconds a registration lives without a refresh: a removed schedule is listed this long."""
REFRESH = 20.0
"""The longest a scheduler sleeps between passes (it refreshes its registrations each pass)."""
RETRY_AFTER_ERROR = 5.0
"""Seconds before the next pass after one failed for an unexpected reason."""
META_SCHEDULE = "pqueue.schedule"
"""``job.meta`` key naming the schedule that enqueued a job."""
META_TICK = "pqueue.tick"
"""``job.meta`` key holding the tick a job was enqueued for (ISO-8601 UTC)."""


class Scheduler:
    """Enqueues the due ticks of ``schedules`` on ``broker``: :meth:`run_once` is one pass,
    :meth:`run` passes at each tick until stopped."""

    def __init__(
        self,
        broker: FullBroker,
        schedules: Sequence[Schedule],
        *,
        ttl: float = SCHEDULE_TTL,
        refresh: float = REFRESH,
        fatal: Seen = never,
    ) -> None:
        self.broker = broker
        self.fatal = fatal
        """Sees each failed pass first: a fatal error is the worker's to report (pqueue.worker.fatal)."""
        self.schedules = tuple(schedules)
        self.ttl = ttl
        self.refresh = min(refresh, ttl / 3)
        self.awake_since: float | None = None
        """Broker time of this scheduler's last completed pass (None before the first)."""
        self._cursors: dict[str, float] = {}
        self.enqueued = 0
        """Jobs this scheduler created (ticks another worker had enqueued are not counted)."""

    async def run_once(self) -> float:
        """One pass; returns the seconds until the next one is due."""
        now = await self.broker.now()
        infos = [self._info(s, now) for s in self.schedules]
        stored = await self.broker.register_schedules(infos, ttl=self.ttl)
        specs: list[JobSpec] = []
        newest: dict[str, float] = {}
        for schedule, cursor in zip(self.schedules, stored, strict=True):
            after = max(cursor, self._cursors.get(schedule.name, cursor))
            ticks = schedule.due(after, now, awake_since=self.awake_since)
            specs += [self._spec(schedule, tick) for tick in ticks]
            if ticks:
                newest[schedule.name] = ticks[-1]
            self._cursors[schedule.name] = max(after, schedule.last_until(now))
        if specs:
            results = await self.broker.enqueue(specs)
            created = sum(r.created for r in results)
            self.enqueued += created
            if created:
                log.info("scheduler enqueued %d periodic job(s)", created)
        for name, tick in newest.items():
            await self.broker.mark_schedule_run(name, tick)
        self.awake_since = now
        wait = min(info.next_run_at for info in infos) - now if infos else self.refresh
        return max(0.0, min(wait, self.refresh))

    async def run(self, stop: asyncio.Event) -> None:
        """Pass at every tick (and every ``refresh`` seconds) until ``stop`` is set; errors
        are logged and the loop goes on (ticks missed meanwhile follow their policy)."""
        while not stop.is_set():
            try:
                wait = await self.run_once() + 0.005  # wake just after the tick, not just before
            except BrokerUnavailable as exc:
                log.debug("scheduler pass failed (%s); retrying", exc)
                wait = 1.0
            except Exception as exc:  # noqa: BLE001 - nothing may end the scheduler
                if not self.fatal(exc, "scheduler pass"):
                    log.warning("scheduler pass failed (%s: %s); retrying", type(exc).__name__, exc)
                wait = RETRY_AFTER_ERROR
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)

    @staticmethod
    def _info(schedule: Schedule, now: float) -> ScheduleInfo:
        return ScheduleInfo(
            name=schedule.name,
            type=schedule.type,
            queue=schedule.queue,
            cron=schedule.cron,
            every=schedule.every,
            tz=schedule.tz,
            missed=schedule.missed.value,
            catch_up=schedule.catch_up,
            next_run_at=schedule.next_after(now),
        )

    @staticmethod
    def _spec(schedule: Schedule, tick: float) -> JobSpec:
        run_at: datetime = to_datetime(tick)
        return build_spec(
            schedule.type,
            schedule.payload,
            queue=schedule.queue,
            run_at=run_at,
            max_retries=schedule.max_retries,
            timeout=schedule.timeout,
            job_id=schedule.job_id(tick),
            meta={META_SCHEDULE: schedule.name, META_TICK: to_iso(tick) or ""},
        )
