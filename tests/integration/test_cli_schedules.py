"""``pqueue schedules`` and the schedules part of ``pqueue stats``, from registrations that
workers published (the CLI imports no app code)."""

from __future__ import annotations

import json
import time

from pqueue.broker_schedules import ScheduleInfo
from pqueue.clock import to_iso
from tests.integration.test_cli_admin import Cli, broker_call, cli  # noqa: F401 - the fixture

NEXT = time.time() + 300


def _publish(dsn: str) -> None:
    infos = [
        ScheduleInfo(
            "backup:nightly", "backup:run", "default", "0 3 * * *", None, "Europe/Berlin", "catch_up", 1, NEXT
        ),
        ScheduleInfo("heartbeat", "heartbeat", "ops", None, 30.0, "UTC", "skip", 0, NEXT),
    ]
    broker_call(dsn, lambda broker: broker.register_schedules(infos, ttl=60))


def test_schedules_table_json_and_stats(cli: Cli, backend_dsn: str) -> None:  # noqa: F811
    empty = cli("schedules")
    assert empty.code == 0 and "no schedules" in empty.out
    _publish(backend_dsn)
    data = json.loads(cli("schedules", "--json").out)["schedules"]
    assert [s["name"] for s in data] == ["backup:nightly", "heartbeat"]
    assert data[0]["next_run_at"][:19] == str(to_iso(NEXT))[:19] and data[0]["catch_up"] == 1
    assert (data[1]["every"], data[1]["cron"], data[1]["missed"], data[1]["last_run_at"]) == (
        30.0,
        None,
        "skip",
        None,
    )
    table = cli("schedules")
    assert table.code == 0 and "0 3 * * * (Europe/Berlin)" in table.out and "every 30.0s" in table.out
    assert "catch up 1" in table.out
    stats = cli("stats")
    assert stats.code == 0 and "backup:nightly" in stats.out and "heartbeat" in stats.out
    assert [s["name"] for s in json.loads(cli("stats", "--json").out)["schedules"]] == [
        "backup:nightly",
        "heartbeat",
    ]
    only = json.loads(cli("stats", "--queue", "ops", "--json").out)["schedules"]
    assert [s["name"] for s in only] == ["heartbeat"]
