"""The Postgres hand-off message: a job an enqueue leased to a parked claimer of this broker.

The ``hand_off`` function (migration 0002, called by ``enqueue_one``) sends it on the
broker's own channel as
``{"w": worker id, "t": lease token, "e": lease deadline (epoch s), "j": [job row],
"u": the options left to the handler}``, the row in ``JOB_COLUMNS`` order with times as
epoch seconds ("u" since migration 0012; ADR 0157). The listener parses it
into a :class:`HeldLease` for the broker's :class:`~pqueue.brokers.handoff.HandoffHold`;
the row is decoded (and a corrupt one dead-lettered) when the claimer takes it, as a
claimed row is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pqueue.brokers.job_columns import JOB_COLUMNS
from pqueue.brokers.postgres.codec import BEFORE_FLOWS
from pqueue.job import JobSpec

HANDOFF_BYTES = 6000
"""Most bytes a job's variable parts may take in a hand-off message: Postgres refuses
notifications of 8000 bytes or more; the worker id (``hand_off`` only hands off to ids
of at most 200 bytes, 1,200 escaped) and the fixed parts (ids, numbers, keys: under
500) fit in the other 2000."""

_TIMES = tuple(JOB_COLUMNS.index(c) for c in ("run_at", "created_at", "started_at", "finished_at"))


@dataclass(frozen=True, slots=True)
class HeldLease:
    """One job leased to a claimer of this broker, not yet collected."""

    queue: str
    token: int
    expires_at: datetime
    row: tuple[Any, ...]
    """The job in JOB_COLUMNS order, as a claim returns it (times as datetimes)."""
    received: float
    """Event-loop time it arrived (for giving back stale ones)."""


def fits_handoff(spec: JobSpec) -> bool:
    """Whether a hand-off message for ``spec`` is sure to fit a notification. The payload
    goes in as the JSON text it is; other text is counted as if every character needed the
    longest JSON escape (6 bytes). A prioritized job is never handed off: the message
    (migration 0002's {job_json}) does not carry its priority (ADR 0145)."""
    if spec.priority:
        return False
    texts = [spec.type, spec.queue, spec.idempotency_key or "", *spec.meta.keys(), *spec.meta.values()]
    escaped = sum(len(text.encode()) + 3 for text in texts)  # + quotes and separators
    verbatim = len(spec.payload_json.encode())
    return verbatim + 6 * escaped <= HANDOFF_BYTES


def parse_handoff(payload: str, received: float) -> tuple[str, HeldLease]:
    """A hand-off notification -> (worker id, held lease); ValueError if malformed."""
    try:
        message = json.loads(payload)
        worker, token, deadline, row = message["w"], message["t"], message["e"], message["j"]
        if not (isinstance(worker, str) and isinstance(token, int) and isinstance(row, list)):
            raise TypeError("fields of the wrong type")
        if len(row) == BEFORE_FLOWS:  # a hand_off function rendered before migration 0005
            row += [None] * (len(JOB_COLUMNS) - BEFORE_FLOWS)  # handed-off jobs have no parents
        if len(row) != len(JOB_COLUMNS):
            raise ValueError(f"{len(row)} job columns, expected {len(JOB_COLUMNS)}")
        for i in _TIMES:
            if row[i] is not None:
                row[i] = datetime.fromtimestamp(row[i], UTC)
        queue = row[JOB_COLUMNS.index("queue")]
        if not isinstance(queue, str):
            raise TypeError("queue is not text")
        unset = message.get("u")
        if unset is not None:  # after the row, as a claim returns it (no limit, priority 0)
            if not isinstance(unset, str):
                raise TypeError("unset is not text")
            row += [None, 0, unset]
        expires_at = datetime.fromtimestamp(deadline, UTC)
    except (ValueError, TypeError, KeyError, OverflowError, OSError, RecursionError) as exc:
        raise ValueError(f"unreadable hand-off message ({type(exc).__name__}: {exc})") from exc
    return worker, HeldLease(queue, token, expires_at, tuple(row), received)
