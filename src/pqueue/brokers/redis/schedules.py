"""Schedule registrations of the Redis backend: one hash, ``<prefix>:schedules`` (keys.py),
changed only by the single-key scripts ``schedules_register`` and ``schedules_mark``."""

from __future__ import annotations

from collections.abc import Sequence

from pqueue.broker_schedules import (
    RECORD_RETENTION,
    ScheduleInfo,
    check_registration,
    decode_schedule,
    encode_schedule,
)
from pqueue.brokers.redis import calls
from pqueue.brokers.redis.codec import to_ms
from pqueue.brokers.redis.core import RedisCore, translated
from pqueue.brokers.redis.keys import schedules_key


class RedisSchedules(RedisCore):
    """The :class:`~pqueue.broker_schedules.ScheduleStore` methods of ``RedisBroker``."""

    @translated
    async def register_schedules(self, schedules: Sequence[ScheduleInfo], *, ttl: float) -> list[float]:
        check_registration(schedules, ttl)
        if not schedules:
            return []
        entries = [(s.name, encode_schedule(s)) for s in schedules]
        call = calls.schedules_register(
            schedules_key(self.prefix), self.now_arg(), to_ms(ttl), to_ms(RECORD_RETENTION), entries
        )
        return [int(ms) / 1000 for ms in await self.run(call)]

    @translated
    async def mark_schedule_run(self, name: str, tick: float) -> None:
        await self.run(calls.schedules_mark(schedules_key(self.prefix), name, to_ms(tick)))

    @translated
    async def list_schedules(self) -> list[ScheduleInfo]:
        raw: dict[str, str] = await self.client.hgetall(schedules_key(self.prefix))  # type: ignore[assignment]
        now = await self.now_ms()
        live: list[ScheduleInfo] = []
        for value in raw.values():
            parts = value.split("|", 3)
            if len(parts) != 4 or not parts[1].isdigit() or int(parts[1]) <= now:
                continue
            last = int(parts[2]) / 1000 if parts[2].isdigit() else None
            info = decode_schedule(parts[3], last)
            if info is not None:
                live.append(info)
        return sorted(live, key=lambda s: s.name)
