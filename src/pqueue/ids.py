"""Sortable unique job ids: UUIDv7 (RFC 9562), monotonic within one process.

Ids are made by the producer, so a batch enqueue knows its ids without a round trip
and a retried Spark task can re-send the same ids. The embedded time is the host's and
is used only for sorting ids, never for scheduling. The random bits come from a PRNG
seeded from ``os.urandom`` (re-seeded after fork): ids must be unique, not secret.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import threading
import time
from collections.abc import Iterable

_random = random.Random(os.urandom(32))
# A forked child must not replay its parent's random stream (ids would collide).
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
"""A job id: a UUID in lower-case canonical form."""


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

    def reserve(self, n: int) -> list[tuple[int, int, int]]:
        """``n`` consecutive pairs, as runs of (millisecond, first sequence, count)."""
        with self._lock:
            ms = time.time_ns() // 1_000_000
            if ms <= self._last_ms:
                ms, seq = self._last_ms, self._seq + 1
            else:
                seq = _random.getrandbits(10)  # random start, room to count up
            runs = []
            while n > 0:
                if seq > 0xFFF:  # 4096 ids in one millisecond: borrow the next one
                    ms, seq = ms + 1, 0
                take = min(n, 0x1000 - seq)
                runs.append((ms, seq, take))
                n -= take
                seq += take
            self._last_ms, self._seq = ms, seq - 1
            return runs


_sequencer = _Sequencer()
_VARIANT = 0b10 << 62


def new_id() -> str:
    """Return a new UUIDv7 string; later calls in this process sort after earlier ones."""
    ms, seq = _sequencer.next()
    t = f"{ms:012x}"
    r = f"{_random.getrandbits(62) | _VARIANT:016x}"
    return f"{t[:8]}-{t[8:]}-7{seq:03x}-{r[:4]}-{r[4:]}"


def new_ids(n: int) -> list[str]:
    """``n`` new ids at once (one lock and clock read for all): what :func:`new_id` would
    return if called ``n`` times."""
    ids: list[str] = []
    getrandbits = _random.getrandbits
    for ms, first, count in _sequencer.reserve(n) if n > 0 else ():
        t = f"{ms:012x}"
        prefix = f"{t[:8]}-{t[8:]}-7"
        for seq in range(first, first + count):
            r = f"{getrandbits(62) | _VARIANT:016x}"
            ids.append(f"{prefix}{seq:03x}-{r[:4]}-{r[4:]}")
    return ids


KEY_ID_NAMESPACE = "pqueue:key-id:v1"
"""Mixed into :func:`key_id`'s hash, so its ids never collide with another scheme's."""


def key_id(queue: str, job_type: str, key: str) -> str:
    """The job id of the job keyed ``key`` of ``job_type`` in ``queue``: always the same id.

    A producer that may send a job twice (a retried Spark task, a restarted stream) uses
    it so the second send is refused as an existing id instead of making a second job.
    The id is a UUID of version 8 (RFC 9562, custom) made of the first 122 bits of
    SHA-256 over the namespace, queue, type and key, separated by NUL characters (which
    queue names and types cannot hold, so the split is never ambiguous); its
    bits do not sort by time, which no rule needs (enqueue order is the broker's).
    """
    return key_ids(queue, job_type, (key,))[0]


_VARIANT_DIGIT = {f"{d:x}": "89ab"[d & 0b11] for d in range(16)}


def key_ids(queue: str, job_type: str, keys: Iterable[str]) -> list[str]:
    """:func:`key_id` of each key (the shared prefix is hashed once)."""
    prefix = hashlib.sha256("\x00".join((KEY_ID_NAMESPACE, queue, job_type, "")).encode())
    ids = []
    for key in keys:
        digest = prefix.copy()
        digest.update(key.encode())
        h = digest.hexdigest()
        ids.append(f"{h[:8]}-{h[8:12]}-8{h[13:16]}-{_VARIANT_DIGIT[h[16]]}{h[17:20]}-{h[20:32]}")
    return ids


def is_job_id(value: object) -> bool:
    """True when ``value`` is a canonical lower-case UUID string."""
    return isinstance(value, str) and UUID_RE.match(value) is not None
