"""Bounded label values: a metric's series count must not grow with what producers send.

Queue names and job types come from producers' code, so they are few -- unless a bug
enqueues a type per user. :class:`BoundedValues` keeps the first ``limit`` distinct values
of one label and maps every later one to ``"other"`` (logged once), so a runaway producer
costs one extra series, not thousands.
"""

from __future__ import annotations

import logging

log = logging.getLogger("pqueue.metrics")

OTHER = "other"
DEFAULT_LIMIT = 200
"""Distinct values kept per label (queues, job types) before new ones become ``other``."""


class BoundedValues:
    """``values(raw)`` is ``raw`` for the first ``limit`` distinct values, then ``other``."""

    def __init__(self, label: str, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.label = label
        self.limit = limit
        self._seen: set[str] = set()
        self._warned = False

    def __call__(self, raw: str) -> str:
        if raw in self._seen:
            return raw
        if len(self._seen) < self.limit:
            self._seen.add(raw)
            return raw
        if not self._warned:
            self._warned = True
            log.warning(
                "more than %d distinct %s values: later ones are counted as %r (first: %r)",
                self.limit,
                self.label,
                OTHER,
                raw,
            )
        return OTHER
