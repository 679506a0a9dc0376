"""The SQLAlchemy mirror (schema.py) and the migrations build the same catalog."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy
from psycopg import sql

from pqueue.brokers.postgres import migrate
from pqueue.brokers.postgres.schema import metadata, tables
from tests.integration.postgres.test_migrate import TABLES

CATALOG = {
    "columns": """
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid)
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = %(schema)s AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
    """,
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = %(schema)s::regnamespace
    """,
    "indexes": """
        SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %(schema)s
    """,
    "storage": """
        SELECT relname, relkind, reloptions FROM pg_class
        WHERE relnamespace = %(schema)s::regnamespace AND relkind IN ('r', 'S')
    """,
    "sequences": """
        SELECT sequencename, data_type::text, cache_size FROM pg_sequences WHERE schemaname = %(schema)s
    """,
}


def _catalog(pg_url: str, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Everything that defines the schema, with its name replaced so two schemas compare."""
    out = {}
    with psycopg.connect(pg_url) as conn:
        for part, query in CATALOG.items():
            rows = conn.execute(query, {"schema": schema}).fetchall()  # type: ignore[call-overload]
            out[part] = sorted(
                tuple(str(v).replace(schema, "S") if isinstance(v, str | list) else v for v in row)
                for row in rows
            )
    return out


@pytest.fixture
def mirror_schema(pg_url: str) -> Iterator[str]:
    name = f"pqm{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def test_sqlalchemy_metadata_builds_the_migrated_catalog(
    pg_url: str, schema_name: str, mirror_schema: str
) -> None:
    migrate(pg_url, schema=schema_name)
    engine = sqlalchemy.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.schema.CreateSchema(mirror_schema))
            metadata(mirror_schema).create_all(conn)
    finally:
        engine.dispose()
    migrated, mirrored = _catalog(pg_url, schema_name), _catalog(pg_url, mirror_schema)
    assert migrated["columns"], "the migrated schema has no columns"
    for part in CATALOG:
        assert mirrored[part] == migrated[part], part


def test_tables_cover_every_migrated_table() -> None:
    assert set(tables()) == TABLES  # the tables the migrations make (test_migrate)
