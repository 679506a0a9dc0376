"""Which statements wait for their WAL flush: a claim does not (ADR 0052), and only for its
own transaction; every other statement commits as the server is configured."""

from __future__ import annotations

import psycopg

from pqueue.brokers.postgres import PostgresBroker
from pqueue.brokers.postgres.sql import queries_for
from pqueue.spec import build_spec
from tests.integration.postgres.conftest import OpenPg


async def _setting(conn: psycopg.AsyncConnection[tuple[str]]) -> str:
    row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
    assert row is not None
    return row[0]


async def test_a_claim_commits_without_a_flush_wait_and_leaves_the_session_as_it_was(
    open_pg: OpenPg, pg_url: str, schema_name: str
) -> None:
    broker: PostgresBroker = await open_pg()
    [result] = await broker.enqueue([build_spec("t", 1)])
    queries = queries_for(schema_name)
    params = {"queues": ["default"], "limit": 1, "lease_for": 30.0, "worker_id": "w", "unpark": True}
    params["now"] = None
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:  # as pooled
        assert await _setting(conn) == "on"
        async with conn.transaction():
            rows = await (await conn.execute(queries["claim"], params)).fetchall()
            assert await _setting(conn) == "off"  # what this transaction's commit will use
        assert await _setting(conn) == "on"  # local to the claim's transaction
    assert [str(row[4]) for row in rows] == [result.id]
    claimed = await broker.get_job(result.id)
    assert (claimed.status.value, claimed.attempt) == ("active", 1)


def test_no_other_statement_relaxes_durability(schema_name: str) -> None:
    queries = queries_for(schema_name)
    relaxed = sorted(name for name in queries.names() if "synchronous_commit" in queries[name])
    assert relaxed == ["claim"]  # enqueue, ack, fail, release... stay durable
