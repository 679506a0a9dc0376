"""The Redis hand-off message: jobs an enqueue leased to a parked claimer of this broker.

An idle worker parks while it waits (park.lua); an enqueue then leases due jobs straight
to it and publishes the leases on the broker's hand-off channel (docs/redis.md,
"Hand-off"). The wake-up listener parses each message into :class:`HeldJob` items for
the broker's :class:`~pqueue.brokers.handoff.HandoffHold`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class HeldJob:
    """One leased job handed to a claimer of this broker, not yet collected."""

    queue: str
    job_id: str
    fields: list[str]
    """The job hash as claim.lua returns it (name, value, ...), lease fields last."""
    expires_at: float
    """The lease deadline, epoch seconds."""
    received: float
    """Event-loop time it arrived (for giving back stale ones)."""


def parse_handoff(data: str, received: float) -> tuple[str, list[HeldJob]]:
    """A hand-off message (JSON from pq_hand_off) -> (worker id, jobs); ValueError if malformed."""
    try:
        message = json.loads(data)
        queue, deadline_ms, worker, jobs = message["q"], int(message["d"]), message["w"], message["j"]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise ValueError(f"unreadable hand-off message ({type(exc).__name__})") from exc
    if jobs == {}:  # Lua's cjson writes an empty table as an object
        jobs = []
    if not isinstance(queue, str) or not isinstance(worker, str) or not isinstance(jobs, list):
        raise ValueError("hand-off message of the wrong shape")
    held = [HeldJob(queue, *_entry(entry), deadline_ms / 1000, received) for entry in jobs]
    return worker, held


def _entry(entry: Any) -> tuple[str, list[str]]:
    if (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], list)
        and all(isinstance(value, str) for value in entry[1])
    ):
        return entry[0], entry[1]
    raise ValueError("hand-off entry of the wrong shape")
