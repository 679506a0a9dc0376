"""Real ``pqueue worker`` processes on a private Redis Cluster while the master serving
their queue fails over (ADR 0143): a graceful ``CLUSTER FAILOVER`` loses nothing, runs
nothing twice and ends no worker; a SIGKILL of the master ends no worker either, and what
Redis's asynchronous replication lost is counted and reported (the run's summary line).

Each test starts its own six nodes (some 5 s): the failovers must not disturb the
session's cluster that the other tests share.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pqueue.testing.faults import restarts as restart_scenario
from tests.private_cluster import FailoverOf, PrivateRedisCluster

pytestmark = [pytest.mark.slow, pytest.mark.redis_cluster]

LOST = re.compile(r" WARNING pqueue\.broker: lost Redis Cluster at \S+ \((.+)\); retrying until it is back$")
BACK = re.compile(r" INFO +pqueue\.broker: Redis Cluster at \S+ is back after [0-9.]+s")
_EXPECTED = (
    "finished but its lease was lost",
    ": lost after ",
    "whose worker stopped beating",
    "lease lost for",
)


def check_logs(outcome: restart_scenario.Outcome, plan: restart_scenario.Plan, *, outages: int = 0) -> None:
    """At least ``outages`` and at most one WARNING per failover, each with one INFO when
    the cluster is whole again; no traceback, no raw redirect, no driver chatter, no other
    warning. (A graceful failover may go unnoticed: redis-py follows the redirect.)"""
    for log in outcome.logs:
        lines = log.splitlines()
        lost = [line for line in lines if LOST.search(line)]
        back = [line for line in lines if BACK.search(line)]
        assert outages <= len(lost) <= plan.restarts, "\n".join(lost) or "no outage was logged"
        assert len(back) == len(lost), "\n".join(lost + back)
        assert "Traceback" not in log and "redis.exceptions" not in log, log[log.find("Traceback") - 600 :][
            :3000
        ]
        assert "MOVED" not in log and "ASK " not in log
        others = [
            line
            for line in lines
            if (" WARNING " in line or " ERROR " in line)
            and not LOST.search(line)
            and not any(part in line for part in _EXPECTED)
        ]
        assert others == [], "\n".join(others)


async def test_a_graceful_failover_mid_drain_loses_nothing(
    private_cluster: PrivateRedisCluster, tmp_path: Path
) -> None:
    plan = restart_scenario.Plan(mode="graceful", restarts=2, down=0.0)
    server = FailoverOf(private_cluster, "{" + restart_scenario.QUEUE + "}")
    outcome = await restart_scenario.run(plan, server, private_cluster.url + "/?prefix=pqfail", tmp_path)
    assert outcome.lost == 0 and outcome.dead == 0, (outcome.lost, outcome.dead)
    assert outcome.repeats == 0
    assert outcome.exited == [] and outcome.exit_codes == [0] * plan.workers, outcome.exit_codes
    check_logs(outcome, plan)


async def test_a_killed_master_ends_no_worker_and_its_loss_is_counted(
    private_cluster: PrivateRedisCluster, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    # A lease longer than the takeover (node timeout 2 s + election): acks wait it out.
    plan = restart_scenario.Plan(mode="crash", restarts=1, down=0.0, lease=10.0, timeout=60.0)
    server = FailoverOf(private_cluster, "{" + restart_scenario.QUEUE + "}")
    outcome = await restart_scenario.run(plan, server, private_cluster.url + "/?prefix=pqkill", tmp_path)
    summary = f"SIGKILL of a master: {outcome.lost} lost, {outcome.repeats} repeated of {plan.jobs} jobs"
    record_property("failover_loss", summary)
    print(summary)
    assert outcome.exited == [] and outcome.exit_codes == [0] * plan.workers, outcome.exit_codes
    assert outcome.completed + outcome.dead + outcome.lost == plan.jobs
    check_logs(outcome, plan, outages=1)
