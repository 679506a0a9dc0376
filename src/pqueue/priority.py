"""Queue priority policy: the order in which a claim visits queues.

Brokers only drain queues in the order they are given. This module decides that order
for each claim: *strict* always visits queues by descending weight (higher queues are
emptied first); *weighted* draws a fresh weighted-random order per claim, so over many
claims with every queue full each queue supplies jobs in proportion to its weight
(e.g. critical:6, default:3, low:1 -> ~60/30/10 %) and no queue starves.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pqueue.errors import ConfigError, InvalidName
from pqueue.spec import validate_queue_name

QueuesArg = Mapping[str, int] | Sequence[str] | str


@dataclass(frozen=True, slots=True)
class QueueSelection:
    """Queues with their weights, and whether priority is strict."""

    weights: tuple[tuple[str, int], ...]
    strict: bool = False

    @classmethod
    def parse(cls, queues: QueuesArg, *, strict: bool = False) -> QueueSelection:
        """Accept ``{"critical": 6, "default": 3}``, ``["critical", "default"]`` (weight 1
        each; with ``strict`` the list order is the priority order) or the CLI form
        ``"critical:6,default:3,low:1"``."""
        if isinstance(queues, str):
            items = [_parse_item(part) for part in queues.split(",") if part.strip()]
        elif isinstance(queues, Mapping):
            items = list(queues.items())
        else:
            n = len(queues)
            items = [(name, n - i if strict else 1) for i, name in enumerate(queues)]
        if not items:
            raise ConfigError("queues: name at least one queue")
        seen: set[str] = set()
        for name, weight in items:
            try:
                validate_queue_name(name)
            except InvalidName as exc:  # a setting, not a job refused at enqueue
                raise ConfigError(f"queues: {exc}") from None
            if name in seen:
                raise ConfigError(f"queues: {name!r} is listed twice")
            seen.add(name)
            if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
                raise ConfigError(f"queues: weight of {name!r} must be an int >= 1, got {weight!r}")
        return cls(tuple(items), strict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.weights)

    def order(self, rng: random.Random | None = None) -> list[str]:
        """The queue order for one claim."""
        if self.strict:
            return [name for name, _ in sorted(self.weights, key=lambda item: -item[1])]
        draw = (rng or random).random
        # Efraimidis-Spirakis: sorting by u**(1/w) is weighted sampling without replacement.
        keyed = [(draw() ** (1.0 / weight), name) for name, weight in self.weights]
        keyed.sort(reverse=True)
        return [name for _, name in keyed]


def _parse_item(part: str) -> tuple[str, int]:
    name, sep, weight = part.strip().partition(":")
    if not sep:
        return name, 1
    try:
        return name, int(weight)
    except ValueError as exc:
        raise ConfigError(f"queues: weight in {part!r} must be an integer") from exc
