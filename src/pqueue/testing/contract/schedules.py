"""Schedule registrations (ScheduleStore) and periodic jobs (the worker's Scheduler) on a broker.

The scheduler runs here as each worker runs it, on the injected clock, so the rules of
docs/periodic.md are checked on every backend without waiting for real ticks: one job per
tick however many schedulers race, deterministic ids, skip versus catch-up after a
downtime, and schedules that change or disappear with a deploy.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest

from pqueue.broker import FullBroker
from pqueue.broker_schedules import ScheduleInfo
from pqueue.clock import ManualClock, to_iso
from pqueue.errors import InvalidRequest
from pqueue.job import Job, JobStatus
from pqueue.periodic import Schedule, tick_job_id
from pqueue.testing.contract.helpers import OpenAnother
from pqueue.worker.schedules import META_SCHEDULE, META_TICK, SCHEDULE_TTL, Scheduler

QUEUE = "periodic"
HOUR = 3600.0


def _info(name: str, **changes: object) -> ScheduleInfo:
    fields: dict[str, object] = {
        "name": name,
        "type": "report",
        "queue": QUEUE,
        "cron": "*/5 * * * *",
        "every": None,
        "tz": "Europe/Berlin",
        "missed": "skip",
        "catch_up": 0,
        "next_run_at": 1_800_000_300.0,
    }
    fields.update(changes)
    return ScheduleInfo(**fields)  # type: ignore[arg-type]


def _minutely(name: str = "tick", **options: object) -> Schedule:
    return Schedule.build(name, "report", QUEUE, cron="* * * * *", **options)  # type: ignore[arg-type]


async def _jobs(broker: FullBroker, name: str | None = None) -> list[Job]:
    page = await broker.list_jobs(JobStatus.PENDING, queue=QUEUE, limit=500)
    jobs = [j for j in page.jobs if name is None or j.meta.get(META_SCHEDULE) == name]
    return sorted(jobs, key=lambda j: j.run_at)


def _ticks(jobs: list[Job]) -> list[float]:
    return [j.run_at.timestamp() for j in jobs]


async def _minute_start(clock: ManualClock) -> float:
    """Move the clock to 10 s past the next whole minute and return that minute."""
    minute = (clock.now() // 60 + 1) * 60
    clock.set(minute + 10)
    return minute


@pytest.mark.asyncio
class ScheduleStoreContract:
    async def test_registered_schedules_are_listed_until_their_ttl(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        start = clock.now()
        cursors = await broker.register_schedules([_info("b"), _info("a", every=60.0, cron=None)], ttl=30)
        assert cursors == [start, start]  # never ran: due ticks count from the registration
        listed = await broker.list_schedules()
        assert [s.name for s in listed] == ["a", "b"]
        assert listed[1] == _info("b")
        assert listed[0].every == 60.0 and listed[0].cron is None and listed[0].last_run_at is None
        clock.advance(29)
        assert len(await broker.list_schedules()) == 2
        clock.advance(2)
        assert await broker.list_schedules() == []

    async def test_last_run_only_rises_and_outlives_the_registration(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        await broker.register_schedules([_info("a")], ttl=30)
        await broker.mark_schedule_run("a", 1_800_000_600.0)
        await broker.mark_schedule_run("a", 1_800_000_300.0)  # older: ignored
        await broker.mark_schedule_run("nobody", 1_800_000_300.0)  # unknown: ignored
        [listed] = await broker.list_schedules()
        assert listed.last_run_at == 1_800_000_600.0
        clock.advance(10 * HOUR)  # every worker stopped; the registration expired long ago
        assert await broker.list_schedules() == []
        assert await broker.register_schedules([_info("a", cron="0 * * * *")], ttl=30) == [1_800_000_600.0]
        [listed] = await broker.list_schedules()
        assert listed.cron == "0 * * * *" and listed.last_run_at == 1_800_000_600.0

    async def test_a_new_definition_replaces_the_old_one(self, broker: FullBroker) -> None:
        await broker.register_schedules([_info("a")], ttl=30)
        await broker.register_schedules([_info("a", queue="other", missed="catch_up", catch_up=3)], ttl=30)
        [listed] = await broker.list_schedules()
        assert (listed.queue, listed.missed, listed.catch_up) == ("other", "catch_up", 3)

    async def test_to_dict_is_the_published_shape(self, broker: FullBroker) -> None:
        await broker.register_schedules([_info("a")], ttl=30)
        await broker.mark_schedule_run("a", 1_800_000_000.0)
        [listed] = await broker.list_schedules()
        assert listed.to_dict() == {
            "name": "a",
            "type": "report",
            "queue": QUEUE,
            "cron": "*/5 * * * *",
            "every": None,
            "tz": "Europe/Berlin",
            "next_run_at": to_iso(1_800_000_300.0),
            "last_run_at": to_iso(1_800_000_000.0),
            "missed": "skip",
            "catch_up": 0,
        }

    async def test_bad_registrations_are_refused(self, broker: FullBroker) -> None:
        for ttl in (0, -1, float("nan"), float("inf")):
            with pytest.raises(InvalidRequest):
                await broker.register_schedules([_info("a")], ttl=ttl)
        with pytest.raises(InvalidRequest):
            await broker.register_schedules([_info("a"), _info("a")], ttl=30)
        assert await broker.list_schedules() == []
        assert await broker.register_schedules([], ttl=30) == []


@pytest.mark.asyncio
class PeriodicContract:
    async def test_racing_schedulers_enqueue_each_tick_once(
        self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother
    ) -> None:
        brokers = [broker, await open_broker(), await open_broker()]
        schedulers = [Scheduler(b, [_minutely()]) for b in brokers]
        minute = await _minute_start(clock)
        await asyncio.gather(*(s.run_once() for s in schedulers))
        for _ in range(5):
            clock.advance(60)
            await asyncio.gather(*(s.run_once() for s in schedulers))
        jobs = await _jobs(broker)
        assert _ticks(jobs) == [minute + 60 * i for i in range(1, 6)]
        assert sum(s.enqueued for s in schedulers) == 5
        [listed] = await broker.list_schedules()
        assert listed.last_run_at == minute + 300 and listed.next_run_at == minute + 360

    async def test_tick_jobs_have_deterministic_ids_and_meta(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        schedule = Schedule.build(
            "nightly", "report", QUEUE, cron="0 3 * * *", tz="Europe/Berlin", payload=[1]
        )
        scheduler = Scheduler(broker, [schedule])
        await scheduler.run_once()
        clock.advance(24 * HOUR)
        await scheduler.run_once()
        [job] = await _jobs(broker)
        tick = job.run_at.timestamp()
        assert job.id == tick_job_id("nightly", tick) == schedule.job_id(tick)
        assert job.meta == {META_SCHEDULE: "nightly", META_TICK: to_iso(tick)}
        assert job.type == "report" and job.payload == [1] and job.queue == QUEUE
        assert job.run_at.astimezone(schedule_zone()).hour == 3
        # The same tick enqueued again, by anyone, is the same job.
        again = await broker.enqueue([Scheduler._spec(schedule, tick)])
        assert [(r.id, r.created) for r in again] == [(job.id, False)]

    async def test_missed_ticks_are_skipped_by_default(
        self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother
    ) -> None:
        minute = await _minute_start(clock)
        first = Scheduler(broker, [_minutely()])
        await first.run_once()
        clock.advance(60)
        await first.run_once()  # enqueues minute + 60
        clock.advance(10 * 60)  # the worker stopped; ten ticks pass with no scheduler
        later = Scheduler(await open_broker(), [_minutely()])
        await later.run_once()
        assert _ticks(await _jobs(broker)) == [minute + 60]
        clock.advance(60)
        await later.run_once()
        assert _ticks(await _jobs(broker)) == [minute + 60, minute + 720]

    async def test_missed_ticks_catch_up_at_most_n(
        self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother
    ) -> None:
        minute = await _minute_start(clock)
        schedule = _minutely(catch_up=3)
        first = Scheduler(broker, [schedule])
        await first.run_once()
        clock.advance(60)
        await first.run_once()
        clock.advance(10 * 60)
        later = [Scheduler(await open_broker(), [schedule]) for _ in range(2)]  # two workers restart
        await asyncio.gather(*(s.run_once() for s in later))
        caught_up = [minute + 60 * i for i in (9, 10, 11)]
        assert _ticks(await _jobs(broker)) == [minute + 60, *caught_up]
        clock.advance(60)
        await asyncio.gather(*(s.run_once() for s in later))
        assert _ticks(await _jobs(broker)) == [minute + 60, *caught_up, minute + 720]

    async def test_a_new_schedule_starts_with_its_next_tick(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        await _minute_start(clock)
        scheduler = Scheduler(broker, [_minutely(catch_up=5)])
        await scheduler.run_once()
        assert await _jobs(broker) == []  # nothing before it existed is "missed"

    async def test_every_ticks_on_multiples_of_the_interval(
        self, broker: FullBroker, clock: ManualClock
    ) -> None:
        clock.set(1_800_000_007.0)
        schedule = Schedule.build("often", "report", QUEUE, every=timedelta(seconds=30))
        scheduler = Scheduler(broker, [schedule], ttl=300, refresh=60)
        assert await scheduler.run_once() == pytest.approx(23.0)  # sleeps until the next tick
        for _ in range(4):
            clock.advance(30)
            await scheduler.run_once()
        assert _ticks(await _jobs(broker)) == [1_800_000_030.0 + 30 * i for i in range(4)]
        [listed] = await broker.list_schedules()
        assert (listed.every, listed.cron, listed.next_run_at) == (30.0, None, 1_800_000_150.0)

    async def test_a_removed_schedule_stops_and_vanishes(
        self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother
    ) -> None:
        minute = await _minute_start(clock)
        old = Scheduler(broker, [_minutely("kept"), _minutely("dropped")])
        await old.run_once()
        clock.advance(60)
        await old.run_once()
        # Deploy: the new code has no "dropped"; the old worker is gone.
        new = Scheduler(await open_broker(), [_minutely("kept")])
        await new.run_once()
        for _ in range(2):
            clock.advance(60)
            await new.run_once()
        assert _ticks(await _jobs(broker, "dropped")) == [minute + 60]
        assert _ticks(await _jobs(broker, "kept")) == [minute + 60, minute + 120, minute + 180]
        clock.advance(SCHEDULE_TTL)
        await new.run_once()
        assert [s.name for s in await broker.list_schedules()] == ["kept"]

    async def test_a_changed_schedule_takes_effect(
        self, broker: FullBroker, clock: ManualClock, open_broker: OpenAnother
    ) -> None:
        hour = (clock.now() // HOUR + 1) * HOUR
        clock.set(hour + 10)
        old = Scheduler(broker, [Schedule.build("r", "report", QUEUE, cron="0 * * * *")])
        await old.run_once()
        clock.advance(HOUR)
        await old.run_once()  # enqueues hour + 3600
        new = Scheduler(await open_broker(), [Schedule.build("r", "report", QUEUE, cron="*/15 * * * *")])
        await new.run_once()
        for _ in range(4):
            clock.advance(15 * 60)
            await new.run_once()
        assert _ticks(await _jobs(broker)) == [hour + HOUR + 15 * 60 * i for i in range(5)]
        [listed] = await broker.list_schedules()
        assert listed.cron == "*/15 * * * *"


def schedule_zone() -> ZoneInfo:
    return ZoneInfo("Europe/Berlin")
