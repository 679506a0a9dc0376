"""``pqueue.autoscale.decide``: when ``--autoscale MIN:MAX`` grows or shrinks the pool, by time
given, never slept (the real processes: tests/worker/test_autoscale.py)."""

from __future__ import annotations

import pytest

from pqueue.autoscale import Decision, Memory, Pool, Signal, Thresholds, decide, parse_range
from pqueue.errors import ConfigError

LIMITS = Thresholds(backlog=1.0, age=10.0, up_after=2.0, down_after=30.0, cooldown=10.0)


def pool(processes: int, minimum: int = 1, maximum: int = 4, concurrency: int = 10) -> Pool:
    return Pool(processes, minimum, maximum, concurrency)


def run(samples: list[tuple[float, Signal]], start: Pool, limits: Thresholds = LIMITS) -> list[Decision]:
    """Feed samples (at their times) to the rule, applying each change, as the autoscaler does."""
    memory, size, out = Memory(), start, []
    for now, signal in samples:
        decision = decide(signal, size, memory, limits, now)
        memory = decision.memory
        size = Pool(decision.processes, size.minimum, size.maximum, size.concurrency)
        out.append(decision)
    return out


def test_a_lasting_backlog_grows_the_pool_at_once_to_what_the_jobs_fill() -> None:
    backlog = Signal(waiting=25, running=10, oldest=0.5)
    decisions = run([(0.0, backlog), (1.0, backlog), (2.0, backlog)], pool(1))
    assert [d.processes for d in decisions] == [1, 1, 4]  # ceil(35 / 10) = 4 after 2 s of pressure
    assert decisions[2].direction == "up" and "25 due jobs wait for 10 slots" in decisions[2].reason


def test_growth_stops_at_max_and_takes_at_least_one_step() -> None:
    assert run([(0, Signal(500, 10, 1)), (5, Signal(500, 10, 1))], pool(1))[-1].processes == 4
    few_but_old = Signal(waiting=1, running=10, oldest=12.0)  # below the backlog, above the age
    assert run([(0, few_but_old), (5, few_but_old)], pool(1))[-1].processes == 2


def test_a_burst_cleared_before_up_after_starts_nothing() -> None:
    decisions = run(
        [(0.0, Signal(400, 10, 0.2)), (1.5, Signal(0, 10, 0.0)), (3.0, Signal(0, 2, 0.0))], pool(1)
    )
    assert [d.processes for d in decisions] == [1, 1, 1]
    assert decisions[-1].memory.pressed_since is None


def test_pressure_that_pauses_starts_its_clock_again() -> None:
    backlog, calm = Signal(40, 10, 1.0), Signal(0, 10, 0.0)
    assert [
        d.processes for d in run([(0, backlog), (1.5, calm), (2.5, backlog), (4.0, backlog)], pool(1))
    ] == [
        1,
        1,
        1,
        1,
    ]


def test_the_pool_shrinks_one_process_after_down_after_spare_seconds() -> None:
    idle = Signal(waiting=0, running=3, oldest=0.0)
    decisions = run([(0, idle), (29, idle), (30, idle), (35, idle), (41, idle)], pool(3))
    assert [d.processes for d in decisions] == [3, 3, 2, 2, 2]  # then the cool-down and a fresh 30 s
    assert decisions[2].direction == "down" and "no due job waits" in decisions[2].reason
    later = run([(0, idle), (30, idle), (60, idle), (90, idle)], pool(3))
    assert [d.processes for d in later] == [3, 2, 2, 1]  # the spare clock starts after the change


def test_hysteresis_no_shrink_while_jobs_wait_or_running_jobs_need_every_process() -> None:
    waiting_a_little = Signal(waiting=1, running=0, oldest=0.1)  # not enough to grow, enough to stay
    busy = Signal(waiting=0, running=21, oldest=0.0)  # 21 running need all 3 processes of 10
    for signal in (waiting_a_little, busy):
        assert [d.processes for d in run([(t, signal) for t in range(0, 200, 10)], pool(3))] == [3] * 20


def test_no_change_within_the_cool_down() -> None:
    old = Signal(waiting=10, running=10, oldest=12.0)  # the oldest job keeps the pressure on
    decisions = run([(t, old) for t in (0, 2, 4, 8, 11.9, 12)], pool(1))
    assert [d.processes for d in decisions] == [1, 2, 2, 2, 2, 3]
    assert [d.direction for d in decisions] == [None, "up", None, None, None, "up"]


def test_never_below_min() -> None:
    idle = Signal(waiting=0, running=0, oldest=0.0)
    assert {d.processes for d in run([(t, idle) for t in range(0, 300, 15)], pool(2, minimum=2))} == {2}


def test_a_pool_outside_its_bounds_is_brought_back() -> None:
    assert decide(Signal(0, 0, 0), pool(6), Memory(), LIMITS, 0).processes == 4


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("4:1", "MIN must be <= MAX"),
        ("0:3", ">= 1"),
        ("-1:3", ">= 1"),
        ("2:0", ">= 1"),
        ("a:b", "whole numbers"),
        ("1.5:3", "whole numbers"),
        ("3", "MIN:MAX"),
        ("1:2:3", "MIN:MAX"),
    ],
)
def test_parse_range_names_the_rule_broken(text: str, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        parse_range(text)


def test_parse_range_accepts_equal_bounds() -> None:
    assert parse_range(" 2:5 ") == (2, 5) and parse_range("3:3") == (3, 3)


def test_thresholds_refuse_values_that_cannot_work() -> None:
    with pytest.raises(ConfigError, match="backlog"):
        Thresholds(backlog=0)
    with pytest.raises(ConfigError, match="cooldown"):
        Thresholds(cooldown=-1)
