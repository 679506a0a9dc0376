"""Postgres DSN parsing and the named-query file; no server needed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pqueue
from pqueue.brokers.postgres import PostgresBroker
from pqueue.brokers.postgres.config import PostgresConfig
from pqueue.brokers.postgres.sql import latest_version, migrations, parse_named, queries_for, render
from pqueue.errors import ConfigError

SOURCE = Path(pqueue.__file__).parent / "brokers" / "postgres"


def test_pqueue_options_are_taken_out_of_the_dsn() -> None:
    config = PostgresConfig.from_url(
        "postgresql://u:secret@db:5433/app?sslmode=require&schema=jobs&retention=60&pool_max=4"
    )
    assert (config.schema, config.retention, config.pool_max) == ("jobs", 60.0, 4)
    assert config.conninfo == "postgresql://u:secret@db:5433/app?sslmode=require"
    assert "secret" not in config.redacted


def test_defaults_and_keyword_options_override_the_dsn() -> None:
    config = PostgresConfig.from_url("postgres://db/app?schema=a", {"schema": "b", "retention": 5})
    assert (config.schema, config.retention, config.pool_min, config.pool_max) == ("b", 5.0, 1, 10)
    assert PostgresConfig.from_url("postgresql://db/app").schema == "pqueue"


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgresql://db/app?schema=Bad-Name", "schema name"),
        ("postgresql://db/app?schema=1abc", "schema name"),
        ("postgresql://db/app?retention=-1", "retention"),
        ("postgresql://db/app?retention=soon", "retention"),
        ("postgresql://db/app?pool_min=5&pool_max=2", "pool_min"),
        ("mysql://db/app", "not a Postgres DSN"),
    ],
)
def test_bad_settings_are_refused_by_name(dsn: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PostgresConfig.from_url(dsn)


def test_unknown_keyword_options_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown (DSN parameter|keyword option)"):
        PostgresBroker.from_url("postgresql://db/app", prefix="x")


def test_connect_picks_the_postgres_broker_for_both_schemes() -> None:
    for dsn in ("postgresql://db/app?schema=s1", "postgres://db/app"):
        broker = pqueue.connect(dsn)
        assert isinstance(broker, PostgresBroker)
        assert isinstance(broker, pqueue.FullBroker)
    assert set(PostgresBroker.capabilities) == set(pqueue.Capability)


def test_every_query_used_in_code_exists_and_every_query_is_used() -> None:
    code = "\n".join(p.read_text() for p in SOURCE.glob("*.py"))
    used = set(re.findall(r'_?q\["([a-z_]+)"\]', code)) | set(
        re.findall(r'queries_for\([^)]*\)\["([a-z_]+)"\]', code)
    )
    defined = queries_for("pqueue").names()
    assert used - defined == set()
    assert defined - used == set()


def test_rendering_quotes_the_schema_and_fills_every_placeholder() -> None:
    text = queries_for("my_jobs")["claim"]
    assert '"my_jobs".jobs' in text and "{" not in text.replace("'{", "")
    assert text.startswith("-- pqueue:claim\n")
    for migration in migrations():
        assert "{schema}" not in render(migration.text, "my_jobs")
    with pytest.raises(ConfigError):
        render("SELECT 1", 'x"; DROP TABLE jobs; --')


def test_named_blocks_parse_and_refuse_duplicates() -> None:
    blocks = parse_named("-- name: a\n-- what a does\nSELECT 1;\n\n-- name: b\nSELECT 2;\n")
    assert blocks == {"a": "-- pqueue:a\nSELECT 1", "b": "-- pqueue:b\nSELECT 2"}
    with pytest.raises(ValueError, match="twice"):
        parse_named("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_migrations_are_numbered_without_gaps() -> None:
    assert [m.version for m in migrations()] == list(range(1, latest_version() + 1))


def test_prepared_statements_can_be_turned_off_for_old_poolers() -> None:
    from pqueue.brokers.postgres.connection import connection_kwargs

    assert PostgresConfig.from_url("postgresql://db/app").prepare is True
    off = PostgresConfig.from_url("postgresql://db/app?prepare=false")
    assert off.prepare is False and connection_kwargs(off)["prepare_threshold"] is None
    with pytest.raises(ConfigError, match="prepare"):
        PostgresConfig.from_url("postgresql://db/app?prepare=maybe")


def test_every_libpq_parameter_passes_through_and_nothing_else() -> None:
    config = PostgresConfig.from_url(
        "postgresql://db/app?application_name=web&connect_timeout=3&ssl=true&target_session_attrs=any"
    )
    assert config.conninfo.endswith(
        "?application_name=web&connect_timeout=3&ssl=true&target_session_attrs=any"
    )
    with pytest.raises(ConfigError, match=r"unknown DSN parameter 'bogus'; known: .*sslmode"):
        PostgresConfig.from_url("postgresql://db/app?bogus=1")
    with pytest.raises(ConfigError, match=r"unknown keyword option 'sslmode'.*go in the DSN"):
        PostgresConfig.from_url("postgresql://db/app", {"sslmode": "require"})
