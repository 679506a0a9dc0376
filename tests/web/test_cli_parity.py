"""The CLI's ``--json`` and the HTTP API answer in one shape, so the two cannot drift apart.

``pqueue stats --json`` is ``GET /stats`` plus a ``schedules`` key holding what
``GET /schedules`` lists (docs/web.md, docs/cli.md); ``jobs list --json`` and ``GET /jobs``
hold the same jobs in the same order (oldest first), and ``jobs show --json`` is ``GET
/jobs/{id}``. The CLI runs as a real ``python -m pqueue`` process on this test's namespace,
so only the backends another process can reach take part (memory:// lives in one process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from pqueue.broker import FullBroker
from pqueue.clock import ManualClock
from pqueue.periodic import Schedule
from pqueue.spec import build_spec
from pqueue.worker.schedules import Scheduler
from tests.conftest import only_backends
from tests.web.conftest import make_dead


@pytest.fixture
def clock() -> ManualClock:
    """The app's clock ten seconds behind the real one, which the CLI process reads: the seeded
    jobs are due for both (the default manual clock starts in 2027)."""
    return ManualClock(time.time() - 10)


def cli_json(dsn: str, *argv: str) -> Any:
    """``pqueue <argv> --json --dsn <dsn>`` in a process of its own, its stdout parsed."""
    env = {k: v for k, v in os.environ.items() if k != "PQUEUE_DSN"}
    done = subprocess.run(
        [sys.executable, "-m", "pqueue", *argv, "--json", "--dsn", dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def shape(value: Any) -> Any:
    """``value`` with every scalar replaced by its JSON kind: keys, nesting and kinds remain."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value if value is None else "boolean"
    return "number" if isinstance(value, int | float) else type(value).__name__


async def seed(broker: FullBroker, clock: ManualClock) -> list[str]:
    """Jobs in two queues (one dead, one limited) and a published schedule; the pending ids."""
    ids = []
    for n in range(3):
        spec = build_spec("email.send", {"n": n}, queue="mail")
        await broker.enqueue([spec])
        ids.append(spec.id)
        clock.advance(1)
    await make_dead(broker, "sms")
    await Scheduler(broker, [Schedule.build("nightly", "report", "reports", cron="0 3 * * *")]).run_once()
    return ids


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_stats_json_is_get_stats_plus_the_schedules(
    api: httpx.AsyncClient, broker: FullBroker, clock: ManualClock, backend_dsn: str
) -> None:
    await seed(broker, clock)
    cli = cli_json(backend_dsn, "stats")
    http = (await api.get("/stats")).json()
    schedules = (await api.get("/schedules")).json()["schedules"]
    assert set(cli) == {*http, "schedules"}
    assert shape(cli) == shape({**http, "schedules": schedules})
    assert cli["queues"] == http["queues"] and cli["totals"] == http["totals"]
    assert [s["name"] for s in cli["schedules"]] == [s["name"] for s in schedules] == ["nightly"]


@only_backends("redis", "postgres", "sqlite", "redis_cluster")
async def test_jobs_list_and_show_json_are_the_http_jobs(
    api: httpx.AsyncClient, broker: FullBroker, clock: ManualClock, backend_dsn: str
) -> None:
    ids = await seed(broker, clock)
    cli = cli_json(backend_dsn, "jobs", "list", "--status", "pending", "--queue", "mail")
    http = (await api.get("/jobs", params={"status": "pending", "queue": "mail"})).json()
    assert [j["id"] for j in cli["jobs"]] == [j["id"] for j in http["jobs"]] == ids  # oldest first
    assert cli["jobs"] == http["jobs"]
    assert (cli["more"], http["next_cursor"]) == (False, None)
    shown = cli_json(backend_dsn, "jobs", "show", ids[0])
    assert shown == (await api.get(f"/jobs/{ids[0]}")).json()
    assert shape(shown) == shape(cli["jobs"][0])
