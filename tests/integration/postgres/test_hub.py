"""The Postgres broker's notification hub (ADR 0134): one LISTEN connection carries
wake-ups, hand-offs, result waiters and cancels, and comes back after it is killed."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest

from pqueue.brokers.postgres import PostgresBroker
from tests.hub_scenario import (
    HEALTH_LOG,
    every_channel_delivers,
    heard_again,
    listen_on_every_channel,
    outage_lines,
)
from tests.integration.postgres.conftest import OpenPg
from tests.integration.postgres.pg_activity import listeners


def _channels_of(broker: PostgresBroker) -> int:
    return sum(broker._hub.hears(c) for c in list(broker._hub._channels))


async def _listening_again(pg_url: str, schema: str, old: list[int]) -> list[int]:
    for _ in range(200):
        now = listeners(pg_url, schema)
        if now and now != old:
            return now
        await asyncio.sleep(0.05)
    raise AssertionError("the hub did not reconnect")


async def test_one_listen_connection_serves_every_part_and_survives_a_kill(
    open_pg: OpenPg, pg_url: str, schema_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    broker = await open_pg()
    producer = await open_pg()
    assert isinstance(broker, PostgresBroker)
    await listen_on_every_channel(broker)
    [pid] = listeners(pg_url, schema_name)  # one LISTEN connection for all four channels
    assert _channels_of(broker) == 4
    await every_channel_delivers(broker, producer, "before")

    caplog.set_level(logging.INFO, logger=HEALTH_LOG)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    [again] = await _listening_again(pg_url, schema_name, [pid])
    assert again != pid and broker._hub.connections == 2
    await heard_again(broker)
    await every_channel_delivers(broker, producer, "after")
    assert listeners(pg_url, schema_name) == [again]
    lost, back = outage_lines(caplog)
    assert len(lost) == 1 and len(back) == 1, (lost, back)
