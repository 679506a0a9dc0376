"""The rule of ``pqueue worker --autoscale MIN:MAX``: how many worker processes a pool wants.

:func:`decide` is pure: a sample of the queues this pool serves (:class:`Signal`), the
pool (:class:`Pool`), what the rule remembers from earlier samples (:class:`Memory`) and
the moment, in; the processes wanted, the reason and the new memory, out. Every timing
rule is therefore tested without sleeping (tests/unit/test_autoscale_rule.py), and
:mod:`pqueue.autoscaler` only samples the broker and applies the answers.

The rule (ADR 0150, docs/scaling.md):

- *Grow* when due jobs wait, at least ``backlog`` of them per running slot or the
  oldest for at least ``age`` seconds, and that has lasted ``up_after`` seconds: to as
  many processes as the running and waiting jobs fill (``ceil((running + waiting) /
  concurrency)``), at least one more, at most MAX.
- *Shrink* by one process when no due job waits and the running jobs fit in one process
  fewer, and that has lasted ``down_after`` seconds.
- After any change, nothing changes for ``cooldown`` seconds.

The two conditions leave a band between them where the pool stays as it is (hysteresis):
a pool that grew because jobs waited does not shrink while any job waits, nor while its
running jobs need every process. A burst that the pool clears within ``up_after``
seconds starts nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pqueue.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When the pool grows and shrinks (each a ``pqueue worker --autoscale-*`` flag)."""

    backlog: float = 1.0
    """Due jobs waiting per running slot at which the pool grows (1.0: a whole pool's worth waits)."""
    age: float = 10.0
    """Seconds the oldest due job may wait before the pool grows, however few wait."""
    up_after: float = 2.0
    """Seconds the pressure must last before the pool grows: a shorter burst starts nothing."""
    down_after: float = 30.0
    """Seconds the pool must have a process to spare before it retires one."""
    cooldown: float = 10.0
    """Seconds after a change during which the pool does not change again."""

    def __post_init__(self) -> None:
        for name in ("backlog", "age"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"autoscale {name} must be > 0, got {getattr(self, name)!r}")
        for name in ("up_after", "down_after", "cooldown"):
            if not getattr(self, name) >= 0:
                raise ConfigError(f"autoscale {name} must be >= 0, got {getattr(self, name)!r}")


@dataclass(frozen=True, slots=True)
class Signal:
    """One sample of the queues the pool serves, from the broker (``Client.stats``)."""

    waiting: int
    """Due jobs waiting (pending) on those queues."""
    running: int
    """Jobs running (active) on those queues, whoever runs them."""
    oldest: float
    """Seconds the oldest due job has waited (0 when none waits)."""


@dataclass(frozen=True, slots=True)
class Pool:
    """The pool as it is: its processes now, its bounds, and the slots per process."""

    processes: int
    minimum: int
    maximum: int
    concurrency: int

    @property
    def slots(self) -> int:
        return self.processes * self.concurrency


@dataclass(frozen=True, slots=True)
class Memory:
    """What the rule keeps between samples: since when each condition holds, and the last change."""

    pressed_since: float | None = None
    spare_since: float | None = None
    changed_at: float = -math.inf


@dataclass(frozen=True, slots=True)
class Decision:
    """The processes wanted (``pool.processes`` when nothing changes) and why."""

    processes: int
    memory: Memory
    direction: str | None = None
    """``"up"``, ``"down"``, or None (no change)."""
    reason: str = field(default="")


def decide(signal: Signal, pool: Pool, memory: Memory, limits: Thresholds, now: float) -> Decision:
    """The pool's size after the sample ``signal`` taken at ``now`` (module docstring: the rule)."""
    if pool.processes < pool.minimum or pool.processes > pool.maximum:
        wanted = min(max(pool.processes, pool.minimum), pool.maximum)
        direction = "up" if wanted > pool.processes else "down"
        return Decision(wanted, Memory(changed_at=now), direction, f"outside {pool.minimum}:{pool.maximum}")
    per_slot = signal.waiting / pool.slots
    pressed = signal.waiting > 0 and (per_slot >= limits.backlog or signal.oldest >= limits.age)
    spare = signal.waiting == 0 and signal.running <= (pool.processes - 1) * pool.concurrency
    memory = Memory(
        pressed_since=(memory.pressed_since if memory.pressed_since is not None else now)
        if pressed
        else None,
        spare_since=(memory.spare_since if memory.spare_since is not None else now) if spare else None,
        changed_at=memory.changed_at,
    )
    if now - memory.changed_at < limits.cooldown:
        return Decision(pool.processes, memory)
    if memory.pressed_since is not None and pool.processes < pool.maximum:
        held = now - memory.pressed_since
        if held >= limits.up_after:
            needed = math.ceil((signal.running + signal.waiting) / pool.concurrency)
            wanted = min(pool.maximum, max(pool.processes + 1, needed))
            reason = (
                f"{signal.waiting} due jobs wait for {pool.slots} slots ({per_slot:.1f} per slot, "
                f"growing at {limits.backlog:g}), the oldest for {signal.oldest:.1f}s "
                f"(growing at {limits.age:g}s); {signal.running} running; for {held:.1f}s"
            )
            return Decision(wanted, Memory(changed_at=now), "up", reason)
    if memory.spare_since is not None and pool.processes > pool.minimum:
        held = now - memory.spare_since
        if held >= limits.down_after:
            reason = (
                f"no due job waits and the {signal.running} running fit in {pool.processes - 1} "
                f"processes of {pool.concurrency} slots; for {held:.1f}s"
            )
            return Decision(pool.processes - 1, Memory(changed_at=now), "down", reason)
    return Decision(pool.processes, memory)


def parse_range(text: str) -> tuple[int, int]:
    """``"MIN:MAX"`` -> ``(MIN, MAX)``; raises ValueError naming the rule that ``text`` breaks."""
    parts = text.strip().split(":")
    if len(parts) != 2:
        raise ValueError(f"{text!r}: write MIN:MAX, e.g. 1:4")
    try:
        low, high = (int(part) for part in parts)
    except ValueError:
        raise ValueError(f"{text!r}: MIN and MAX must be whole numbers, e.g. 1:4") from None
    if low < 1 or high < 1:
        raise ValueError(f"{text!r}: MIN and MAX must be >= 1 (a pool runs at least one process)")
    if low > high:
        raise ValueError(f"{text!r}: MIN must be <= MAX")
    return low, high
