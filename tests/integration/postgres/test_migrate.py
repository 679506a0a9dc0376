"""Migrations: from empty, idempotent re-runs, concurrent migrators, and refusals."""

from __future__ import annotations

import threading
from collections import Counter

import psycopg
import pytest
from psycopg import sql

from pqueue.brokers.postgres import PostgresBroker, current_version, migrate, migrate_async
from pqueue.brokers.postgres.sql import latest_version, migrations, render
from pqueue.cli import main
from pqueue.errors import SchemaError
from pqueue.job import Job
from pqueue.router import Router
from pqueue.spec import build_spec
from pqueue.task import Task
from pqueue.testing.burst import run_broker_until_empty

TABLES = {
    "jobs",
    "queues",
    "unique_keys",
    "idempotency_keys",
    "workers",
    "parked",
    "paused_queues",
    "schedules",
    "job_deps",
    "limit_groups",
    "finished_counts",
    "finished_deltas",
    "migrations",
}


def _tables(pg_url: str, schema: str) -> set[str]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema]).fetchall()
    return {name for (name,) in rows}


def _set_version(pg_url: str, schema: str, version: int) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {}.migrations (version, name) VALUES (%s, 'from_the_future')").format(
                sql.Identifier(schema)
            ),
            [version],
        )


def test_migrate_from_empty_then_rerun_is_a_no_op(pg_url: str, dsn: str, schema_name: str) -> None:
    assert current_version(dsn) == 0
    assert migrate(dsn) == list(range(1, latest_version() + 1))
    assert _tables(pg_url, schema_name) == TABLES
    assert current_version(dsn) == latest_version()
    assert migrate(dsn) == []
    assert migrate(dsn) == []
    assert _tables(pg_url, schema_name) == TABLES


async def test_migrate_async_and_schema_argument(pg_url: str, schema_name: str) -> None:
    assert await migrate_async(pg_url, schema=schema_name) == list(range(1, latest_version() + 1))
    assert current_version(pg_url, schema=schema_name) == latest_version()


def test_concurrent_migrators_apply_each_migration_once(dsn: str) -> None:
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(migrate(dsn))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == [[], [], [], list(range(1, latest_version() + 1))]


async def test_broker_refuses_a_schema_that_was_never_migrated(dsn: str) -> None:
    broker = PostgresBroker.from_url(dsn)
    with pytest.raises(SchemaError) as info:
        await broker.open()
    assert "pqueue migrate --dsn" in str(info.value)
    assert "--schema" not in str(info.value) or "pqi" in str(info.value)


async def test_broker_refuses_a_newer_schema(pg_url: str, migrated_dsn: str, schema_name: str) -> None:
    _set_version(pg_url, schema_name, latest_version() + 1)
    broker = PostgresBroker.from_url(migrated_dsn)
    with pytest.raises(SchemaError, match="newer than this pqueue knows"):
        await broker.open()
    await broker.close()


def test_migrate_refuses_a_newer_schema_and_changes_nothing(
    pg_url: str, migrated_dsn: str, schema_name: str
) -> None:
    _set_version(pg_url, schema_name, latest_version() + 1)
    with pytest.raises(SchemaError, match="upgrade pqueue"):
        migrate(migrated_dsn)
    assert current_version(migrated_dsn) == latest_version() + 1


