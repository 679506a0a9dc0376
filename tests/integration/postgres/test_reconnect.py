"""Losing every connection (pg_terminate_backend, as in a server restart) costs a reconnect."""

from __future__ import annotations

import asyncio

import pytest

from pqueue.brokers.postgres import PostgresBroker
from pqueue.errors import BrokerUnavailable, BrokerUnreachable
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg
from tests.integration.postgres.pg_activity import listeners, sessions, terminate


async def _listening_again(pg_url: str, schema: str, old: list[int]) -> None:
    for _ in range(200):
        now = listeners(pg_url, schema)
        if now and now != old:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the listener did not reconnect")


async def test_every_call_works_after_the_servers_connections_are_killed(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    broker = await open_pg(pool_max=4)
    ids = [r.id for r in await broker.enqueue([build_spec("re:job", i) for i in range(6)])]
    await asyncio.gather(*(broker.get_job(i) for i in ids))  # open several pool connections
    assert not await broker.wait_for_jobs(["idle"], timeout=0.1)  # start the listener
    before = listeners(pg_url, schema_name)
    assert terminate(pg_url, schema_name) >= 2

    leases = await broker.claim(["default"], worker_id="w", limit=3, lease_for=30)
    assert [lease.job.id for lease in leases] == ids[:3]
    assert await broker.ack(leases) == [True] * 3
    [again] = await broker.enqueue([build_spec("re:job", 99)])
    assert again.created
    assert sum(per["completed"] for per in (await broker.counts()).values()) == 3

    await _listening_again(pg_url, schema_name, before)
    waiter = asyncio.create_task(broker.wait_for_jobs(["later"], timeout=60))
    await asyncio.sleep(0.2)
    assert not waiter.done()
    producer = await open_pg()
    await producer.enqueue([build_spec("re:job", queue="later")])
    assert await asyncio.wait_for(waiter, 10) is True


async def test_repeated_kills_while_working_lose_no_job(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    broker = await open_pg(pool_max=2)
    ids = {r.id for r in await broker.enqueue([build_spec("re:job", i) for i in range(60)])}
    done: set[str] = set()
    for round_no in range(6):
        leases = await broker.claim(["default"], worker_id="w", limit=10, lease_for=30)
        terminate(pg_url, schema_name) if round_no % 2 == 0 else None
        assert await broker.ack(leases) == [True] * len(leases)
        done.update(lease.job.id for lease in leases)
    assert done == ids
    assert sessions(pg_url, schema_name)  # the pool is back


async def test_an_unreachable_server_is_one_line_naming_the_cause_and_address() -> None:
    broker = PostgresBroker.from_url("postgresql://postgres:s3cret@127.0.0.1:9/nowhere?pool_timeout=5")
    with pytest.raises(BrokerUnreachable) as caught:
        await broker.open()  # at once: the probe is refused, no wait for pool_timeout
    await broker.close()
    assert str(caught.value) == "Postgres at 127.0.0.1:9 is unreachable: connection refused"
    assert (caught.value.address, caught.value.cause) == ("127.0.0.1:9", "connection refused")
    assert isinstance(caught.value, BrokerUnavailable)


async def test_without_prepared_statements_nothing_is_prepared(open_pg: OpenPg) -> None:
    broker = await open_pg(prepare=False)
    for _ in range(8):  # more than psycopg's automatic threshold
        await broker.enqueue([build_spec("re:job")])
        assert await broker.ack(await broker.claim(["default"], worker_id="w", limit=1, lease_for=30)) == [
            True
        ]
    async with broker.db._pool.connection() as own:  # the view is per session: ask the broker's
        cur = await own.execute("SELECT count(*) FROM pg_prepared_statements")
        assert await cur.fetchone() == (0,)
