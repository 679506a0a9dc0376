"""Schedule registrations of the memory backend, kept beside (not inside) each named store."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pqueue.broker_schedules import RECORD_RETENTION, ScheduleInfo, check_registration
from pqueue.brokers.memory.store import MemoryStore


@dataclass(slots=True)
class _Record:
    info: ScheduleInfo
    since: float
    expires_at: float
    last_run_at: float | None = None


class ScheduleBook:
    """Name -> record, under its own lock; one book per :class:`MemoryStore`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: dict[str, _Record] = {}


_books: weakref.WeakKeyDictionary[MemoryStore, ScheduleBook] = weakref.WeakKeyDictionary()
_books_lock = threading.Lock()


def book_of(store: MemoryStore) -> ScheduleBook:
    with _books_lock:
        book = _books.get(store)
        if book is None:
            book = _books[store] = ScheduleBook()
        return book


class MemorySchedules:
    """The :class:`~pqueue.broker_schedules.ScheduleStore` methods of ``MemoryBroker``."""

    _store: MemoryStore

    async def register_schedules(self, schedules: Sequence[ScheduleInfo], *, ttl: float) -> list[float]:
        check_registration(schedules, ttl)
        now = self._store.clock.now()
        book = book_of(self._store)
        cursors: list[float] = []
        with book.lock:
            book.records = {
                name: rec for name, rec in book.records.items() if rec.expires_at > now - RECORD_RETENTION
            }
            for info in schedules:
                rec = book.records.get(info.name)
                if rec is None:
                    rec = book.records[info.name] = _Record(info, since=now, expires_at=now + ttl)
                rec.info, rec.expires_at = info, now + ttl
                cursors.append(rec.last_run_at if rec.last_run_at is not None else rec.since)
        return cursors

    async def mark_schedule_run(self, name: str, tick: float) -> None:
        book = book_of(self._store)
        with book.lock:
            rec = book.records.get(name)
            if rec is not None and (rec.last_run_at is None or tick > rec.last_run_at):
                rec.last_run_at = tick

    async def list_schedules(self) -> list[ScheduleInfo]:
        now = self._store.clock.now()
        book = book_of(self._store)
        with book.lock:
            live = [
                replace(r.info, last_run_at=r.last_run_at)
                for r in book.records.values()
                if r.expires_at > now
            ]
        return sorted(live, key=lambda s: s.name)
