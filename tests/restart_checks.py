"""What every broker-restart test asserts about a :class:`tests.restart_scenario.Outcome`."""

from __future__ import annotations

import re

from tests.restart_scenario import Outcome, Plan

LOST = re.compile(
    r" WARNING pqueue\.broker: lost (Redis|Postgres) at \S+ \((.+)\); retrying until it is back$"
)
BACK = re.compile(
    r" INFO +pqueue\.broker: (Redis|Postgres) at \S+ is back after [0-9.]+s \(it was gone: .+\)$"
)
# An ack applied just before the server went away, whose reply was lost, is refused when
# retried (the job is already completed): reported as a lost lease, though nothing ran twice.
# Likewise a claim applied whose reply was lost: its leases expire and the jobs are
# recovered (they had not started, so they run once).
_REPLY_LOST = ("finished but its lease was lost", ": lost after ", "whose worker stopped beating")


def check(outcome: Outcome, plan: Plan) -> None:
    assert outcome.lost == 0, f"{outcome.lost} job(s) lost"
    assert outcome.dead == 0
    assert outcome.exited == [], f"workers exited during the run: {outcome.exited}"
    assert outcome.exit_codes == [0] * plan.workers, outcome.exit_codes
    assert len(outcome.restarts) == plan.restarts
    if plan.mode == "graceful":
        assert outcome.repeats == 0, f"{outcome.repeats} repeated run(s) after graceful restarts"
    for log in outcome.logs:
        check_log(log, plan)


def check_log(log: str, plan: Plan) -> None:
    """One WARNING per outage (with its cause) and one INFO when the server is back; no
    driver chatter, no traceback, no other warning (but see _REPLY_LOST)."""
    lines = log.splitlines()
    lost = [line for line in lines if LOST.search(line)]
    back = [line for line in lines if BACK.search(line)]
    assert 1 <= len(lost) <= plan.restarts, "\n".join(lost) or "no outage was logged"
    assert len(back) == len(lost), "\n".join(lost + back)
    assert "Traceback" not in log
    assert "psycopg" not in log and "redis.exceptions" not in log
    others = [
        line
        for line in lines
        if (" WARNING " in line or " ERROR " in line)
        and not LOST.search(line)
        and not any(part in line for part in _REPLY_LOST)
        and not (plan.mode == "crash" and "lease lost for" in line)  # a claim the crash forgot
    ]
    assert others == [], "\n".join(others)
