"""Sortable unique job ids: UUIDv7 (RFC 9562), monotonic within one process.

Ids are made by the producer, so a batch enqueue knows its ids without a round trip
and a retried Spark task can re-send the same ids. The embedded time is the host's and
is used only for sorting ids, never for scheduling. The random bits come from a PRNG
seeded from ``os.urandom`` (re-seeded after fork): ids must be unique, not secret.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time

_random = random.Random(os.urandom(32))
# A forked child must not replay its parent's random stream (ids would collide).
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))
_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class _Sequencer:
    """Hands out (millisecond, sequence) pairs that never go backwards in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._seq = 0

    def next(self) -> tuple[int, int]:
        with self._lock:
            ms = time.time_ns() // 1_000_000
            if ms <= self._last_ms:
                ms = self._last_ms
                self._seq += 1
                if self._seq > 0xFFF:  # 4096 ids in one millisecond: borrow the next one
                    ms += 1
                    self._seq = 0
            else:
                self._seq = _random.getrandbits(10)  # random start, room to count up
            self._last_ms = ms
            return ms, self._seq


_sequencer = _Sequencer()


def new_id() -> str:
    """Return a new UUIDv7 string; later calls in this process sort after earlier ones."""
    ms, seq = _sequencer.next()
    rand = _random.getrandbits(62)
    value = (ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_job_id(value: object) -> bool:
    """True when ``value`` is a canonical lower-case UUID string."""
    return isinstance(value, str) and _UUID_RE.match(value) is not None
