"""libpq's ``options`` in a DSN reach every session of the broker (e.g. ``-c jit=off``, the
opt-out docs/postgres.md gives operators; ADR 0156)."""

from __future__ import annotations

from pqueue.brokers.postgres import PostgresBroker


async def test_session_settings_in_the_dsn_reach_the_brokers_sessions(migrated_dsn: str) -> None:
    for value in ("off", "on"):
        # as typed in a URL: the space of "-c jit=off" percent-encoded
        broker = PostgresBroker.from_url(f"{migrated_dsn}&options=-c%20jit%3D{value}")
        async with broker:
            assert await broker.db.value("SHOW jit", {}, prepare=False) == value
