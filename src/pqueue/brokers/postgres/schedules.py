"""Schedule registrations of the Postgres backend: the ``schedules`` table (migration 0003)."""

from __future__ import annotations

from collections.abc import Sequence

from pqueue.broker_schedules import (
    RECORD_RETENTION,
    ScheduleInfo,
    check_registration,
    decode_schedule,
    encode_schedule,
)
from pqueue.brokers.postgres.core import BrokerCore


class PostgresSchedules(BrokerCore):
    """The :class:`~pqueue.broker_schedules.ScheduleStore` methods of ``PostgresBroker``."""

    async def register_schedules(self, schedules: Sequence[ScheduleInfo], *, ttl: float) -> list[float]:
        check_registration(schedules, ttl)
        if not schedules:
            return []
        params = self._params(
            names=[s.name for s in schedules],
            definitions=[encode_schedule(s) for s in schedules],
            ttl=float(ttl),
            retention=RECORD_RETENTION,
        )
        rows = await self.db.rows(self._q["register_schedules"], params, prepare=False)
        return [float(cursor) for (cursor,) in rows]

    async def mark_schedule_run(self, name: str, tick: float) -> None:
        await self.db.rows(self._q["mark_schedule_run"], {"name": name, "tick": float(tick)}, prepare=False)

    async def list_schedules(self) -> list[ScheduleInfo]:
        rows = await self.db.rows(self._q["list_schedules"], self._params(), prepare=False)
        found = (decode_schedule(text, None if last is None else float(last)) for text, last in rows)
        return [info for info in found if info is not None]
