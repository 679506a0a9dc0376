"""Schedules as arithmetic: cron in a time zone (DST included), every=, missed-tick policy,
deterministic ids, option checks, and ``@router.periodic``."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pqueue import Router
from pqueue.errors import ConfigError
from pqueue.periodic import Missed, Schedule, tick_job_id

BERLIN = ZoneInfo("Europe/Berlin")


def at(*args: int) -> float:
    return datetime(*args, tzinfo=BERLIN).timestamp()  # type: ignore[misc]


def local(ticks: list[float]) -> list[str]:
    return [datetime.fromtimestamp(t, BERLIN).strftime("%m-%d %H:%M%z") for t in ticks]


def test_cron_in_a_time_zone() -> None:
    s = Schedule.build("r", "t", "q", cron="*/5 * * * *", tz="Europe/Berlin")
    assert s.next_after(at(2027, 1, 15, 9, 0)) == at(2027, 1, 15, 9, 5)  # strictly after
    assert s.next_after(at(2027, 1, 15, 9, 1)) == at(2027, 1, 15, 9, 5)
    assert s.last_until(at(2027, 1, 15, 9, 5)) == at(2027, 1, 15, 9, 5)  # at or before
    assert s.previous(at(2027, 1, 15, 9, 5)) == at(2027, 1, 15, 9, 0)


def test_spring_forward_runs_the_missing_hour_once_right_after_the_gap() -> None:
    """Europe/Berlin, 2027-03-28: 02:00 CET jumps to 03:00 CEST, so 02:00 never happens;
    a "0 2 * * *" schedule runs at 03:00 CEST that night, once (docs/periodic.md)."""
    s = Schedule.build("r", "t", "q", cron="0 2 * * *", tz="Europe/Berlin")
    ticks = s.due(at(2027, 3, 26, 12, 0), at(2027, 3, 30, 12, 0), awake_since=0.0)
    assert local(ticks) == ["03-27 02:00+0100", "03-28 03:00+0200", "03-29 02:00+0200", "03-30 02:00+0200"]
    assert s.next_after(at(2027, 3, 27, 12, 0)) == ticks[1]


def test_fall_back_runs_a_repeated_wall_time_at_both_instants() -> None:
    """2027-10-31: 03:00 CEST falls back to 02:00 CET, so 02:00-02:59 happen twice; cron
    (croniter) fires at both, an hour apart (docs/periodic.md says how to avoid it)."""
    s = Schedule.build("r", "t", "q", cron="0 2 * * *", tz="Europe/Berlin")
    ticks = s.due(at(2027, 10, 30, 12, 0), at(2027, 11, 1, 12, 0), awake_since=0.0)
    assert local(ticks) == ["10-31 02:00+0200", "10-31 02:00+0100", "11-01 02:00+0100"]
    hourly = Schedule.build("h", "t", "q", cron="30 * * * *", tz="Europe/Berlin")
    start = datetime(2027, 10, 31, 0, 0, tzinfo=BERLIN).timestamp()
    ticks = hourly.due(start, start + 5 * 3600, awake_since=0.0)
    assert [b - a for a, b in itertools.pairwise(ticks)] == [3600.0] * 4  # one per real hour


def test_utc_has_no_dst() -> None:
    s = Schedule.build("r", "t", "q", cron="0 2 * * *")
    ticks = s.due(at(2027, 3, 26, 12, 0), at(2027, 3, 30, 12, 0), awake_since=0.0)
    assert [b - a for a, b in itertools.pairwise(ticks)] == [86400.0] * 3


def test_every_ticks_on_epoch_multiples() -> None:
    s = Schedule.build("e", "t", "q", every=timedelta(minutes=10))
    assert s.every == 600.0 and s.tz == "UTC"
    assert s.next_after(1_800_000_000.0) == 1_800_000_600.0
    assert s.last_until(1_800_000_599.0) == 1_800_000_000.0
    assert s.due(1_800_000_000.0, 1_800_003_000.0, awake_since=1_800_000_000.0) == [
        1_800_000_600.0 + 600 * i for i in range(5)
    ]


def test_on_time_ticks_all_run_missed_ones_follow_the_policy() -> None:
    skip = Schedule.build("s", "t", "q", every=60)
    catch = Schedule.build("c", "t", "q", every=60, catch_up=2)
    assert catch.missed is Missed.CATCH_UP
    after, until, awake = 0.0, 600.0, 480.0  # ran last at 0, awake since 480, now 600
    assert skip.due(after, until, awake_since=awake) == [540.0, 600.0]
    assert catch.due(after, until, awake_since=awake) == [420.0, 480.0, 540.0, 600.0]
    assert skip.due(after, until, awake_since=None) == []  # a fresh scheduler: all missed
    assert catch.due(after, until, awake_since=None) == [540.0, 600.0]
    assert catch.due(600.0, 600.0, awake_since=None) == []


def test_a_long_downtime_costs_no_more_than_the_ticks_it_runs() -> None:
    catch = Schedule.build("c", "t", "q", every=1, catch_up=3)
    assert catch.due(0.0, 10.0**9, awake_since=None) == [10.0**9 - 2, 10.0**9 - 1, 10.0**9]


def test_tick_ids_are_deterministic_uuids() -> None:
    a = tick_job_id("nightly", 1_800_000_000.0)
    assert a == tick_job_id("nightly", 1_800_000_000.0)
    assert a != tick_job_id("nightly", 1_800_000_060.0) != tick_job_id("other", 1_800_000_000.0)
    assert len(a) == 36 and a[14] == "8"  # UUIDv8


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({}, "either a cron expression or every"),
        ({"cron": "* * * * *", "every": 60}, "either"),
        ({"cron": "* * * *"}, "5 fields"),
        ({"cron": "61 * * * *"}, "invalid cron"),
        ({"cron": "* * * * *", "tz": "Mars/Olympus"}, "unknown time zone"),
        ({"every": 0.5}, "at least 1 second"),
        ({"every": "60"}, "timedelta or a number"),
        ({"every": 60, "catch_up": -1}, "catch_up must be"),
        ({"every": 60, "missed": "catch_up"}, "needs catch_up"),
        ({"every": 60, "missed": "skip", "catch_up": 2}, "contradicts"),
        ({"every": 60, "missed": "later"}, "'skip' or 'catch_up'"),
        ({"every": 60, "payload": {1, 2}}, "schedule 'n'"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        Schedule.build("n", "t", "q", **options)  # type: ignore[arg-type]


def test_router_periodic_on_a_task_and_on_a_function() -> None:
    router = Router()

    @router.periodic("*/5 * * * *", tz="Europe/Berlin")
    @router.task("reports:build", queue="reports", max_retries=1, timeout=30)
    def build(job: object) -> None: ...

    @router.periodic(every=timedelta(hours=1), name="cleanup", catch_up=1)
    def cleanup(job: object) -> None: ...

    router.periodic("0 3 * * *", name="reports:nightly", payload={"full": True})(build)
    assert router.get("cleanup") is cleanup and "reports:build" in router
    by_name = {s.name: s for s in router.schedules}
    assert list(by_name) == ["cleanup", "reports:build", "reports:nightly"]
    assert (by_name["reports:build"].queue, by_name["reports:build"].max_retries) == ("reports", 1)
    assert by_name["reports:build"].timeout == 30.0 and by_name["reports:build"].tz == "Europe/Berlin"
    assert by_name["reports:nightly"].type == "reports:build" and by_name["reports:nightly"].payload == {
        "full": True
    }
    assert by_name["cleanup"].every == 3600.0 and by_name["cleanup"].catch_up == 1
    with pytest.raises(ConfigError, match="already registered"):
        router.periodic("0 4 * * *")(build)
    other = Router()
    with pytest.raises(ConfigError, match="another router"):
        other.periodic("0 4 * * *")(build)
    merged = Router()
    merged.include(router)
    assert [s.name for s in merged.schedules] == list(by_name)
