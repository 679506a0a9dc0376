"""``pqueue chaos``'s checker on made-up histories: each rule finds its violation, and stays
quiet where the history cannot tell (a repeat after a crash, a refused duplicate)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from pqueue.chaos.check import Checker, Verdict
from pqueue.chaos.history import Event
from pqueue.chaos.plan import Plan, fault_schedule
from pqueue.job import ErrorInfo, Job, JobStatus

NOW = datetime(2026, 11, 28, tzinfo=UTC)
DRIVER, W1, W2 = 100, 201, 202
_ids = itertools.count(1)


def job(job_id: str, status: JobStatus = JobStatus.COMPLETED, **fields: Any) -> Job:
    base = Job(job_id, "chaos:async", "chaos", None, status, 1, 3, 0, 5, NOW, NOW)
    return replace(base, **fields)


def spec(**fields: Any) -> dict[str, Any]:
    return {"b": "ok", "queue": "chaos", "max_retries": 3, **fields}


def enqueued(
    job_id: str, t: float, *, created: bool = True, holder: str | None = None, **fields: Any
) -> Event:
    data = {"t0": t - 0.001, "created": created, "holder": holder or job_id, "spec": spec(**fields)}
    return Event(t, "enqueue", DRIVER, job_id, data)


def ran(job_id: str, start: float, end: float, pid: int = W1, outcome: str = "completed") -> list[Event]:
    return [
        Event(start, "start", pid, job_id, {"attempt": 1}),
        Event(end, "end", pid, job_id, {"how": "ok" if outcome == "completed" else "error"}),
        Event(end + 0.001, "settled", pid, job_id, {"outcome": outcome}),
    ]


def check(
    events: list[Event], finals: dict[str, Job | None], effects: dict[str, int] | None = None
) -> Verdict:
    return Checker(sorted(events, key=lambda e: e.t), finals, effects).run()


def rules(verdict: Verdict) -> list[str]:
    return [v.rule for v in verdict.violations]


def test_a_clean_history_passes() -> None:
    events = [enqueued("a", 1.0), *ran("a", 2.0, 2.1), enqueued("b", 1.5), *ran("b", 2.0, 3.0, W2)]
    verdict = check(events, {"a": job("a"), "b": job("b")})
    assert rules(verdict) == []
    assert verdict.acknowledged == 2 and verdict.outcomes["completed"] == 2


def test_an_acknowledged_job_that_is_gone_or_never_final_is_lost() -> None:
    events = [enqueued("a", 1.0), enqueued("b", 1.0), enqueued("c", 1.0)]
    verdict = check(events, {"a": None, "b": job("b", JobStatus.PENDING), "c": job("c")})
    assert rules(verdict) == ["lost", "lost"] and verdict.lost == 2


def test_an_enqueue_without_a_reply_counts_only_if_its_job_exists() -> None:
    maybe = Event(1.0, "enqueue_error", DRIVER, "m", {"spec": spec()})
    assert rules(check([maybe], {"m": None})) == []
    assert rules(check([maybe], {"m": job("m", JobStatus.ACTIVE)})) == ["lost"]


def test_two_completions_are_doubled_but_a_repeat_after_a_crash_is_not() -> None:
    repeat = [enqueued("a", 1.0), Event(2.0, "start", W1, "a"), *ran("a", 5.0, 5.1, W2)]
    assert rules(check(repeat, {"a": job("a")})) == []
    doubled = [enqueued("a", 1.0), *ran("a", 2.0, 2.1), *ran("a", 5.0, 5.1, W2)]
    verdict = check(doubled, {"a": job("a")})
    assert rules(verdict) == ["doubled"] and verdict.doubled == 1


def test_transaction_effects_happen_once_and_only_for_completed_jobs() -> None:
    events = [enqueued(j, 1.0, b="txn") for j in "abcd"]
    finals = {"a": job("a"), "b": job("b"), "c": job("c", JobStatus.DEAD), "d": job("d")}
    verdict = check(events, finals, {"a": 1, "b": 2, "c": 1})
    assert sorted(rules(verdict)) == ["doubled", "effects", "effects"]
    assert {v.jobs for v in verdict.violations} == {("b",), ("c",), ("d",)}


def test_a_unique_key_held_refuses_a_second_job_in_its_queue() -> None:
    first = enqueued("a", 1.0, unique_key="u", unique_for=2.0, unique_mode="ttl")
    refused = enqueued("b", 1.5, created=False, holder="a", unique_key="u", unique_for=2.0)
    later = enqueued("c", 3.5, unique_key="u", unique_for=2.0, unique_mode="ttl")
    other_queue = enqueued("d", 1.2, unique_key="u", unique_for=2.0, queue="other")
    finals = {j: job(j) for j in "acd"}
    assert rules(check([first, refused, later, other_queue], finals)) == []
    twice = enqueued("e", 1.8, unique_key="u", unique_for=2.0, unique_mode="ttl")
    assert rules(check([first, twice], {"a": job("a"), "e": job("e")})) == ["unique"]


def test_a_done_key_may_be_taken_again_once_its_job_completed() -> None:
    first = enqueued("a", 1.0, unique_key="u", unique_for=5.0, unique_mode="done")
    after = enqueued("b", 2.0, unique_key="u", unique_for=5.0, unique_mode="done")
    finals = {"a": job("a"), "b": job("b")}
    assert rules(check([first, *ran("a", 1.2, 1.3), after], finals)) == []
    assert rules(check([first, after, *ran("a", 2.5, 2.6)], finals)) == ["unique"]


def test_one_idempotency_key_runs_to_success_once() -> None:
    events = [enqueued("a", 1.0, idem="k"), enqueued("b", 1.0, idem="k"), *ran("a", 2.0, 2.1)]
    duplicate = Event(3.0, "settled", W2, "b", {"outcome": "duplicate"})
    assert rules(check([*events, duplicate], {"a": job("a"), "b": job("b")})) == []
    assert rules(check([*events, *ran("b", 3.0, 3.1, W2)], {"a": job("a"), "b": job("b")})) == ["idempotency"]


def test_runs_of_a_group_past_its_concurrency_are_found_unless_a_lease_was_lost() -> None:
    limited = {"limit_key": "L", "concurrency": 1}
    events = [enqueued("a", 1.0, **limited), enqueued("b", 1.0, **limited), *ran("a", 2.0, 3.0)]
    finals = {"a": job("a"), "b": job("b")}
    assert rules(check([*events, *ran("b", 3.0, 4.0, W2)], finals)) == []  # back to back
    assert rules(check([*events, *ran("b", 2.5, 4.0, W2)], finals)) == ["limit"]
    zombie = [*events[:2], *ran("a", 2.0, 3.0, outcome="lost"), *ran("b", 2.5, 4.0, W2)]
    assert rules(check(zombie, finals)) == []  # a's lease was gone: its run does not count
    frozen = Event(2.2, "fault", DRIVER, None, {"fault": "stop", "phase": "begin", "target": W1})
    assert rules(check([*events, frozen, *ran("b", 2.5, 4.0, W2)], finals)) == []
    cancelled = Event(2.4, "cancel", DRIVER, "a", {"ok": True, "t0": 2.4})  # revokes a's lease
    finals["a"] = job("a", JobStatus.CANCELLED)
    assert rules(check([*events, cancelled, *ran("b", 2.5, 4.0, W2)], finals)) == []


def test_observed_statuses_follow_the_state_machine() -> None:
    looks = [("pending", 1.0), ("active", 2.0), ("retry", 3.0), ("completed", 4.0)]
    events = [enqueued("a", 0.5)] + [Event(t, "observe", DRIVER, "a", {"status": s}) for s, t in looks]
    assert rules(check(events, {"a": job("a")})) == []
    back = [*events, Event(5.0, "observe", DRIVER, "a", {"status": "pending"})]
    assert rules(check(back, {"a": job("a")})) == ["state"]
    dead = [enqueued("b", 0.5), Event(1.0, "observe", DRIVER, "b", {"status": "dead"})]
    dead.append(Event(3.0, "observe", DRIVER, "b", {"status": "pending"}))
    assert rules(check(dead, {"b": job("b")})) == ["state"]
    requeued = [*dead, Event(2.0, "requeue", DRIVER, None, {"queue": "chaos", "t0": 2.0, "n": 1})]
    assert rules(check(requeued, {"b": job("b")})) == []
    slow = [*dead, Event(3.5, "requeue", DRIVER, None, {"queue": "chaos", "t0": 0.5, "n": 1})]
    assert rules(check(slow, {"b": job("b")})) == []  # called before the first look, answered after
    earlier = [*dead, Event(0.9, "requeue", DRIVER, None, {"queue": "chaos", "t0": 0.5, "n": 1})]
    assert rules(check(earlier, {"b": job("b")})) == ["state"]  # over before the job was seen dead


def test_outcomes_follow_behaviours_and_cancels() -> None:
    events = [enqueued("f", 1.0, b="fail"), enqueued("c", 1.0), enqueued("d", 1.0, b="flaky")]
    events.append(Event(2.0, "cancel", DRIVER, "c", {"ok": True}))
    early = ErrorInfo("ChaosFailure", "fails attempt 1")
    finals = {"f": job("f"), "c": job("c"), "d": job("d", JobStatus.DEAD, attempt=1, errors=(early,))}
    assert sorted(rules(check(events, finals))) == ["outcome", "outcome", "outcome"]
    expired = ErrorInfo("LeaseExpired", "lease expired 6 times")
    fine = {
        "f": job("f", JobStatus.DEAD, attempt=4, errors=(early,)),
        "c": job("c", JobStatus.CANCELLED),
        "d": job("d", JobStatus.DEAD, attempt=1, errors=(expired,)),
    }
    assert rules(check(events, fine)) == []


def test_a_child_waits_for_its_parents() -> None:
    events = [enqueued("p", 1.0), enqueued("c", 1.1, parents=["p"], on_parent_failure="cancel")]
    finals = {"p": job("p"), "c": job("c")}
    assert rules(check([*events, *ran("p", 2.0, 2.5), *ran("c", 2.6, 2.7)], finals)) == []
    assert rules(check([*events, *ran("p", 2.0, 2.5), *ran("c", 2.2, 2.7, W2)], finals)) == ["parents"]
    died = {"p": job("p", JobStatus.DEAD, attempt=4), "c": job("c")}
    failed = [*ran("p", 2.0, 2.5, outcome="dead"), *ran("c", 2.6, 2.7)]
    assert rules(check([*events, *failed], died)) == ["parents"]


def test_a_refused_enqueue_stores_nothing() -> None:
    refused = Event(1.0, "refused", DRIVER, "x", {"error": "no parent", "spec": spec()})
    assert rules(check([refused], {"x": None})) == []
    assert rules(check([refused], {"x": job("x")})) == ["refused"]


@pytest.mark.parametrize("seed", [1, 2, 99])
def test_a_seed_plans_the_same_jobs_and_faults(seed: int) -> None:
    def drawn(seed: int) -> tuple[list[Any], list[Any]]:
        plan = Plan(seed, transactional=True)
        ops = list(itertools.islice(plan.ops(), 200))
        return ops, fault_schedule(plan, ("kill", "stop", "reset"), duration=60, workers=3, lease=2.0)

    assert drawn(seed) == drawn(seed)
    assert drawn(seed) != drawn(seed + 1)
