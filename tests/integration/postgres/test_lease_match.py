"""A lease is matched by (id, token) alone, read through the primary key (ADR 0131).

A token is set only while its job is active (migration 0007's check), so the settling
statements need no status test; with one, the planner may read every active lease
through jobs_leases for each ack, which makes an ack cost as much as the jobs running
everywhere.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from pqueue.brokers.postgres import PostgresBroker, migrate
from pqueue.brokers.postgres.sql import queries_for
from pqueue.spec import build_spec

ACTIVE = 1500


def _generic_plan(pg_url: str, statement: str, params: dict[str, Any]) -> str:
    """EXPLAIN of ``statement`` as a prepared statement runs it after its first few
    executions: with a generic plan, blind to the parameters' values."""
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        rows = conn.execute(f"EXPLAIN {statement}".encode(), params).fetchall()
    return "\n".join(row[0] for row in rows)


def _insert_job(conn: psycopg.Connection[Any], schema: str, status: str, token: int | None) -> None:
    """Write one job row by hand, bypassing the broker (as a bug or an old version could)."""
    conn.execute(
        sql.SQL(
            "INSERT INTO {}.jobs (id, run_at, created_at, max_retries, max_recoveries, status, queue, "
            "type, payload, lease_token) VALUES (gen_random_uuid(), now(), now(), 3, 5, %s, 'q', 't', "
            "'{{}}', %s)"
        ).format(sql.Identifier(schema)),
        [status, token],
    )


async def test_settling_a_lease_reads_its_job_by_primary_key_however_many_are_active(
    pg_url: str, migrated_dsn: str, schema_name: str
) -> None:
    async with PostgresBroker.from_url(migrated_dsn) as broker:
        await broker.enqueue([build_spec("t", {"i": i}) for i in range(ACTIVE)])
        with psycopg.connect(pg_url, autocommit=True) as conn:  # statistics see no active job
            conn.execute(sql.SQL("ANALYZE {}.jobs").format(sql.Identifier(schema_name)))
        leases = await broker.claim(["default"], worker_id="w", limit=ACTIVE, lease_for=60)
    assert len(leases) == ACTIVE
    ids, tokens = [leases[0].job.id], [leases[0].token]
    common = {"now": None, "kind": None, "message": None, "traceback": None, "keep": 10}
    statements: dict[str, dict[str, Any]] = {
        "ack": {"id": ids, "token": tokens},
        "ack_results": {"id": ids, "token": tokens, "result": ["1"]},
        "release": {"id": ids, "token": tokens, "delay": 0.0},
        "extend": {"id": ids, "token": tokens, "lease_for": 60.0},
        "fail": {"id": ids[0], "token": tokens[0], "retry_in": 1.0},
    }
    queries = queries_for(schema_name)
    for name, params in statements.items():
        plan = _generic_plan(pg_url, queries[name], {**common, **params})
        assert "jobs_pkey" in plan, f"{name}:\n{plan}"
        assert "jobs_leases" not in plan, f"{name}:\n{plan}"


def test_a_token_on_a_job_that_is_not_active_is_refused(
    pg_url: str, migrated_dsn: str, schema_name: str
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        _insert_job(conn, schema_name, "pending", None)
        with pytest.raises(psycopg.errors.CheckViolation, match="jobs_token_only_active"):
            conn.execute(sql.SQL("UPDATE {}.jobs SET lease_token = 7").format(sql.Identifier(schema_name)))


def test_migration_0007_clears_a_stray_token_then_holds(
    pg_url: str, migrated_dsn: str, schema_name: str
) -> None:
    schema = sql.Identifier(schema_name)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as a schema at version 6 could be
        conn.execute(sql.SQL("ALTER TABLE {}.jobs DROP CONSTRAINT jobs_token_only_active").format(schema))
        conn.execute(sql.SQL("DELETE FROM {}.migrations WHERE version = 7").format(schema))
        _insert_job(conn, schema_name, "completed", 7)
    assert migrate(migrated_dsn) == [7]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tokens = conn.execute(sql.SQL("SELECT lease_token FROM {}.jobs").format(schema)).fetchall()
        assert tokens == [(None,)]
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(sql.SQL("UPDATE {}.jobs SET lease_token = 8").format(schema))
