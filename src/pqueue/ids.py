"""Sortable unique job ids: UUIDv7 (RFC 9562), monotonic within one process.

Ids are made by the producer, so a batch enqueue knows its ids without a round trip
and a retried Spark task can re-send the same ids. The embedded time is the host's and
is used only for sorting ids, never for scheduling.
"""

from __future__ import annotations

import os
import re
import threading
import time

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
                self._seq = int.from_bytes(os.urandom(2), "big") & 0x3FF  # room to count up
            self._last_ms = ms
            return ms, self._seq


_sequencer = _Sequencer()


def new_id() -> str:
    """Return a new UUIDv7 string; later calls in this process sort after earlier ones."""
    ms, seq = _sequencer.next()
    rand = int.from_bytes(os.urandom(8), "big") & 0x3FFF_FFFF_FFFF_FFFF
    value = (ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_job_id(value: object) -> bool:
    """True when ``value`` is a canonical lower-case UUID string."""
    return isinstance(value, str) and _UUID_RE.match(value) is not None
