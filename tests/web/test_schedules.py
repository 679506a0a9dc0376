"""``GET /schedules``: the schedules workers published, in the shape the dashboard reads."""

from __future__ import annotations

import httpx

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock, to_iso
from pqueue.periodic import Schedule
from pqueue.worker.schedules import Scheduler


async def test_schedules_are_listed_for_the_read_only_token(
    broker: FullBroker, clock: ManualClock, reader: httpx.AsyncClient, anon: httpx.AsyncClient
) -> None:
    assert (await reader.get("/schedules")).json() == {"schedules": []}
    cron = Schedule.build("nightly", "report", "reports", cron="0 3 * * *", tz="Europe/Berlin")
    every = Schedule.build("often", "ping", "default", every=30, catch_up=2)
    scheduler = Scheduler(broker, [cron, every])
    await scheduler.run_once()
    clock.advance(30)
    await scheduler.run_once()
    answer = await reader.get("/schedules")
    assert answer.status_code == 200
    [nightly, often] = answer.json()["schedules"]
    assert nightly == {
        "name": "nightly",
        "type": "report",
        "queue": "reports",
        "cron": "0 3 * * *",
        "every": None,
        "tz": "Europe/Berlin",
        "next_run_at": to_iso(cron.next_after(clock.now())),
        "last_run_at": None,
        "missed": "skip",
        "catch_up": 0,
    }
    assert often["every"] == 30.0 and often["cron"] is None and often["tz"] == "UTC"
    assert often["missed"] == "catch_up" and often["catch_up"] == 2
    assert often["last_run_at"] == to_iso(every.last_until(clock.now()))
    assert (await anon.get("/schedules")).status_code == 401