def test_cli_migrate_and_check(dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--dsn", dsn, "--check"]) == 1
    assert main(["migrate", "--dsn", dsn]) == 0
    assert "applied migration(s) 0001" in capsys.readouterr().out
    assert main(["migrate", "--dsn", dsn]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert main(["migrate", "--dsn", dsn, "--check"]) == 0


def test_cli_migrate_reads_pqueue_dsn_and_schema_from_the_environment(
    pg_url: str, schema_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PQUEUE_DSN", pg_url)
    monkeypatch.setenv("PQUEUE_SCHEMA", schema_name)
    assert main(["migrate"]) == 0
    assert current_version(pg_url, schema=schema_name) == latest_version()


def test_cli_migrate_errors_are_clear(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PQUEUE_DSN", raising=False)
    assert main(["migrate"]) == 1
    assert "--dsn" in capsys.readouterr().err
    assert main(["migrate", "--dsn", "redis://127.0.0.1:6379/0"]) == 1
    assert "only Postgres" in capsys.readouterr().err


async def test_a_schema_at_version_1_is_refused_until_migrated_and_keeps_its_jobs(
    pg_url: str, migrated_dsn: str, schema_name: str
) -> None:
    async with PostgresBroker.from_url(migrated_dsn) as broker:
        [result] = await broker.enqueue([build_spec("t")])
    with psycopg.connect(pg_url, autocommit=True) as conn:  # back to 0001, as released
        schema = sql.Identifier(schema_name)
        conn.execute(sql.SQL("DROP TABLE {}.parked").format(schema))
        conn.execute(sql.SQL("DROP TABLE {}.paused_queues").format(schema))  # 0004
        conn.execute(sql.SQL("DROP FUNCTION {}.unpark, {}.hand_off").format(schema, schema))
        conn.execute(sql.SQL("DROP TABLE {}.schedules").format(schema))  # 0003
        conn.execute(sql.SQL("DROP TABLE {}.job_deps").format(schema))  # and 0005
        conn.execute(sql.SQL("DROP FUNCTION {}.job_finished").format(schema))
        conn.execute(
            sql.SQL(
                "ALTER TABLE {}.jobs DROP COLUMN depends_on, DROP COLUMN parent_results, "
                "DROP COLUMN on_parent_failure, DROP COLUMN parents_left, DROP COLUMN has_children, "
                "DROP COLUMN watched"
            ).format(schema)
        )
        conn.execute(sql.SQL("DELETE FROM {}.migrations WHERE version > 1").format(schema))
    broker = PostgresBroker.from_url(migrated_dsn)
    with pytest.raises(SchemaError, match="pqueue migrate"):
        await broker.open()
    assert migrate(migrated_dsn) == list(range(2, latest_version() + 1))
    async with PostgresBroker.from_url(migrated_dsn) as broker:
        leases = await broker.claim(["default"], worker_id="w", limit=5, lease_for=30)
        assert [lease.job.id for lease in leases] == [result.id]


async def test_jobs_stored_before_unset_options_keep_their_stored_max_retries(
    pg_url: str, migrated_dsn: str, schema_name: str
) -> None:
    """Back to the version before ``unset_options`` (no ``unset`` column, 0010's hand_off),
    a job stored as that pqueue stored it; after ``migrate`` it keeps its stored
    max_retries (it has no record of what was left unset), while a new job left unset
    takes its handler's (ADR 0157)."""
    [mine] = [m.version for m in migrations() if m.name == "unset_options"]
    schema = sql.Identifier(schema_name)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER TABLE {}.jobs DROP COLUMN unset").format(schema))
        conn.execute(render(migrations()[9].text, schema_name))  # 0010_job_priority: its hand_off
        conn.execute(sql.SQL("DELETE FROM {}.migrations WHERE version >= %s").format(schema), [mine])
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.jobs (id, queue, type, status, payload, run_at, created_at, "
                "max_retries, max_recoveries) VALUES (%s, 'default', 'charge:card', 'pending', "
                "'{{}}', now(), now(), 3, 5)"
            ).format(schema),
            [OLD_JOB],
        )
    assert migrate(migrated_dsn) == list(range(mine, latest_version() + 1))
    router = Router()

    @router.task("charge:card", max_retries=1, retry=lambda attempt, error, job: 0.0)
    async def charge(job: Job) -> None:
        raise RuntimeError("declined")

    async with PostgresBroker.from_url(migrated_dsn) as broker:
        old = await broker.get_job(OLD_JOB)
        assert (old.max_retries, old.unset) == (3, frozenset())
        [new] = await broker.enqueue([Task("charge:card").to_spec()])
        ran = await run_broker_until_empty(broker, router)
    runs = Counter(report.job.id for report in ran)
    assert runs == {OLD_JOB: 4, new.id: 2}


OLD_JOB = "01a21846-6f63-71c7-8a07-71f988ac9100"
